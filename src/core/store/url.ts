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

/**
 * How long a connection may wait on the server unless its URL says otherwise: libpq waits without
 * end by default, for a connection to be made (a server that accepts and never answers, a packet
 * filter that drops the handshake) and for an answer on a connection whose peer vanished, and
 * Keel's calls that wait for it hold the event loop meanwhile. `connect_timeout` in seconds;
 * `tcp_user_timeout` in milliseconds, for what was sent and not acknowledged (TCP only).
 */
export const CONNECTION_BOUNDS: Readonly<Record<string, string>> = {
  connect_timeout: '5',
  tcp_user_timeout: '10000',
};

/** A `postgres://` URL with `CONNECTION_BOUNDS` for the parameters it does not set itself. */
export function withConnectionBounds(url: string): string {
  if (!isPostgresUrl(url)) return url;
  const at = url.indexOf('?');
  const set = new Set(
    at < 0
      ? []
      : url
          .slice(at + 1)
          .split('&')
          .map((p) => decodeURIComponent(p.split('=')[0] ?? '').toLowerCase()),
  );
  const added = Object.entries(CONNECTION_BOUNDS)
    .filter(([name]) => !set.has(name))
    .map(([name, value]) => `${name}=${value}`);
  if (added.length === 0) return url;
  const joiner = at < 0 ? '?' : url.endsWith('?') || url.endsWith('&') ? '' : '&';
  return `${url}${joiner}${added.join('&')}`;
}
