import type { Clock } from './clock.js';
import type { Db, Statement } from './database.js';
import type { Projection } from './projections.js';
import type { Logger } from './logger.js';

/**
 * Due times live in a read model (DESIGN rule 4): context projections put and remove rows as
 * events happen, so after a restart (or a replay) every timer is back. The scheduler only polls.
 */
export interface ScheduleEntry {
  key: string;
  kind: string;
  dueAt: string;
  data: unknown;
  /**
   * The accessor of the secrets engine mount the entry belongs to: it never fires once that
   * mount is disabled (a re-enabled path is a new mount, with a new accessor).
   */
  mount?: string;
}

export const SCHEDULE_TABLE = 'schedule';

/**
 * The schedule table belongs to this projection; context projections write rows into it, each
 * row tagged with the projection that wrote it (`owner`), so one projection's rebuild clears and
 * rewrites only its own rows. A change to this projection's version rebuilds every read model.
 */
export const scheduleProjection: Projection = {
  name: 'schedule',
  version: 3,
  tables: [SCHEDULE_TABLE],
  // It reads no event: the projections that own the rows write them.
  events: [],
  setup(db) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${SCHEDULE_TABLE} (
      key TEXT PRIMARY KEY, owner TEXT NOT NULL, kind TEXT NOT NULL, due_at TEXT NOT NULL,
      data TEXT NOT NULL, mount TEXT)`);
    db.exec(`CREATE INDEX IF NOT EXISTS schedule_due ON ${SCHEDULE_TABLE} (due_at)`);
    db.exec(`CREATE INDEX IF NOT EXISTS schedule_owner ON ${SCHEDULE_TABLE} (owner)`);
    return () => undefined;
  },
};

/** Drop the schedule rows a projection wrote (before that projection alone is rebuilt). */
export function clearScheduleRows(db: Db, owner: string): void {
  scheduleProjection.setup(db);
  db.prepare(`DELETE FROM ${SCHEDULE_TABLE} WHERE owner = ?`).run(owner);
}

/** Statements for writing schedule rows from inside the apply of the projection `owner`. */
export function scheduleRows(
  db: Db,
  owner: string,
): {
  put(entry: ScheduleEntry): void;
  remove(key: string): void;
} {
  scheduleProjection.setup(db);
  const put = db.prepare(
    `INSERT INTO ${SCHEDULE_TABLE} (key, owner, kind, due_at, data, mount) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, kind = excluded.kind,
       due_at = excluded.due_at, data = excluded.data, mount = excluded.mount`,
  );
  const remove = db.prepare(`DELETE FROM ${SCHEDULE_TABLE} WHERE key = ? AND owner = ?`);
  return {
    put: (e) =>
      put.run(e.key, owner, e.kind, e.dueAt, JSON.stringify(e.data ?? null), e.mount ?? null),
    remove: (key) => remove.run(key, owner),
  };
}

/** What happens when an entry of a kind falls due. It must send a command that moves or removes the row. */
export interface Timer {
  kind: string;
  fire(entry: ScheduleEntry): Promise<void>;
}

const MAX_BACKOFF_MS = 5 * 60_000;

export class Scheduler {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #timers: Map<string, Timer>;
  /** Failed entries wait before the next attempt; in memory only as a courtesy, the row stays due. */
  readonly #retryAfter = new Map<string, { at: number; failures: number }>();
  /** The due times a tick is firing now, by key and due time. */
  readonly #firing = new Set<string>();
  #dueAt: Statement<[string], { due_at: string }> | undefined;

  readonly #mounted: (accessor: string) => boolean;

  /** `mounted`: whether the secrets engine mount with this accessor is enabled. */
  constructor(
    db: Db,
    clock: Clock,
    logger: Logger,
    timers: readonly Timer[],
    mounted: (accessor: string) => boolean = () => true,
  ) {
    this.#db = db;
    this.#clock = clock;
    this.#logger = logger;
    this.#timers = new Map(timers.map((t) => [t.kind, t]));
    this.#mounted = mounted;
  }

  /** An entry's due time as its row holds it now (prepared once the table is there). */
  #dueAtNow(key: string): string | undefined {
    this.#dueAt ??= this.#db.prepare<[string], { due_at: string }>(
      `SELECT due_at FROM ${SCHEDULE_TABLE} WHERE key = ?`,
    );
    return this.#dueAt.get(key)?.due_at;
  }

  /** The entries due at `now`; an entry of a disabled mount is never due (it is left in place). */
  due(now = this.#clock.now()): ScheduleEntry[] {
    return this.#db
      .prepare<
        [string],
        { key: string; kind: string; due_at: string; data: string; mount: string | null }
      >(
        `SELECT key, kind, due_at, data, mount FROM ${SCHEDULE_TABLE} WHERE due_at <= ? ORDER BY due_at, key`,
      )
      .all(now.toISOString())
      .filter((r) => r.mount === null || this.#mounted(r.mount))
      .map((r) => ({
        key: r.key,
        kind: r.kind,
        dueAt: r.due_at,
        data: JSON.parse(r.data) as unknown,
        ...(r.mount === null ? {} : { mount: r.mount }),
      }));
  }

  /**
   * Fire every due entry once. Returns how many fired successfully.
   *
   * Ticks overlap: the poll starts one every interval, and a timer may outlast it (an ACME
   * validation waits up to 10 s). A fired entry stays due until the command its timer sends is
   * durable, so a tick leaves alone a due time another tick is firing, and one whose row changed
   * since it read the due entries (another tick fired it, and its command moved the row). A row
   * moved to a new due time is a new one: a rotation whose attempt never reports back is resumed
   * at its resume time, though that attempt is still in hand.
   */
  async tick(): Promise<number> {
    const now = this.#clock.now().getTime();
    let fired = 0;
    for (const entry of this.due()) {
      const retry = this.#retryAfter.get(entry.key);
      if (retry !== undefined && retry.at > now) continue;
      const timer = this.#timers.get(entry.kind);
      if (timer === undefined) continue;
      const firing = `${entry.key}\n${entry.dueAt}`;
      if (this.#firing.has(firing) || this.#dueAtNow(entry.key) !== entry.dueAt) continue;
      this.#firing.add(firing);
      try {
        await timer.fire(entry);
        this.#retryAfter.delete(entry.key);
        fired += 1;
      } catch (err) {
        const failures = (retry?.failures ?? 0) + 1;
        const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (failures - 1));
        this.#retryAfter.set(entry.key, { at: now + wait, failures });
        this.#logger.warn(
          { err, key: entry.key, kind: entry.kind, failures },
          'timer failed; will retry',
        );
      } finally {
        this.#firing.delete(firing);
      }
    }
    return fired;
  }
}
