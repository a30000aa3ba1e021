import { ValidationError } from '../../core/errors.js';
import { parseDuration } from './ttl.js';

/**
 * Weakly typed field readers, as the reference's framework accepts them: clients send `"true"` as
 * readily as `true`, `"72h"` as readily as `259200`. Every failure names the field.
 */
const fail = (field: string, why: string): never => {
  throw new ValidationError(
    `Field validation failed: error converting input for field "${field}": ${why}`,
  );
};

/** A request body as a plain object; anything else is refused. */
export function body(input: unknown): Record<string, unknown> {
  if (input === undefined || input === null || input === '') return {};
  if (typeof input !== 'object' || Array.isArray(input))
    throw new ValidationError('request body must be a JSON object');
  return input as Record<string, unknown>;
}

export function bool(b: Record<string, unknown>, field: string, fallback: boolean): boolean {
  const v = b[field];
  if (v === undefined || v === null) return fallback;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') {
    const t = v.trim().toLowerCase();
    if (['1', 't', 'true'].includes(t)) return true;
    if (['0', 'f', 'false', ''].includes(t)) return false;
  }
  return fail(field, `cannot parse ${JSON.stringify(v)} as bool`);
}

export function int(b: Record<string, unknown>, field: string, fallback: number): number {
  const v = b[field];
  if (v === undefined || v === null || v === '') return fallback;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) return Number(v.trim());
  return fail(field, `cannot parse ${JSON.stringify(v)} as int`);
}

export function str(b: Record<string, unknown>, field: string, fallback = ''): string {
  const v = b[field];
  if (v === undefined || v === null) return fallback;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return fail(field, `expected a string, got ${JSON.stringify(v)}`);
}

/** A comma-separated string or a JSON list; items are trimmed and empty ones dropped. */
export function list(
  b: Record<string, unknown>,
  field: string,
  fallback: readonly string[] = [],
): string[] {
  const v = b[field];
  if (v === undefined || v === null) return [...fallback];
  const items =
    typeof v === 'string'
      ? v.split(',')
      : Array.isArray(v)
        ? v
        : fail(field, `expected a list, got ${JSON.stringify(v)}`);
  return items
    .map((item) => {
      if (typeof item !== 'string' && typeof item !== 'number')
        return fail(field, `expected strings in the list`);
      return String(item).trim();
    })
    .filter((s) => s !== '');
}

/** A duration in seconds; `undefined` when the field is absent. */
export function duration(b: Record<string, unknown>, field: string): number | undefined {
  const v = b[field];
  if (v === undefined || v === null || v === '') return undefined;
  return parseDuration(v, field);
}

/** One of a fixed set of values. */
export function oneOf<T extends string>(
  b: Record<string, unknown>,
  field: string,
  values: readonly T[],
  fallback: T,
  message?: string,
): T {
  const v = str(b, field, fallback);
  if ((values as readonly string[]).includes(v)) return v as T;
  throw new ValidationError(
    message ??
      `unknown value ${JSON.stringify(v)} for field "${field}"; must be one of ${values.join(', ')}`,
  );
}

/** Names of roles, issuers and keys: `GenericNameRegex`. */
export const NAME_PATTERN = /^\w(([\w.-]*)?\w)?$/;
