import type { z } from 'zod';

/**
 * JSON that comes from outside Keel (a request body read by hand, a file a user or another tool
 * wrote, a peer's answer) is parsed with a schema, never cast: what does not fit is refused with a
 * message that names the bad field, and the caller turns it into its own API's error. JSON Keel
 * wrote itself (event payloads, read-model columns) is read without a schema (docs/architecture.md,
 * "JSON at the boundaries").
 */
export type JsonResult<T> = { ok: true; value: T } | { ok: false; error: string };

/**
 * Zod issues as one sentence, each bad field named by its JSON pointer under `root`; an issue with
 * the value as a whole is named `whole`.
 */
export function describeIssues(error: z.ZodError, root = '', whole = 'the document'): string {
  return error.issues
    .map((i) => {
      const pointer = `${root}/${i.path.map(String).join('/')}`.replace(/\/$/, '');
      return `${pointer === '' ? whole : pointer}: ${i.message}`;
    })
    .join('; ');
}

/** Checks an already parsed value against a schema. */
export function checkJson<S extends z.ZodType>(
  schema: S,
  value: unknown,
  root = '',
): JsonResult<z.output<S>> {
  const result = schema.safeParse(value);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, error: describeIssues(result.error, root) };
}

/**
 * Checks a value against a schema and answers the value itself, not the schema's copy of it (whose
 * keys zod puts in the schema's order): for documents kept as they came, with a schema that has
 * no defaults and no transforms.
 */
export function checkJsonAsIs<T>(schema: z.ZodType<T>, value: unknown, root = ''): JsonResult<T> {
  let error = '';
  const fits = (v: unknown): v is T => {
    const result = schema.safeParse(v);
    if (!result.success) error = describeIssues(result.error, root);
    return result.success;
  };
  return fits(value) ? { ok: true, value } : { ok: false, error };
}

/** Parses JSON text and checks it against a schema; never throws. */
export function parseJson<S extends z.ZodType>(
  schema: S,
  text: string,
  root = '',
): JsonResult<z.output<S>> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  return checkJson(schema, value, root);
}
