import type { Clock } from './clock.js';
import type { Db } from './database.js';
import { STORE_UNAVAILABLE } from './store/port.js';

/**
 * Who runs the reactors, the schedule and the run queue when several processes share one log: a
 * lease row in the database (holder and expiry), taken and renewed in a write transaction. A
 * holder that stops renewing (killed, hung) loses it at its expiry and another process takes it.
 * The database is the arbiter; nothing is voted on.
 */
export class Leadership {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #holder: string;
  readonly #ttlMs: number;
  readonly #stmts;
  /** Until when (this process's clock) it may act as leader: set before the lease was written. */
  #until = Number.NEGATIVE_INFINITY;

  constructor(db: Db, clock: Clock, options: { holder: string; ttlMs: number; name?: string }) {
    this.#db = db;
    this.#clock = clock;
    this.#holder = options.holder;
    this.#ttlMs = options.ttlMs;
    const name = options.name ?? 'keel';
    db.exec(`CREATE TABLE IF NOT EXISTS ${LEADERSHIP_TABLE} (
      name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL)`);
    const take = db.prepare<[string, string, number, number]>(
      `INSERT INTO ${LEADERSHIP_TABLE} (name, holder, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
       WHERE ${LEADERSHIP_TABLE}.holder = excluded.holder OR ${LEADERSHIP_TABLE}.expires_at <= ?`,
    );
    const release = db.prepare<[string, string]>(
      `DELETE FROM ${LEADERSHIP_TABLE} WHERE name = ? AND holder = ?`,
    );
    const current = db.prepare<[string], { holder: string; expires_at: number }>(
      `SELECT holder, expires_at FROM ${LEADERSHIP_TABLE} WHERE name = ?`,
    );
    this.#stmts = {
      // One statement, so one write transaction: the expiry test and the take cannot interleave
      // with another process's.
      take: (now: number) => take.run(name, this.#holder, now + this.#ttlMs, now).changes > 0,
      release: () => release.run(name, this.#holder),
      current: () => current.get(name),
    };
  }

  get holder(): string {
    return this.#holder;
  }

  /** Whether this process leads now: it holds a lease that has not run out by its own clock. */
  get leading(): boolean {
    return this.#clock.now().getTime() < this.#until;
  }

  /** Take the lease if it is free or expired, or renew it if held; returns `leading`. */
  tryLead(): boolean {
    const now = this.#clock.now().getTime();
    let taken: boolean;
    try {
      taken = this.#stmts.take(now);
    } catch (err) {
      // Busy past the timeout, or the database out of reach: keep what is held until it runs
      // out, and try again next time.
      const code = (err as { code?: unknown }).code;
      if (code !== 'SQLITE_BUSY' && code !== STORE_UNAVAILABLE) throw err;
      taken = false;
    }
    // Measured from before the write: the lease in the table never outlives this belief.
    if (taken) this.#until = now + this.#ttlMs;
    return this.leading;
  }

  /** Give the lease up (a clean shutdown), so another process takes it at once. */
  release(): void {
    this.#until = Number.NEGATIVE_INFINITY;
    this.#stmts.release();
  }

  /** The lease as the table holds it (health, tests). */
  current(): { holder: string; expiresAt: number } | undefined {
    const row = this.#stmts.current();
    return row === undefined ? undefined : { holder: row.holder, expiresAt: row.expires_at };
  }
}

export const LEADERSHIP_TABLE = 'leadership';
