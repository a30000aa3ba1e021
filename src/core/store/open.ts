import type { StoreSpec } from './url.js';
import { migrate, openDatabase, type SqliteDb, type SyncMode } from '../database.js';
import type { Db } from './port.js';
import { PostgresDatabase } from './postgres.js';

export interface OpenedStore {
  db: Db;
  /** The SQLite handle when the store is SQLite (checkpoints, pragmas), else null. */
  sqlite: SqliteDb | null;
}

/**
 * Opens the store `spec` names, migrated: the SQLite file at `sqlitePath` (in the given sync
 * mode), or the PostgreSQL database at its URL. One opener for the daemon and the CLI.
 */
export function openStore(
  spec: StoreSpec,
  sqlitePath: string,
  sync: SyncMode = 'full',
): OpenedStore {
  if (spec.kind === 'sqlite') {
    const sqlite = openDatabase(sqlitePath, sync);
    return { db: sqlite, sqlite };
  }
  const db = new PostgresDatabase(spec.url);
  try {
    // Under the log's lock: two nodes starting at once do not both create the tables.
    db.transaction(() => migrate(db))();
  } catch (err) {
    db.close();
    throw err;
  }
  return { db, sqlite: null };
}
