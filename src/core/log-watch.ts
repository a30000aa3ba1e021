import type { Db, SqliteDb } from './database.js';

/**
 * How a process tells that another one committed. On SQLite, `PRAGMA data_version` changes for
 * a connection when another connection has committed since it was last asked, and never for the
 * connection's own commits: about 3 µs a check (ADR 0080). On PostgreSQL, the log's end (the
 * primary key's last entry, one index probe): every commit that changes a read model appends to
 * the log in the same transaction, so a new end is the sign (ADR 0081). Its own appends move it
 * too; forgetting after them costs only a re-read.
 */
export function logVersion(db: Db, sqlite: SqliteDb | null): () => number {
  if (sqlite !== null) {
    const statement = sqlite.prepare<[], number>('PRAGMA data_version').pluck();
    return () => statement.get()!;
  }
  const statement = db.prepare<[], number>('SELECT max(position) FROM events').pluck();
  return () => statement.get() ?? 0;
}

/** Notices commits made by other processes sharing the log (`--workers`, several nodes). */
export class LogWatch {
  readonly #version: () => number;
  readonly #listeners = new Set<() => void>();
  #seen: number;

  constructor(version: () => number) {
    this.#version = version;
    this.#seen = version();
  }

  /** Tells the listeners if another process committed since the last check; returns whether. */
  check(): boolean {
    const version = this.#version();
    if (version === this.#seen) return false;
    this.#seen = version;
    for (const listener of this.#listeners) listener();
    return true;
  }

  /** Called after a check that found another process's commit. */
  onForeignCommit(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
