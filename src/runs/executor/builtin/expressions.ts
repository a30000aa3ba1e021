import type { Json } from '../types.js';
import { evaluateExpression, parseExpression, referencesOf } from './operations.js';

/** A value that is only known after apply (a computed attribute of a resource not yet created). */
export const UNKNOWN: unique symbol = Symbol('known after apply');
export type Value = Json | typeof UNKNOWN | Value[] | { [key: string]: Value };

/** The configuration asks for something the builtin driver does not evaluate, or for a bad name. */
export class EvaluationError extends Error {
  constructor(
    readonly summary: string,
    readonly detail: string,
  ) {
    super(`${summary}: ${detail}`);
    this.name = 'EvaluationError';
  }
}

/** A reference inside `${…}`: `var.x`, `local.x`, `count.index` or `type.name[0].attr`. */
export interface Reference {
  root: string;
  steps: (string | number)[];
}

/** The instance of a repeated resource an expression is evaluated for. */
export interface Repetition {
  countIndex?: number;
  each?: { key: string; value: Value };
}

/** What an expression may refer to; resource lookups return UNKNOWN for values not yet known. */
export interface Scope {
  variable(name: string): Value;
  local(name: string): Value;
  countIndex(): number | null;
  /** `each.key` and `each.value` inside a resource with `for_each`, else null. */
  each(): { key: string; value: Value } | null;
  resource(type: string, name: string): Value;
}

const TRAVERSAL = /^([A-Za-z_][\w-]*)((?:\.[A-Za-z_][\w-]*|\[\d+\]|\["[^"]*"\])*)$/;
const STEP = /\.([A-Za-z_][\w-]*)|\[(\d+)\]|\["([^"]*)"\]/g;

/** Parses the text inside `${…}` as a traversal, or throws for anything richer. */
export function parseReference(expression: string): Reference {
  const text = expression.trim();
  const match = TRAVERSAL.exec(text);
  if (!match) {
    throw new EvaluationError(
      'Unsupported by the builtin engine: expression',
      `the builtin engine does not model the reference "${text}" (it reads var.*, local.*, count.index, each.key, each.value and resource attributes); use the command engine (a terraform binary, chosen with the workspace's execution-engine) for this configuration`,
    );
  }
  const steps: (string | number)[] = [];
  for (const step of (match[2] ?? '').matchAll(STEP)) {
    if (step[1] !== undefined) steps.push(step[1]);
    else if (step[2] !== undefined) steps.push(Number(step[2]));
    else steps.push(step[3] ?? '');
  }
  return { root: match[1] ?? '', steps };
}

/** One piece of a template string: literal text or an interpolation. */
type Part = { text: string } | { expression: string };

/** Splits `"a-${var.x}-b"` into parts; `$${` and `%%{` are the escapes for `${` and `%{`. */
export function templateParts(template: string): Part[] {
  const parts: Part[] = [];
  let text = '';
  let i = 0;
  while (i < template.length) {
    if (template.startsWith('$${', i) || template.startsWith('%%{', i)) {
      text += `${template[i] ?? ''}{`;
      i += 3;
    } else if (template.startsWith('%{', i)) {
      throw new EvaluationError(
        'Unsupported by the builtin engine: template directive',
        `the builtin engine does not model the template directives (%{if}, %{for}) of "${template}"; use the command engine (a terraform binary, chosen with the workspace's execution-engine) for this configuration`,
      );
    } else if (template.startsWith('${', i)) {
      let depth = 1;
      let j = i + 2;
      while (j < template.length && depth > 0) {
        if (template[j] === '{') depth += 1;
        else if (template[j] === '}') depth -= 1;
        j += 1;
      }
      if (depth > 0)
        throw new EvaluationError('Invalid template', `unclosed "\${" in "${template}"`);
      if (text) parts.push({ text });
      text = '';
      parts.push({ expression: template.slice(i + 2, j - 1) });
      i = j;
    } else {
      text += template[i];
      i += 1;
    }
  }
  if (text || parts.length === 0) parts.push({ text });
  return parts;
}

/** Every reference an attribute value makes, for ordering resources and for `-target`. */
export function referencesIn(value: Json): Reference[] {
  if (typeof value === 'string') {
    return templateParts(value).flatMap((part) =>
      'expression' in part ? referencesOf(parseExpression(part.expression)) : [],
    );
  }
  if (Array.isArray(value)) return value.flatMap(referencesIn);
  if (value && typeof value === 'object') return Object.values(value).flatMap(referencesIn);
  return [];
}

function step(value: Value, key: string | number, path: string): Value {
  if (value === UNKNOWN) return UNKNOWN;
  if (Array.isArray(value) && typeof key === 'number') {
    if (key >= value.length)
      throw new EvaluationError('Invalid index', `${path}: index ${key} out of range`);
    return value[key] as Value;
  }
  if (value && typeof value === 'object' && !Array.isArray(value) && typeof key === 'string') {
    if (!(key in value))
      throw new EvaluationError('Unsupported attribute', `${path} has no attribute "${key}"`);
    return value[key] as Value;
  }
  throw new EvaluationError('Invalid reference', `cannot take ${JSON.stringify(key)} of ${path}`);
}

function resolve(reference: Reference, scope: Scope): Value {
  const { root, steps } = reference;
  const name = steps[0];
  const text = [root, ...steps].join('.');
  let value: Value;
  let rest: (string | number)[];
  if (root === 'var' || root === 'local') {
    if (typeof name !== 'string') throw new EvaluationError('Invalid reference', text);
    value = root === 'var' ? scope.variable(name) : scope.local(name);
    rest = steps.slice(1);
  } else if (root === 'count') {
    const index = scope.countIndex();
    if (name !== 'index' || index === null) {
      throw new EvaluationError('Reference to "count" in non-counted context', text);
    }
    return index;
  } else if (root === 'each') {
    const each = scope.each();
    if ((name !== 'key' && name !== 'value') || each === null) {
      throw new EvaluationError('Reference to "each" in context without for_each', text);
    }
    value = each[name];
    rest = steps.slice(1);
  } else {
    if (typeof name !== 'string') throw new EvaluationError('Invalid reference', text);
    value = scope.resource(root, name);
    rest = steps.slice(1);
  }
  for (const key of rest) value = step(value, key, text);
  return value;
}

/**
 * A number as terraform writes it into a string: its shortest decimal digits and never an
 * exponent (`0.0000001`, where JavaScript writes `1e-7`).
 */
export function numberText(n: number): string {
  // Terraform's numbers keep the sign of zero: "${-0}" is "-0".
  if (Object.is(n, -0)) return '-0';
  const text = String(n);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (m === null) return text;
  const [, sign = '', lead = '', rest = '', exponent = '0'] = m;
  const digits = lead + rest;
  // Where the decimal point falls among the digits.
  const point = 1 + Number(exponent);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

function stringify(value: Value, template: string): string | typeof UNKNOWN {
  if (value === UNKNOWN) return UNKNOWN;
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return numberText(value);
  if (typeof value === 'boolean') return String(value);
  throw new EvaluationError(
    'Invalid template interpolation value',
    `"${template}" interpolates a ${value === null ? 'null' : 'collection'} value`,
  );
}

/**
 * Refuses negative zero as a value: terraform keeps the sign of zero and writes `-0` into the
 * state, where JSON as Keel writes it has `0`. In a template it is text (`"${-0}"` is `"-0"`).
 */
function signedZero<T extends Value>(value: T, text: string): T {
  if (Object.is(value, -0))
    throw new EvaluationError(
      'Unsupported by the builtin engine: negative zero',
      `the builtin engine does not model negative zero as a value in "${text}" (terraform keeps its sign in the state); use the command engine (a terraform binary, chosen with the workspace's execution-engine) for this configuration`,
    );
  return value;
}

/** Evaluates a value from hcl2json output: templates are resolved, everything else is literal. */
export function evaluate(value: Json, scope: Scope): Value {
  if (typeof value === 'number') return signedZero(value, String(value));
  if (typeof value === 'string') {
    const parts = templateParts(value);
    const [only] = parts;
    const interpolate = (expression: string) =>
      evaluateExpression(parseExpression(expression), (r) => resolve(r, scope), expression);
    if (parts.length === 1 && only && 'expression' in only)
      return signedZero(interpolate(only.expression), value);
    let out = '';
    for (const part of parts) {
      const piece = 'text' in part ? part.text : stringify(interpolate(part.expression), value);
      if (piece === UNKNOWN) return UNKNOWN;
      out += piece;
    }
    return out;
  }
  if (Array.isArray(value)) return value.map((item) => evaluate(item, scope));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, evaluate(v, scope)]));
  }
  return value;
}

/** True when the value or anything inside it is unknown. */
export function hasUnknown(value: Value): boolean {
  if (value === UNKNOWN) return true;
  if (Array.isArray(value)) return value.some(hasUnknown);
  if (value && typeof value === 'object') return Object.values(value).some(hasUnknown);
  return false;
}

/** The known part of a value (unknowns dropped) and the `after_unknown` mask of the plan JSON. */
export function splitUnknown(value: Value): { known: Json; unknown: Json } {
  if (value === UNKNOWN) return { known: null, unknown: true };
  if (Array.isArray(value)) {
    const parts = value.map(splitUnknown);
    return { known: parts.map((p) => p.known), unknown: parts.map((p) => p.unknown) };
  }
  if (value && typeof value === 'object') {
    const known: Record<string, Json> = {};
    const unknown: Record<string, Json> = {};
    for (const [key, item] of Object.entries(value)) {
      const part = splitUnknown(item);
      if (part.unknown === true) unknown[key] = true;
      else {
        known[key] = part.known;
        if (hasUnknown(item)) unknown[key] = part.unknown;
      }
    }
    return { known, unknown };
  }
  return { known: value, unknown: false };
}

/** Deep equality of JSON values (object key order ignored). */
export function jsonEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((x, i) => jsonEqual(x, b[i] as Json))
    );
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a);
    return (
      ka.length === Object.keys(b).length &&
      ka.every((k) => k in b && jsonEqual(a[k] as Json, b[k] as Json))
    );
  }
  return false;
}
