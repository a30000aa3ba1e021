import type { Json, StateV4 } from '../types.js';
import { ConfigurationError } from './config.js';
import { UNKNOWN, jsonEqual } from './expressions.js';
import type { Value } from './expressions.js';

/**
 * The resource types whose schema the builtin driver knows as terraform does: terraform's own
 * `terraform_data` (provider `terraform.io/builtin/terraform`; `input` and `triggers_replace`
 * arguments, `output` and `id` computed; a new `triggers_replace` replaces it). Its dynamic
 * attributes are written to state the way terraform writes them (`{"value", "type"}`) and read
 * back from either form, so real terraform and the builtin driver share a workspace's state.
 * Every other type is taken as written, with a computed `id`.
 */

export const TERRAFORM_DATA = 'terraform_data';
const ARGUMENTS = ['input', 'triggers_replace'];
const DYNAMIC = ['input', 'output', 'triggers_replace'];

/** The provider source of a resource type: built in for `terraform_data`, else the registry's. */
export const providerName = (type: string): string =>
  type === TERRAFORM_DATA
    ? 'terraform.io/builtin/terraform'
    : `registry.terraform.io/hashicorp/${type.split('_')[0] ?? type}`;

/**
 * The attributes a resource has once its arguments are known (`id` aside): for `terraform_data`
 * its arguments, refused when unknown to it, and `output` from `input`.
 */
export function shapeAttributes<V extends Value>(
  type: string,
  address: string,
  attrs: Record<string, V>,
): Record<string, V | null> {
  if (type !== TERRAFORM_DATA) return attrs;
  for (const key of Object.keys(attrs)) {
    if (!ARGUMENTS.includes(key))
      throw new ConfigurationError(
        'Unsupported argument',
        `An argument named "${key}" is not expected here: ${address} (terraform_data) takes input and triggers_replace.`,
      );
  }
  const input = attrs.input ?? null;
  return { input, output: input, triggers_replace: attrs.triggers_replace ?? null };
}

/**
 * The planned attributes of an object, as its provider plans them: `terraform_data` sets `output`
 * anew (unknown until apply) when it is created with an input, or when its input changes;
 * otherwise it keeps the output it has. `before` is null for a new object.
 */
export function plannedAttributes(
  type: string,
  before: Record<string, Json> | null,
  attrs: Record<string, Value>,
): Record<string, Value> {
  if (type !== TERRAFORM_DATA) return attrs;
  const input = attrs.input ?? null;
  if (before === null) return { ...attrs, output: input === null ? null : UNKNOWN };
  const same = input !== UNKNOWN && jsonEqual(before.input ?? null, input as Json);
  return { ...attrs, output: same ? (before.output ?? null) : UNKNOWN };
}

/** Whether going from `before` to `after` needs a new object rather than an update. */
export function forcesReplacement(
  type: string,
  before: Record<string, Json>,
  after: Record<string, Value>,
): boolean {
  if (type !== TERRAFORM_DATA) return false;
  const next = after.triggers_replace ?? null;
  return next === UNKNOWN || !jsonEqual(before.triggers_replace ?? null, next as Json);
}

/** The type constraint terraform records next to a value. */
export function typeOf(value: Json): Json {
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'bool';
  if (value === null) return 'dynamic';
  if (Array.isArray(value)) return ['tuple', value.map(typeOf)];
  return ['object', Object.fromEntries(Object.entries(value).map(([k, v]) => [k, typeOf(v)]))];
}

const isWrapped = (v: Json | undefined): v is { value: Json; type: Json } =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  Object.keys(v).length === 2 &&
  'value' in v &&
  'type' in v;

/** Rewrite the dynamic attributes of every `terraform_data` instance in a state. */
function mapDynamic(state: StateV4, f: (v: Json) => Json): StateV4 {
  return {
    ...state,
    resources: state.resources.map((r) =>
      r.type !== TERRAFORM_DATA
        ? r
        : {
            ...r,
            instances: r.instances.map((i) => ({
              ...i,
              attributes: Object.fromEntries(
                Object.entries(i.attributes).map(([k, v]) => [k, DYNAMIC.includes(k) ? f(v) : v]),
              ),
            })),
          },
    ),
  };
}

/** A state as the driver reasons about it: dynamic values plain, whoever wrote them. */
export const decodeState = (state: StateV4 | null): StateV4 | null =>
  state === null ? null : mapDynamic(state, (v) => (isWrapped(v) ? v.value : v));

/** A state as terraform writes it: dynamic values with their type. */
export const encodeState = (state: StateV4): StateV4 =>
  mapDynamic(state, (v) => (v === null ? null : { value: v, type: typeOf(v) }));
