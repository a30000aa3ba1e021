import Database from 'better-sqlite3';

export type Db = Database.Database;

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
];

export const SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0;

/** Open (or create) a Keel database: WAL, NORMAL sync, migrations applied. */
export function openDatabase(path: string): Db {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
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
    })();
  }
}
