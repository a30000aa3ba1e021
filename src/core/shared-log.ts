import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from './clock.js';
import type { Db } from './database.js';
import { Leadership } from './leadership.js';
import { LogWatch } from './log-watch.js';
import type { Logger } from './logger.js';
import type { Reactors } from './reactors.js';
import { anotherProcessCommitted, type ForeignChange } from './read-memo.js';
import { STORE_UNAVAILABLE } from './store/port.js';

/** How long a leadership lease lasts unrenewed (at least five poll intervals). */
const LEADER_TTL_MS = 5000;

/** The lease time of leadership and of the work a leader claims: 5 s, or five poll intervals. */
export const leaseTtlMs = (pollIntervalMs: number): number =>
  Math.max(LEADER_TTL_MS, 5 * pollIntervalMs);

/** A lease holder's name: process, host, and a random part (a pid is reused after a restart). */
export const holderName = (): string => `${process.pid}@${hostname()}/${randomUUID()}`;
/** How often a worker looks for other processes' commits besides each request. */
const WATCH_INTERVAL_MS = 20;

/**
 * One process's part in sharing the log with other processes (`--workers`, ADR 0080, or other
 * nodes on one PostgreSQL database, ADR 0081): it forgets remembered rows when another process
 * commits, and runs reactors and timers only while it holds the leadership lease.
 */
export class SharedLog {
  readonly #db: Db;
  readonly #logger: Logger;
  readonly #reactors: Reactors;
  readonly #watch: LogWatch;
  readonly #leadership: Leadership;
  readonly #heard: (() => Promise<void>) | undefined;

  constructor(
    db: Db,
    version: () => number,
    clock: Clock,
    logger: Logger,
    reactors: Reactors,
    pollIntervalMs: number,
    /** What to wait for before `version` counts every commit acknowledged elsewhere (`logHeard`). */
    heard?: () => Promise<void>,
    /** What those commits appended, as far as they said (`logChanges`). */
    changes?: () => ForeignChange,
  ) {
    this.#db = db;
    this.#heard = heard;
    this.#logger = logger;
    this.#reactors = reactors;
    this.#leadership = new Leadership(db, clock, {
      holder: holderName(),
      ttlMs: leaseTtlMs(pollIntervalMs),
    });
    this.#watch = new LogWatch(version, changes);
    this.#watch.onForeignCommit((change) => {
      anotherProcessCommitted(db, change);
      // Another process appended: the leader's reactors whose types it may hold read what it wrote.
      if (this.leading) reactors.heard(change);
    });
    // Whatever was remembered before the watch began may predate another process's commit.
    anotherProcessCommitted(db);
  }

  /** Whether this process runs the reactors and timers now. */
  get leading(): boolean {
    return this.#leadership.leading;
  }

  /**
   * Before serving a request: forget what another process's commit may have changed, so a write
   * another process acknowledged before the request came is read back. On PostgreSQL that first
   * waits for a round trip (the returned promise): the other node's notification travels on its
   * own and may come after the request. With the store out of reach everything remembered is
   * forgotten, so the request reads the store and fails like any other that needs it (503),
   * instead of answering from memory.
   */
  check(): Promise<void> | undefined {
    if (this.#heard === undefined) {
      this.#checkNow();
      return undefined;
    }
    return this.#heard().then(() => this.#checkNow());
  }

  #checkNow(): void {
    try {
      this.#watch.check();
    } catch (err) {
      if ((err as { code?: unknown }).code !== STORE_UNAVAILABLE) throw err;
      anotherProcessCommitted(this.#db);
    }
  }

  /**
   * Take or renew the lease (every poll); says so in the log when this process starts or stops
   * leading. On taking it over, the reactors start from the checkpoints the last leader saved.
   */
  lead(): boolean {
    const was = this.#leadership.leading;
    const now = this.#leadership.tryLead();
    if (now !== was) {
      this.#logger.info(
        { holder: this.#leadership.holder },
        now ? 'leading: reactors and timers run here' : 'standing by: another process leads',
      );
      if (now) this.#reactors.resume();
    }
    return now;
  }

  /** Checks for other processes' commits on a timer too (work not driven by requests). */
  watchTimer(): NodeJS.Timeout {
    let unreachable = false;
    return setInterval(() => {
      try {
        this.#watch.check();
        unreachable = false;
      } catch (err) {
        // The database out of reach (PostgreSQL restarting or failing over): said once, and
        // asked again on the next tick; requests meanwhile fail with the same error.
        if ((err as { code?: unknown }).code !== STORE_UNAVAILABLE) throw err;
        if (!unreachable) this.#logger.warn({ err }, 'the store is out of reach; retrying');
        unreachable = true;
      }
    }, WATCH_INTERVAL_MS);
  }

  /** Gives the lease up (shutdown), so another process takes it at once. */
  release(): void {
    if (this.#db.open) this.#leadership.release();
  }
}
