import { ValidationError } from '../core/errors.js';
import { durationSeconds } from './duration.js';

/**
 * Request fields of every `/v1` engine (aws, pki, sys), read with one set of rules: the reference's
 * weakly typed conversions (`"true"` for a bool, `"72h"` or `259200` for a duration, a comma string
 * or a list for a slice, `k=v` strings or a map for key pairs). The rules, field by field type, are
 * in docs/api/secrets-fields.md. A value that does not convert is a 400 naming the field (never
 * echoing a string value, which may be a secret); nothing is stored.
 */

export type Raw = Readonly<Record<string, unknown>>;

/** The field types a path may declare (the reference's framework types Keel uses). */
export type FieldType =
  | 'string'
  | 'lowercase-string'
  | 'name'
  | 'int'
  | 'bool'
  | 'duration'
  | 'signed-duration'
  | 'comma-string-slice'
  | 'string-slice'
  | 'kv-pairs'
  | 'map';

/** What each field type converts to. */
export interface FieldValues {
  string: string;
  'lowercase-string': string;
  name: string;
  int: number;
  bool: boolean;
  duration: number;
  'signed-duration': number;
  'comma-string-slice': string[];
  'string-slice': string[];
  'kv-pairs': Record<string, string>;
  map: Record<string, unknown>;
}

export const FIELD_TYPES: readonly FieldType[] = [
  'string',
  'lowercase-string',
  'name',
  'int',
  'bool',
  'duration',
  'signed-duration',
  'comma-string-slice',
  'string-slice',
  'kv-pairs',
  'map',
];

/** The reference's `GenericNameRegex`: names of roles, issuers and keys. */
export const NAME_PATTERN = /^\w(([\w.-]*)?\w)?$/;

export const fieldError = (field: string, why: string): ValidationError =>
  new ValidationError(
    `Field validation failed: error converting input for field "${field}": ${why}`,
  );

const goType = (v: unknown): string =>
  Array.isArray(v) ? 'slice' : v === null ? 'nil' : typeof v === 'object' ? 'map' : typeof v;

/** Go's `strconv.ParseBool`. */
const GO_TRUE = ['1', 't', 'T', 'true', 'TRUE', 'True'];
const GO_FALSE = ['0', 'f', 'F', 'false', 'FALSE', 'False'];

function toBool(field: string, v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  // A JSON number reaches the reference as its text, so only 1 and 0 parse.
  const text = typeof v === 'number' ? String(v) : v;
  if (typeof text === 'string') {
    if (GO_TRUE.includes(text)) return true;
    if (GO_FALSE.includes(text) || text === '') return false;
    throw fieldError(field, `cannot parse '${field}' as bool: ${JSON.stringify(text)}`);
  }
  throw fieldError(field, `'${field}' expected type 'bool', got unconvertible type '${goType(v)}'`);
}

/** Go integer literal syntax as `strconv.ParseInt(s, 0, 64)` reads it. */
const GO_INT = /^[-+]?(0[xX][0-9a-fA-F_]+|0[oO]?[0-7_]+|0[bB][01_]+|[1-9][0-9_]*|0)$/;

function toInt(field: string, v: unknown): number {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    if (v === '') return 0;
    if (GO_INT.test(v) && !/__|_$|^[-+]?_/.test(v)) {
      const sign = v.startsWith('-') ? -1 : 1;
      const digits = v.replace(/^[-+]/, '').replaceAll('_', '');
      const n =
        /^0[0-7]+$/.test(digits) && digits.length > 1
          ? Number.parseInt(digits.slice(1), 8)
          : /^0[oO]/.test(digits)
            ? Number.parseInt(digits.slice(2), 8)
            : Number(digits);
      if (Number.isSafeInteger(n)) return sign * n;
    }
  }
  throw fieldError(field, `cannot parse '${field}' as int: ${JSON.stringify(v)}`);
}

function toString(field: string, v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  // The reference's weak decoding turns a bool into "1" or "0".
  if (typeof v === 'boolean') return v ? '1' : '0';
  throw fieldError(
    field,
    `'${field}' expected type 'string', got unconvertible type '${goType(v)}'`,
  );
}

function toDuration(field: string, v: unknown, signed: boolean): number {
  if (typeof v !== 'string' && typeof v !== 'number')
    throw fieldError(field, 'could not parse duration from input');
  const seconds = durationSeconds(v, { days: true, negative: true });
  if (seconds === null)
    throw fieldError(field, `time: invalid duration ${JSON.stringify(String(v))}`);
  if (!signed && seconds < 0) throw fieldError(field, `cannot provide negative value '${seconds}'`);
  return seconds;
}

/** Items of a slice: a list of strings or numbers, anything else refused. */
function sliceItems(field: string, items: readonly unknown[]): string[] {
  return items.map((item) => {
    if (typeof item === 'string') return item;
    if (typeof item === 'number' || typeof item === 'boolean') return toString(field, item);
    throw fieldError(field, `'${field}' expected a list of strings, got '${goType(item)}' in it`);
  });
}

/**
 * A comma string or a list, items trimmed (`ParseCommaStringSlice`). A comma string's empty items
 * are dropped (`"a,,b"`, `""`); a list keeps every item it sent, so an empty name in a list reaches
 * the check of that name instead of vanishing.
 */
function toCommaSlice(field: string, v: unknown): string[] {
  if (Array.isArray(v)) return sliceItems(field, v).map((i) => i.trim());
  if (typeof v === 'number' || typeof v === 'boolean') return [toString(field, v)];
  if (typeof v !== 'string')
    throw fieldError(field, `'${field}' expected a comma-separated string or a list of strings`);
  return v
    .split(',')
    .map((i) => i.trim())
    .filter((i) => i !== '');
}

/** A list (a lone value becomes a one-item list); items trimmed, not split on commas. */
function toStringSlice(field: string, v: unknown): string[] {
  if (v === '') return [];
  if (Array.isArray(v)) return sliceItems(field, v).map((i) => i.trim());
  if (typeof v === 'object' && v !== null)
    throw fieldError(field, `'${field}' expected a list of strings, got unconvertible type 'map'`);
  return [toString(field, v).trim()];
}

/** A map of strings, or a list of `key=value` strings (a lone string is a one-item list). */
function toKvPairs(field: string, v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
    for (const [k, val] of Object.entries(v)) {
      if (typeof val === 'object' && val !== null)
        throw fieldError(field, `invalid key pair ${JSON.stringify(k)}`);
      out[k] = toString(field, val);
    }
    return out;
  }
  for (const pair of toStringSlice(field, v)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw fieldError(field, `invalid key pair ${JSON.stringify(pair)}`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

function toMap(field: string, v: unknown): Record<string, unknown> {
  if (Array.isArray(v) && v.length === 0) return {};
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) return { ...v };
  throw fieldError(field, `'${field}' expected a map, got unconvertible type '${goType(v)}'`);
}

/** Converts one present (non-null) value to its declared type; throws a field validation error. */
export function convertField<T extends FieldType>(
  type: T,
  field: string,
  value: unknown,
): FieldValues[T];
export function convertField(type: FieldType, field: string, value: unknown): unknown {
  switch (type) {
    case 'string':
      return toString(field, value);
    case 'lowercase-string':
      return toString(field, value).toLowerCase();
    case 'name': {
      const s = toString(field, value);
      if (!NAME_PATTERN.test(s))
        throw fieldError(field, 'field does not match the formatting rules');
      return s;
    }
    case 'int':
      return toInt(field, value);
    case 'bool':
      return toBool(field, value);
    case 'duration':
      return toDuration(field, value, false);
    case 'signed-duration':
      return toDuration(field, value, true);
    case 'comma-string-slice':
      return toCommaSlice(field, value);
    case 'string-slice':
      return toStringSlice(field, value);
    case 'kv-pairs':
      return toKvPairs(field, value);
    case 'map':
      return toMap(field, value);
    default: {
      const never: never = type;
      return never;
    }
  }
}

/** One declared field: its type, what it means, its default and whether it must be sent. */
export interface FieldSpec<T extends FieldType = FieldType> {
  readonly type: T;
  readonly description: string;
  readonly default?: FieldValues[T];
  readonly required?: boolean;
  /** the values a string field may take (listed in the OpenAPI document) */
  readonly allowed?: readonly string[];
  /**
   * sent in the query string of a read (the reference's `Query`): the OpenAPI document lists it
   * as a query parameter of the read
   */
  readonly query?: boolean;
}

export type Fields = Readonly<Record<string, FieldSpec>>;

type Options<T extends FieldType> = Omit<FieldSpec<T>, 'type' | 'description'>;

const declare =
  <T extends FieldType>(type: T) =>
  <O extends Options<T> = Options<T>>(description: string, options?: O): FieldSpec<T> & O =>
    ({ type, description, ...options }) as FieldSpec<T> & O;

/** Field declarations: `field.bool('Whether …', { default: false })`. */
export const field = {
  string: declare('string'),
  lowercaseString: declare('lowercase-string'),
  name: declare('name'),
  int: declare('int'),
  bool: declare('bool'),
  duration: declare('duration'),
  signedDuration: declare('signed-duration'),
  commaSlice: declare('comma-string-slice'),
  stringSlice: declare('string-slice'),
  kvPairs: declare('kv-pairs'),
  map: declare('map'),
} as const;

type ValueOf<S> = S extends FieldSpec<infer T> ? FieldValues[T] : never;

/** The typed values of a schema: a field with a default, or a required one, always has a value. */
export type Parsed<F extends Fields> = {
  readonly [K in keyof F]: F[K] extends { default: unknown } | { required: true }
    ? ValueOf<F[K]>
    : ValueOf<F[K]> | undefined;
};

/** The operations a path serves (the ACL capabilities and the reference's operation names). */
export type Operation = 'read' | 'list' | 'update' | 'patch' | 'delete';

/** One declared path of an engine, relative to its mount (`roles/:name`). */
export interface PathSchema<F extends Fields = Fields> {
  readonly pattern: string;
  readonly summary: string;
  readonly operations: readonly Operation[];
  readonly fields: F;
}

export const declarePath = <F extends Fields>(schema: PathSchema<F>): PathSchema<F> => schema;

/** A path whose only fields are its own segments (`cert/:serial`, `*prefix`), each a required string. */
export function segmentsOnly(
  pattern: string,
  summary: string,
  operations: readonly Operation[],
): PathSchema {
  const names = [...pattern.matchAll(/[:*](\w+)/g)].map((m) => m[1]!);
  return declarePath({
    pattern,
    summary,
    operations,
    fields: Object.fromEntries(
      names.map((n) => [
        n,
        field.string(`The ${n.replaceAll('_', ' ')} in the path`, { required: true }),
      ]),
    ),
  });
}

/** A request's fields after conversion against its path's schema. */
export interface FieldData<F extends Fields> {
  /** The value sent, converted; else the declared default; else undefined. */
  get<K extends keyof F & string>(name: K): Parsed<F>[K];
  /** Whether the request sent the field (a JSON null counts as not sent). */
  sent(name: keyof F & string): boolean;
  /** Whether the request sent the field as a JSON null (some clients send null for "unset"). */
  sentNull(name: keyof F & string): boolean;
  /** Fields sent that the path does not declare, sorted. */
  readonly ignored: readonly string[];
  /** The reference's warnings about ignored and path-replaced fields. */
  readonly warnings: readonly string[];
}

/**
 * A field's default, as a value of the request's own: an array or object is copied, since the
 * caller may change what it gets; anything else is given as it is.
 */
function defaultOf(field: { default?: unknown } | undefined): unknown {
  const value = field?.default;
  return typeof value === 'object' && value !== null ? structuredClone(value) : value;
}

/**
 * Converts every declared field present in `raw` (all of them, before any is used, so one bad value
 * fails the request whatever the handler reads), applies `captures` (the path's own segments, which
 * win over the body), checks required fields and notes undeclared ones.
 */
export function parseFields<F extends Fields>(
  schema: PathSchema<F>,
  raw: Raw,
  captures: Readonly<Record<string, string>> = {},
): FieldData<F> {
  const fields = schema.fields;
  const replaced = Object.keys(captures).filter((k) => raw[k] !== undefined && raw[k] !== null);
  const merged: Record<string, unknown> = { ...raw, ...captures };
  const values = new Map<string, unknown>();
  for (const [name, spec] of Object.entries(fields)) {
    const v = merged[name];
    if (v === undefined || v === null) {
      if (spec.required === true)
        throw new ValidationError(`missing required field ${JSON.stringify(name)}`);
      continue;
    }
    const converted = convertField(spec.type, name, v);
    if (
      spec.allowed !== undefined &&
      typeof converted === 'string' &&
      !spec.allowed.includes(converted)
    )
      throw fieldError(
        name,
        `${JSON.stringify(converted)} is not one of ${spec.allowed.join(', ')}`,
      );
    values.set(name, converted);
  }
  const ignored = Object.keys(merged)
    .filter((k) => !Object.hasOwn(fields, k))
    .sort();
  const warnings = [
    ...(ignored.length
      ? [`Endpoint ignored these unrecognized parameters: [${ignored.join(' ')}]`]
      : []),
    ...(replaced.length
      ? [
          `Endpoint replaced the value of these parameters with the values captured from the endpoint's path: [${replaced.sort().join(' ')}]`,
        ]
      : []),
  ];
  return {
    get: (name) =>
      (values.has(name) ? values.get(name) : defaultOf(fields[name])) as Parsed<F>[typeof name],
    sent: (name) => values.has(name),
    sentNull: (name) => merged[name] === null,
    ignored,
    warnings,
  };
}

/** A request body as a plain object; anything else is refused. */
export function body(input: unknown): Record<string, unknown> {
  if (input === undefined || input === null || input === '') return {};
  if (typeof input !== 'object' || Array.isArray(input))
    throw new ValidationError('request body must be a JSON object');
  return input as Record<string, unknown>;
}
