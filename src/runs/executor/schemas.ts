import { z } from 'zod';
import type { Json, StateV4 } from './types.js';

/**
 * Schemas of the JSON a run reads from outside Keel: what a terraform-compatible binary writes
 * (its state file), and what a configuration brings (`*.tfvars.json`). Objects are loose: fields
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
