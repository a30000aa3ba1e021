import type {
  Json,
  OutputChange,
  PlanJson,
  PlannedResource,
  ResourceChange,
  RunFlags,
  StateV4,
} from '../types.js';
import type { VariableBlock } from './config.js';
import { actionsOf, known, priorInstances } from './plan.js';
import type { PlanModel, PlannedInstance } from './plan.js';
import { ENGINE_VERSION, outputActions, planCounts, providerName } from './render.js';
import { UNKNOWN, hasUnknown, type Value } from './expressions.js';
import { TERRAFORM_DATA } from './schemas.js';

/** The builtin plan as `terraform show -json` prints it. */

/**
 * Terraform's `after_unknown` mask: `true` where a value is unknown; a list of masks for a list;
 * for an object, the masks of its attributes that are not plain `false`.
 */
function unknownMask(value: Value): Json {
  if (value === UNKNOWN) return true;
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.map(unknownMask);
  return withoutFalse(Object.entries(value).map(([k, v]) => [k, unknownMask(v)]));
}

/**
 * Terraform's `*_sensitive` mask where nothing is marked sensitive (the builtin engine refuses
 * marks on resources): the shape of lists and objects, `false` for everything else. An unknown
 * collection has no elements to show.
 */
function sensitiveMask(value: Value): Json {
  if (value === UNKNOWN || value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.map(sensitiveMask);
  return withoutFalse(Object.entries(value).map(([k, v]) => [k, sensitiveMask(v)]));
}

const withoutFalse = (entries: [string, Json][]): Json =>
  Object.fromEntries(entries.filter(([, m]) => m !== false));

/**
 * The masks of an object's attributes. `terraform_data`'s unknown `output` has the type of its
 * input, so its sensitive mask is an empty list or object when the input is a collection.
 */
function objectMasks(type: string, value: Value): { unknown: Json; sensitive: Json } {
  // A wholly known value has the empty mask, whatever its shape.
  const unknown = hasUnknown(value) ? unknownMask(value) : {};
  const sensitive = sensitiveMask(value);
  if (type === TERRAFORM_DATA && value && typeof value === 'object' && !Array.isArray(value)) {
    const input = value.input;
    if (value.output === UNKNOWN && input && typeof input === 'object')
      (sensitive as Record<string, Json>).output = Array.isArray(input) ? [] : {};
  }
  return { unknown, sensitive };
}

function resourceChange(i: PlannedInstance): ResourceChange {
  const after = i.after === null ? { value: null, unknown: false } : known(i.after);
  const masks = i.after === null ? null : objectMasks(i.type, i.after);
  return {
    address: i.address,
    mode: 'managed',
    type: i.type,
    name: i.name,
    ...(i.index === undefined ? {} : { index: i.index }),
    provider_name: providerName(i.type),
    change: {
      actions: actionsOf(i.action),
      before: i.before,
      after: after.value,
      after_unknown: masks === null ? {} : masks.unknown,
      before_sensitive: i.before === null ? false : sensitiveMask(i.before),
      after_sensitive: masks === null ? false : masks.sensitive,
      ...(i.importId === undefined ? {} : { importing: { id: i.importId } }),
    },
    ...(i.reason ? { action_reason: i.reason } : {}),
  };
}

function plannedResource(
  address: string,
  type: string,
  name: string,
  index: number | string | undefined,
  values: Json,
): PlannedResource {
  return {
    address,
    mode: 'managed',
    type,
    name,
    ...(index === undefined ? {} : { index }),
    provider_name: providerName(type),
    schema_version: 0,
    values: values && typeof values === 'object' && !Array.isArray(values) ? values : {},
    sensitive_values: {},
  };
}

/**
 * The plan as `terraform show -json` prints it. Of the `configuration` section only the root
 * module's variables and whether each is sensitive are written (what redaction needs).
 */
export function planJson(
  plan: PlanModel,
  variables: Record<string, Json>,
  state: StateV4 | null,
  flags: RunFlags,
  declared: readonly VariableBlock[] = [],
): PlanJson {
  const output_changes: Record<string, OutputChange> = {};
  const plannedOutputs: PlanJson['planned_values']['outputs'] = {};
  for (const o of plan.outputs) {
    const after = o.after === undefined ? { value: null, unknown: false } : known(o.after);
    output_changes[o.name] = {
      actions: outputActions(o),
      before: o.before ?? null,
      after: after.value,
      // A partly known output is masked as a resource is (terraform's unknownAsBool).
      after_unknown: o.after !== undefined && hasUnknown(o.after) ? unknownMask(o.after) : false,
      // Sensitive on either side, the change is masked on both, as terraform masks it.
      before_sensitive: o.sensitive || o.beforeSensitive,
      after_sensitive: o.sensitive || o.beforeSensitive,
    };
    if (o.after !== undefined)
      plannedOutputs[o.name] =
        after.unknown === false
          ? { sensitive: o.sensitive, value: after.value }
          : { sensitive: o.sensitive };
  }
  // Planned values hold what the state will contain: kept and changed instances, not deleted ones.
  const planned = new Map<string, PlannedResource>();
  for (const [address, p] of priorInstances(state)) {
    const index = p.instance.index_key;
    planned.set(
      address,
      plannedResource(address, p.resource.type, p.resource.name, index, p.instance.attributes),
    );
  }
  for (const i of plan.instances) {
    if (i.action === 'delete') planned.delete(i.address);
    else if (i.after !== null)
      planned.set(
        i.address,
        plannedResource(i.address, i.type, i.name, i.index, known(i.after).value),
      );
  }
  const counts = planCounts(plan);
  return {
    format_version: '1.2',
    terraform_version: ENGINE_VERSION,
    variables: Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, { value: v }])),
    planned_values: { outputs: plannedOutputs, root_module: { resources: [...planned.values()] } },
    resource_changes: plan.instances.map(resourceChange),
    output_changes,
    prior_state: {
      format_version: '1.0',
      terraform_version: state?.terraform_version ?? ENGINE_VERSION,
      values: {
        outputs: Object.fromEntries(
          Object.entries(state?.outputs ?? {}).map(([k, o]) => [
            k,
            { sensitive: o.sensitive === true, value: o.value },
          ]),
        ),
        root_module: {
          resources: [...priorInstances(state)].map(([address, p]) =>
            plannedResource(
              address,
              p.resource.type,
              p.resource.name,
              p.instance.index_key,
              p.instance.attributes,
            ),
          ),
        },
      },
    },
    configuration: {
      root_module: {
        variables: Object.fromEntries(
          declared.map((v) => [v.name, v.sensitive ? { sensitive: true } : {}]),
        ),
      },
    },
    applyable: counts.hasChanges || flags.allowEmptyApply,
    complete: true,
    errored: false,
  };
}
