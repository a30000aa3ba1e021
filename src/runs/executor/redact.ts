import type { Json, PlanJson } from './types.js';

/**
 * The redacted plan JSON readers get (`json-output-redacted`): the plan as `terraform show -json`
 * prints it, with every sensitive value replaced by `null` and its sensitivity marker
 * (`before_sensitive`, `after_sensitive`, `sensitive_values`, an output's `sensitive`) set, so a
 * renderer shows "(sensitive value)" where terraform would. A value is sensitive when the plan
 * marks it so, or when it carries the value of a sensitive workspace variable (equal to it, or
 * containing it when it is four characters or more — the builtin driver does not track
 * sensitivity through expressions).
 */

type Secrets = readonly string[];
type JsonObject = { [key: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether a value holds a sensitive variable's value anywhere. */
function carries(value: Json | undefined, secrets: Secrets): boolean {
  if (typeof value === 'string')
    return secrets.some((s) => value === s || (s.length >= 4 && value.includes(s)));
  if (Array.isArray(value)) return value.some((v) => carries(v, secrets));
  if (isObject(value)) return Object.values(value).some((v) => carries(v, secrets));
  return false;
}

/** The marker of a value with every part that carries a secret marked `true` as well. */
function mark(value: Json | undefined, marker: Json | undefined, secrets: Secrets): Json {
  if (marker === true) return true;
  if (Array.isArray(value)) {
    const marks = value.map((v, i) =>
      mark(v, Array.isArray(marker) ? marker[i] : undefined, secrets),
    );
    return marks.some((m) => m !== false) ? marks : (marker ?? false);
  }
  if (isObject(value)) {
    const marks = Object.entries(value)
      .map(([k, v]) => [k, mark(v, isObject(marker) ? marker[k] : undefined, secrets)] as const)
      .filter(([, m]) => m !== false);
    return marks.length > 0 ? Object.fromEntries(marks) : (marker ?? {});
  }
  return carries(value, secrets) ? true : (marker ?? false);
}

/** A value with the parts its marker flags replaced by `null`. */
function mask(value: Json, marker: Json | undefined): Json {
  if (marker === true) return null;
  if (Array.isArray(value) && Array.isArray(marker)) return value.map((v, i) => mask(v, marker[i]));
  if (isObject(value) && isObject(marker))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mask(v, marker[k])]));
  return value;
}

/** `{value, marker}` pairs (a change's before/after, a resource's values) redacted in place. */
function redactPair(
  holder: JsonObject,
  valueKey: string,
  markerKey: string,
  secrets: Secrets,
): void {
  const value = holder[valueKey];
  if (value === undefined) return;
  const marker = mark(value, holder[markerKey], secrets);
  holder[markerKey] = marker;
  holder[valueKey] = mask(value, marker);
}

/** A module's resources (`values` / `sensitive_values`) and its child modules. */
function redactModule(module: Json | undefined, secrets: Secrets): void {
  if (!isObject(module)) return;
  for (const resource of Array.isArray(module.resources) ? module.resources : [])
    if (isObject(resource)) redactPair(resource, 'values', 'sensitive_values', secrets);
  for (const child of Array.isArray(module.child_modules) ? module.child_modules : [])
    redactModule(child, secrets);
}

/** Outputs as planned values and prior state show them: `{sensitive, value}`. */
function redactOutputs(outputs: Json | undefined, secrets: Secrets): void {
  if (!isObject(outputs)) return;
  for (const output of Object.values(outputs)) {
    if (!isObject(output) || !('value' in output)) continue;
    if (output.sensitive === true || carries(output.value, secrets)) {
      output.sensitive = true;
      output.value = null;
    }
  }
}

/** Whatever is left (configuration constants, unknown sections): strings carrying a secret. */
function scrub(value: Json, secrets: Secrets): Json {
  if (typeof value === 'string') return carries(value, secrets) ? null : value;
  if (Array.isArray(value)) return value.map((v) => scrub(v, secrets));
  if (isObject(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrub(v, secrets)]));
  return value;
}

/** Every string inside a value. */
const strings = (value: Json | undefined): string[] =>
  typeof value === 'string'
    ? [value]
    : Array.isArray(value)
      ? value.flatMap(strings)
      : isObject(value)
        ? Object.values(value).flatMap(strings)
        : [];

/**
 * The values of variables the configuration declares sensitive (`configuration.root_module
 * .variables.<name>.sensitive`, as terraform writes it): secrets too, wherever they flow.
 */
function declaredSecrets(doc: JsonObject): string[] {
  const configuration = doc.configuration;
  const root = isObject(configuration) ? configuration.root_module : undefined;
  const declared = isObject(root) ? root.variables : undefined;
  const values = doc.variables;
  if (!isObject(declared) || !isObject(values)) return [];
  return Object.entries(declared).flatMap(([name, v]) => {
    const given = values[name];
    return isObject(v) && v.sensitive === true && isObject(given) ? strings(given.value) : [];
  });
}

/** The plan JSON with sensitive values redacted; `secrets` are the sensitive variables' values. */
export function redactPlan(plan: PlanJson, given: Secrets): Json {
  const doc = structuredClone(plan) as unknown as JsonObject;
  const secrets = [...given, ...declaredSecrets(doc)];
  const variables = doc.variables;
  if (isObject(variables))
    for (const variable of Object.values(variables))
      if (isObject(variable) && carries(variable.value, secrets)) variable.value = null;
  for (const section of ['resource_changes', 'resource_drift'])
    for (const rc of Array.isArray(doc[section]) ? doc[section] : []) {
      if (!isObject(rc) || !isObject(rc.change)) continue;
      redactPair(rc.change, 'before', 'before_sensitive', secrets);
      redactPair(rc.change, 'after', 'after_sensitive', secrets);
    }
  if (isObject(doc.output_changes))
    for (const change of Object.values(doc.output_changes)) {
      if (!isObject(change)) continue;
      redactPair(change, 'before', 'before_sensitive', secrets);
      redactPair(change, 'after', 'after_sensitive', secrets);
    }
  for (const values of [
    doc.planned_values,
    isObject(doc.prior_state) ? doc.prior_state.values : undefined,
  ]) {
    if (!isObject(values)) continue;
    redactOutputs(values.outputs, secrets);
    redactModule(values.root_module, secrets);
  }
  return scrub(doc, secrets);
}
