import type { Db, Statement } from './database.js';

/**
 * Prepared statements made on first use and kept. Query objects are built before their
 * projection's tables exist, so they must not prepare eagerly; SQLite re-prepares a kept
 * statement by itself when a rebuild recreates the table.
 */
export function statements(db: Db) {
  const cache = new Map<string, Statement>();
  return <P extends unknown[] = unknown[], R = unknown>(sql: string): Statement<P, R> => {
    let stmt = cache.get(sql);
    if (stmt === undefined) {
      stmt = db.prepare<unknown[]>(sql);
      cache.set(sql, stmt);
    }
    return stmt as unknown as Statement<P, R>;
  };
}

/**
 * Reads of read models that keep each row as one JSON document in a `doc` column: `all` parses
 * every row a query gives, `one` the first (or null). Statements are kept as `statements` keeps
 * them.
 */
export function docRows(db: Db) {
  const prepared = statements(db);
  return {
    all<T>(sql: string, ...args: string[]): T[] {
      return prepared<string[], { doc: string }>(sql)
        .all(...args)
        .map((r) => JSON.parse(r.doc) as T);
    },
    one<T>(sql: string, ...args: string[]): T | null {
      const row = prepared<string[], { doc: string }>(sql).get(...args);
      return row === undefined ? null : (JSON.parse(row.doc) as T);
    },
  };
}
