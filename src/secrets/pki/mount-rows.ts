import type { Db } from '../../core/database.js';

/**
 * Reads of the certificate authority's tables, each keyed by mount first: one row by a key
 * column, and a JSON value kept by kind. The engine's queries and the ACME server's share them.
 */
export function mountRows(db: Db) {
  return {
    one<R>(table: string, column: string): (mount: string, key: string) => R | undefined {
      const statement = db.prepare<[string, string], R>(
        `SELECT * FROM ${table} WHERE mount = ? AND ${column} = ?`,
      );
      return (mount, key) => statement.get(mount, key);
    },
    json(table: string): <T>(mount: string, kind: string) => T | undefined {
      const statement = db.prepare<[string, string], { value: string }>(
        `SELECT value FROM ${table} WHERE mount = ? AND kind = ?`,
      );
      return <T>(mount: string, kind: string) => {
        const row = statement.get(mount, kind);
        return row ? (JSON.parse(row.value) as T) : undefined;
      };
    },
  };
}
