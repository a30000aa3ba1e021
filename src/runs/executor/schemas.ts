import { z } from 'zod';
import type { Json, PlanJson, StateV4 } from './types.js';

/**
 * Schemas of the JSON a run reads from outside Keel: what a terraform-compatible binary writes
 * (its state file, the plan `show -json` prints), and what a configuration brings
 * (`*.tfvars.json`). Objects are loose: fields
 * Keel does not read pass through untouched. None has a default or a transform, so a value that
 * fits is the value as it was read (its keys in their order).
 */

const json: z.ZodType<Json> = z.json();

const stateInstance = z.looseObject({
  index_key: z.union([z.number(), z.string()]).optional(),
  schema_version: z.number().int(),
  status: z.literal('tainted').optional(),
  attributes: z.record(z.string(), json),
  sensitive_attributes: z.array(json),
  dependencies: z.array(z.string()).optional(),
});

/** A terraform state file, format version 4, as {@link StateV4} describes it. */
export const stateV4Schema: z.ZodType<StateV4> = z.looseObject({
  version: z.literal(4),
  terraform_version: z.string(),
  serial: z.number().int().min(0),
  lineage: z.string(),
  outputs: z.record(
    z.string(),
    z.looseObject({ value: json, type: json, sensitive: z.boolean().optional() }),
  ),
  resources: z.array(
    z.looseObject({
      mode: z.enum(['managed', 'data']),
      type: z.string(),
      name: z.string(),
      provider: z.string(),
      instances: z.array(stateInstance),
    }),
  ),
  check_results: json.optional(),
});

/** A variable definitions file in JSON (`terraform.tfvars.json`): an object of values. */
export const tfvarsJsonSchema = z.record(z.string(), json);

const action = z.enum(['no-op', 'create', 'read', 'update', 'delete', 'forget']);

const resourceInstance = {
  address: z.string(),
  mode: z.enum(['managed', 'data']),
  type: z.string(),
  name: z.string(),
  index: z.union([z.number(), z.string()]).optional(),
  provider_name: z.string(),
};

const plannedResource = z.looseObject({
  ...resourceInstance,
  schema_version: z.number().int(),
  values: z.record(z.string(), json).optional(),
  sensitive_values: z.record(z.string(), json).optional(),
});

const resourceChange = z.looseObject({
  ...resourceInstance,
  change: z.looseObject({
    actions: z.array(action),
    before: json.optional(),
    after: json.optional(),
    after_unknown: json.optional(),
    before_sensitive: json.optional(),
    after_sensitive: json.optional(),
    importing: z.looseObject({ id: z.string().optional() }).optional(),
  }),
  action_reason: z.string().optional(),
});

const outputChange = z.looseObject({
  actions: z.array(action),
  before: json.optional(),
  after: json.optional(),
  after_unknown: json.optional(),
  before_sensitive: z.boolean(),
  after_sensitive: z.boolean(),
});

/** The machine-readable plan, as {@link PlanJson} describes it (`terraform show -json`). */
export const planJsonSchema: z.ZodType<PlanJson> = z.looseObject({
  format_version: z.string(),
  terraform_version: z.string(),
  variables: z.record(z.string(), z.looseObject({ value: json })).optional(),
  planned_values: z.looseObject({
    outputs: z
      .record(z.string(), z.looseObject({ sensitive: z.boolean(), value: json.optional() }))
      .optional(),
    root_module: z.looseObject({ resources: z.array(plannedResource).optional() }),
  }),
  resource_changes: z.array(resourceChange).optional(),
  output_changes: z.record(z.string(), outputChange).optional(),
  prior_state: z
    .looseObject({
      format_version: z.string(),
      terraform_version: z.string(),
      values: z.looseObject({
        outputs: z
          .record(z.string(), z.looseObject({ sensitive: z.boolean(), value: json }))
          .optional(),
        root_module: z.looseObject({ resources: z.array(plannedResource).optional() }),
      }),
    })
    .optional(),
  configuration: z
    .looseObject({
      root_module: z.looseObject({
        variables: z
          .record(
            z.string(),
            z.looseObject({ sensitive: z.boolean().optional(), default: json.optional() }),
          )
          .optional(),
      }),
    })
    .optional(),
  applyable: z.boolean(),
  complete: z.boolean(),
  errored: z.boolean(),
});
