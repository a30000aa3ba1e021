import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';

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
      stmt = db.prepare(sql);
      cache.set(sql, stmt);
    }
    return stmt as unknown as Statement<P, R>;
  };
}
