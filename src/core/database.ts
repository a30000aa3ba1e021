import Database from 'better-sqlite3';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { COMMIT_IS_DURABLE, SyncFailed, type Durability } from './group-commit.js';
import { PostgresDatabase } from './store/postgres.js';
import type { Db } from './store/port.js';

export type { Db, Statement } from './store/port.js';
/** The SQLite adapter's own handle, for what only SQLite has (pragmas, checkpoints). */
export type SqliteDb = Database.Database;

/**
 * Versioned migrations of the core tables. Read models are not here: each projection owns its
 * tables and rebuilds them from the log when its version changes.
 */
const MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'event log, checkpoints, projection versions',
    sql: `
      CREATE TABLE events (
        position INTEGER PRIMARY KEY,
        stream   TEXT    NOT NULL,
        version  INTEGER NOT NULL,
        type     TEXT    NOT NULL,
        time     TEXT    NOT NULL,
        data     TEXT    NOT NULL,
        metadata TEXT    NOT NULL,
        hash     TEXT    NOT NULL,
        UNIQUE (stream, version)
      );
      CREATE TABLE checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL);
      CREATE TABLE projection_versions (name TEXT PRIMARY KEY, version INTEGER NOT NULL);
    `,
  },
  {
    version: 2,
    name: 'keyed audit chain: where keyed hashing starts, signed anchors of the head',
    sql: `
      CREATE TABLE audit_chain (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        keyed_from INTEGER NOT NULL,
        mac        TEXT    NOT NULL
      );
      CREATE TABLE audit_anchors (
        position   INTEGER PRIMARY KEY,
        hash       TEXT    NOT NULL,
        time       TEXT    NOT NULL,
        keyed_from INTEGER NOT NULL,
        signature  TEXT    NOT NULL
      );
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0;

/**
 * How hard a commit waits for the disk. `full` (the default) syncs the write-ahead log at every
 * commit, so an acknowledged write survives a power loss; `normal` syncs it only at checkpoints, so
 * the last commits before a power loss (not a crash of the process) may be lost (ADR 0061).
 */
export type SyncMode = 'full' | 'normal';

/** Open (or create) a Keel database: WAL, the given sync mode, migrations applied. */
export function openDatabase(path: string, sync: SyncMode = 'full'): SqliteDb {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${sync === 'full' ? 'FULL' : 'NORMAL'}`);
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

/**
 * Runs a write (one autocommit statement) without a disk sync of its own, however the
 * connection's `synchronous` is set: for writes whose loss on a power cut costs nothing but work
 * done again, the reactors' checkpoints (ADR 0092). The write-ahead log is synced in order, so the
 * next commit that syncs makes it durable too; a crash of the process loses nothing, as with any
 * commit. Inside a transaction the write is part of it and runs as it is. On a PostgreSQL store
 * the write runs as it is: its commit waits for the server's own durability setting.
 */
export function unsynced(db: Db): <T>(write: () => T) => T {
  if (!(db instanceof Database)) return (write) => write();
  const level = db.pragma('synchronous', { simple: true }) as number;
  // 0 (off) and 1 (normal) sync no commit in WAL mode already.
  if (level <= 1) return (write) => write();
  // Executed afresh each time: SQLite applies this pragma when it compiles it, so a prepared
  // statement run again would not.
  const restore = `PRAGMA synchronous = ${level}`;
  return (write) => {
    if (db.inTransaction) return write();
    db.exec('PRAGMA synchronous = NORMAL');
    try {
      return write();
    } finally {
      db.exec(restore);
    }
  };
}

/**
 * How a batch of commands reaches the disk on this store (DESIGN §10, ADR 0100). At `--sync full`
 * on a SQLite file, the batch's transaction is committed without SQLite's own sync, and the write-ahead
 * log is then synced on the libuv pool (`fdatasync` of the WAL file, the very sync SQLite would
 * have made inside COMMIT), so the event loop never waits for the disk and one sync serves every
 * command of the batch. Elsewhere a COMMIT is as durable as the store is set to make it.
 */
export function batchDurability(db: Db): Durability {
  if (db instanceof PostgresDatabase) return db.durability;
  if (!(db instanceof Database) || db.memory) return COMMIT_IS_DURABLE;
  const level = db.pragma('synchronous', { simple: true }) as number;
  if (level <= 1) return COMMIT_IS_DURABLE;
  const restore = `PRAGMA synchronous = ${level}`;
  const walPath = `${db.name}-wal`;
  let wal: Promise<FileHandle> | undefined;
  const walFile = (): Promise<FileHandle> => {
    wal ??= (async () => {
      const handle = await open(walPath, 'r+');
      // The WAL file's name must survive a power cut too: sync its directory once.
      const dir = await open(dirname(walPath), 'r');
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
      return handle;
    })();
    wal.catch(() => (wal = undefined));
    return wal;
  };
  // One fdatasync at a time; a commit waits for the first that starts after it returned, so
  // one sync covers every batch committed while the one before it was running.
  let running: Promise<void> | null = null;
  let next: Promise<void> | null = null;
  const syncAfterNow = (): Promise<void> => {
    if (running === null) {
      running = walFile()
        .then((handle) => handle.datasync())
        .finally(() => (running = null));
      return running;
    }
    next ??= running.then(
      () => {
        next = null;
        return syncAfterNow();
      },
      (err: unknown) => {
        next = null;
        throw err;
      },
    );
    return next;
  };
  return {
    overlaps: true,
    around(batch) {
      // SQLite takes this pragma only outside a transaction.
      db.exec('PRAGMA synchronous = NORMAL');
      try {
        batch();
      } finally {
        db.exec(restore);
      }
    },
    async commit(commitNow) {
      commitNow();
      try {
        await syncAfterNow();
      } catch (err) {
        throw new SyncFailed((err as Error).message);
      }
    },
    async close() {
      const handle = await wal?.catch(() => undefined);
      wal = undefined;
      await handle?.close();
    },
  };
}

export function migrate(db: Db): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)',
  );
  const applied = new Set(
    db
      .prepare<[], { version: number }>('SELECT version FROM schema_migrations')
      .all()
      .map((r) => r.version),
  );
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name) VALUES (?, ?)').run(
        m.version,
        m.name,
      );
    }).immediate();
  }
}
