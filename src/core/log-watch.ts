import type { Db, SqliteDb } from './database.js';
import type { ForeignChange } from './read-memo.js';
import { PostgresDatabase } from './store/postgres.js';

/**
 * How a process tells that another one committed. On SQLite, `PRAGMA data_version` changes for
 * a connection when another connection has committed since it was last asked, and never for the
 * connection's own commits: about 3 µs a check (ADR 0080). On PostgreSQL, the count of commits
 * other sessions announced with `NOTIFY keel_log` (every commit of the store sends one), heard on a
 * session of its own: no round trip per check (ADR 0100).
 */
export function logVersion(db: Db, sqlite: SqliteDb | null): () => number {
  if (sqlite !== null) {
    const statement = sqlite.prepare<[], number>('PRAGMA data_version').pluck();
    return () => statement.get()!;
  }
  if (db instanceof PostgresDatabase) return () => db.foreignCommits();
  const statement = db.prepare<[], number>('SELECT max(position) FROM events').pluck();
  return () => statement.get() ?? 0;
}

/**
 * What to wait for before asking `logVersion` when the answer must include every commit another
 * process acknowledged before now: nothing on SQLite (`PRAGMA data_version` is exact when asked);
 * on PostgreSQL a round trip on the listening session (`PostgresDatabase.heardUpTo`).
 */
export function logHeard(db: Db): (() => Promise<void>) | undefined {
  return db instanceof PostgresDatabase ? () => db.heardUpTo() : undefined;
}

/**
 * What other processes' commits appended since the last call, as far as they said: on PostgreSQL
 * what their notifications carried (`PostgresDatabase.foreignChanges`); elsewhere unknown.
 */
export function logChanges(db: Db): () => ForeignChange {
  if (db instanceof PostgresDatabase) return () => db.foreignChanges();
  return () => 'unknown';
}

/** Notices commits made by other processes sharing the log (`--workers`, several nodes). */
export class LogWatch {
  readonly #version: () => number;
  readonly #changes: () => ForeignChange;
  readonly #listeners = new Set<(change: ForeignChange) => void>();
  #seen: number;

  constructor(version: () => number, changes: () => ForeignChange = () => 'unknown') {
    this.#version = version;
    this.#changes = changes;
    this.#seen = version();
  }

  /** Tells the listeners if another process committed since the last check; returns whether. */
  check(): boolean {
    const version = this.#version();
    if (version === this.#seen) return false;
    this.#seen = version;
    const change = this.#changes();
    for (const listener of this.#listeners) listener(change);
    return true;
  }

  /** Called after a check that found another process's commit, with what it appended. */
  onForeignCommit(listener: (change: ForeignChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
