import type { Db } from './database.js';
import { typeMatches } from './event-store.js';
import { Lru } from './lru.js';

/** Freezes an object and everything in it (values shared between requests). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * What other processes' commits appended, as far as they said: the event types and the streams
 * (PostgreSQL's notifications carry them), or `unknown` (SQLite's `data_version`, a commit that
 * did not say, a notification that may have been missed).
 */
export type ForeignChange =
  { readonly types: ReadonlySet<string>; readonly streams: ReadonlySet<string> } | 'unknown';

/** Whether `change` may hold an event of one of `types` (names, or prefixes ending in `*`). */
export function touches(change: ForeignChange, types: readonly string[]): boolean {
  if (change === 'unknown') return true;
  for (const type of change.types) if (types.some((t) => typeMatches(t, type))) return true;
  return false;
}

/** Who is told, by database, when another process sharing its file has committed. */
const listening = new WeakMap<Db, Set<(change: ForeignChange) => void>>();

/**
 * Register `listener` to be called when the rows of `db` may have changed under this process (a
 * commit by another process sharing the file, `--workers`, or the database, other nodes): every
 * `ReadMemo` forgets the rows the change may touch, other caches built from read models likewise,
 * and long polls on the log wake up.
 */
export function whenAnotherProcessCommits(db: Db, listener: (change: ForeignChange) => void): void {
  register(listening, db, listener);
}

/** The memos of each database, told when one of its transactions begins. */
const beginning = new WeakMap<Db, Set<() => void>>();

/** Adds `listener` to `db`'s set in `registry`. */
function register<L>(registry: WeakMap<Db, Set<L>>, db: Db, listener: L): void {
  let set = registry.get(db);
  if (set === undefined) registry.set(db, (set = new Set()));
  set.add(listener);
}

/**
 * A transaction of `db` begins (a group-commit batch): whatever an earlier one changed is
 * committed or undone, so what is read from here is kept again until this one forgets something.
 */
export function transactionBegins(db: Db): void {
  for (const listener of beginning.get(db) ?? []) listener();
}

/** Tell every listener of `db` that another process committed (a `LogWatch` noticed). */
export function anotherProcessCommitted(db: Db, change: ForeignChange = 'unknown'): void {
  for (const listener of listening.get(db) ?? []) listener(change);
}

/**
 * Read-model rows remembered between requests instead of queried and parsed each time. The owner
 * calls `clear` (or `forget`) from its projection whenever an event changes any of them, inside the
 * same transaction, so a remembered row is never older than the table. Values are frozen, being
 * shared. A value read inside a transaction is kept only while nothing was forgotten in it: the
 * rows it reads are then the committed ones (every change to them is announced first), while
 * after a change it may read what the transaction wrote and may yet roll back. Absent rows are
 * kept only when asked (for keys the caller controls, never for what a client sends). With several
 * processes on one log, a memo is cleared when another one commits what its projection applies
 * (`anotherProcessCommitted`, driven by a `LogWatch`).
 */
export class ReadMemo {
  readonly #db: Db;
  readonly #memo: Lru<string, unknown>;
  /**
   * Something was forgotten inside the transaction open then: until a read outside any
   * transaction shows it ended, or another begins (`transactionBegins`), what is read inside one
   * is not kept.
   */
  #changedInTransaction = false;

  /**
   * Past `limit` entries the least recently used goes (the memo only saves queries). `events`:
   * the event types whose projection writes the rows the memo holds (the projection's own
   * `events`); another process's commit clears the memo only if it may hold one of them (or
   * what it appended is unknown). An owner that forgets precisely itself passes `[]` and listens
   * to `whenAnotherProcessCommits`.
   */
  constructor(db: Db, options: { limit?: number; events?: readonly string[] } = {}) {
    this.#db = db;
    this.#memo = new Lru(options.limit ?? 10_000);
    const events = options.events;
    whenAnotherProcessCommits(db, (change) => {
      if (events === undefined || touches(change, events)) this.clear();
    });
    register(beginning, db, () => (this.#changedInTransaction = false));
  }

  /** Forgets every row. */
  clear(): void {
    this.#memo.clear();
    this.#changed();
  }

  /** Forgets one row. */
  forget(key: string): void {
    this.#memo.delete(key);
    this.#changed();
  }

  #changed(): void {
    if (this.#db.inTransaction) this.#changedInTransaction = true;
  }

  get<T>(key: string, read: () => T, keepAbsent = false): T {
    const inTransaction = this.#db.inTransaction;
    if (!inTransaction) this.#changedInTransaction = false;
    if (this.#memo.has(key)) return this.#memo.get(key) as T;
    const value = deepFreeze(read());
    if (inTransaction && this.#changedInTransaction) return value;
    if (value !== undefined || keepAbsent) this.#memo.set(key, value);
    return value;
  }
}
