import type { Db } from './database.js';

/**
 * Notices commits made by other processes sharing the database file (`--workers`): SQLite's
 * `PRAGMA data_version` changes for a connection when another connection has committed since it
 * was last asked, and never for the connection's own commits. About 3 µs a check (ADR 0080).
 */
export class LogWatch {
  readonly #version: () => number;
  readonly #listeners = new Set<() => void>();
  #seen: number;

  constructor(db: Db) {
    const statement = db.prepare<[], number>('PRAGMA data_version').pluck();
    this.#version = () => statement.get()!;
    this.#seen = this.#version();
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
