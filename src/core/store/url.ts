/** Which store holds the log: the embedded SQLite file, or a PostgreSQL database. */
export type StoreSpec =
  | { readonly kind: 'sqlite' }
  /** A libpq connection URL; it may hold a password, so it is shown only through `redactUrl`. */
  | { readonly kind: 'postgres'; readonly url: string };

/** Whether a `--store` value names a PostgreSQL database (a libpq connection URL). */
export const isPostgresUrl = (value: string): boolean => /^postgres(ql)?:\/\//i.test(value);

/**
 * A connection URL (or a message quoting one) with its password replaced: what may be printed or
 * logged. Covers `user:password@` in a URL of any scheme and a `password=` parameter.
 */
export function redactUrl(text: string): string {
  return text
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^:/?#@\s]*):[^@/?#\s]*@/gi, '$1:***@')
    .replace(/(password=)[^&\s]*/gi, '$1***');
}
