import { ValidationError } from '../../core/errors.js';
import { parseDurationSeconds } from './durations.js';

/**
 * Field converters with the reference's loose typing (numbers for strings, `"true"` for bools,
 * comma strings for lists, `k=v` lists for maps). A value that does not convert is a 400 with the
 * reference's `Field validation failed` text; nothing is stored.
 */

export type Raw = Readonly<Record<string, unknown>>;

const fieldError = (field: string, err: string) =>
  new ValidationError(
    `Field validation failed: error converting input for field "${field}": ${err}`,
  );

export const has = (raw: Raw, field: string): boolean =>
  raw[field] !== undefined && raw[field] !== null;

export function str(raw: Raw, field: string): string | undefined {
  const v = raw[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw fieldError(
    field,
    `'${field}' expected type 'string', got unconvertible type '${Array.isArray(v) ? 'slice' : 'map'}'`,
  );
}

export function int(raw: Raw, field: string): number | undefined {
  const v = raw[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^[-+]?\d+$/.test(v.trim())) return Number(v.trim());
  throw fieldError(field, `cannot parse '${field}' as int: ${JSON.stringify(v)}`);
}

/** Go `strconv.ParseBool` forms. */
export function parseBool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v === 1 ? true : v === 0 ? false : undefined;
  if (typeof v !== 'string') return undefined;
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(v)) return false;
  return undefined;
}

export function bool(raw: Raw, field: string): boolean | undefined {
  const v = raw[field];
  if (v === undefined || v === null) return undefined;
  const b = parseBool(v);
  if (b === undefined)
    throw fieldError(field, `cannot parse '${field}' as bool: ${JSON.stringify(v)}`);
  return b;
}

export function duration(raw: Raw, field: string): number | undefined {
  const v = raw[field];
  if (v === undefined || v === null) return undefined;
  try {
    return parseDurationSeconds(v);
  } catch (e) {
    throw fieldError(field, (e as Error).message);
  }
}

/** A comma-separated string or a JSON array of strings; blanks are dropped. */
export function list(raw: Raw, field: string): string[] | undefined {
  const v = raw[field];
  if (v === undefined || v === null) return undefined;
  const items = typeof v === 'string' ? v.split(',') : Array.isArray(v) ? v : null;
  if (items === null || !items.every((i) => typeof i === 'string' || typeof i === 'number')) {
    throw fieldError(field, `'${field}' expected a comma-separated string or a list of strings`);
  }
  return items.map((i) => String(i).trim()).filter((i) => i !== '');
}

/** A map of strings, a list of `key=value` strings, or one comma-separated `key=value` string. */
export function kvPairs(raw: Raw, field: string): Record<string, string> | undefined {
  const v = raw[field];
  if (v === undefined || v === null) return undefined;
  const out: Record<string, string> = {};
  if (typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
      if (typeof val !== 'string')
        throw fieldError(field, `invalid key pair ${JSON.stringify(`${k}=${String(val)}`)}`);
      out[k] = val;
    }
    return out;
  }
  const items =
    typeof v === 'string' ? (v === '' ? [] : v.split(',')) : Array.isArray(v) ? v : null;
  if (items === null)
    throw fieldError(field, `'${field}' expected a map or a list of key=value strings`);
  for (const item of items) {
    const text = typeof item === 'string' ? item.trim() : '';
    const eq = text.indexOf('=');
    if (eq <= 0)
      throw fieldError(
        field,
        `invalid key pair ${JSON.stringify(typeof item === 'string' ? item : JSON.stringify(item))}`,
      );
    out[text.slice(0, eq)] = text.slice(eq + 1);
  }
  return out;
}

/** The fields a request sent that the endpoint does not know, for the reference's warning. */
export function ignoredFieldsWarning(raw: Raw, known: readonly string[]): string[] {
  const unknown = Object.keys(raw)
    .filter((k) => !known.includes(k))
    .sort();
  return unknown.length
    ? [`Endpoint ignored these unrecognized parameters: [${unknown.join(' ')}]`]
    : [];
}
