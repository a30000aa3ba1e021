/**
 * The store port: the part of better-sqlite3's API that Keel uses, and nothing more (ADR 0081).
 * better-sqlite3's `Database` is the SQLite adapter as it is; `PostgresDatabase` is the other.
 * Everything is synchronous: a statement runs and answers before the call returns.
 */

/**
 * The code of an error that says the database cannot be reached (the connection was lost, or a
 * new one refused): callers that can wait (the leadership lease, the watch) try again later.
 */
export const STORE_UNAVAILABLE = 'STORE_UNAVAILABLE';

/** What a write says: how many rows it changed. */
export interface RunResult {
  changes: number;
}

export interface Statement<P extends unknown[] = unknown[], R = unknown> {
  run(...params: P): RunResult;
  /** The first row, or undefined when there is none. */
  get(...params: P): R | undefined;
  all(...params: P): R[];
  iterate(...params: P): IterableIterator<R>;
  /** Rows as their first column's value. */
  pluck(toggleState?: boolean): this;
  /** Rows as arrays of the columns in order. */
  raw(toggleState?: boolean): this;
}

// better-sqlite3 types its transaction functions over `any[]`; `never[]` takes every function too.
type TransactionFn = (...params: never[]) => unknown;
export type Args<F> = F extends (...args: infer A) => unknown ? A : never;

/** `fn` as one transaction (a savepoint when inside another); undone if it throws. */
export interface Transaction<F extends TransactionFn> {
  (...params: Args<F>): ReturnType<F>;
  /** Takes the write lock before anything is read (SQLite's BEGIN IMMEDIATE). */
  immediate(...params: Args<F>): ReturnType<F>;
  deferred(...params: Args<F>): ReturnType<F>;
}

export interface Db {
  readonly open: boolean;
  readonly inTransaction: boolean;
  prepare<P extends unknown[] | object = unknown[], R = unknown>(
    source: string,
  ): P extends unknown[] ? Statement<P, R> : Statement<[P], R>;
  transaction<F extends TransactionFn>(fn: F): Transaction<F>;
  /** Runs one or more statements without parameters (DDL). */
  exec(source: string): this;
  close(): this;
}
