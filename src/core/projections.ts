import Database from 'better-sqlite3';
import type { Db } from './database.js';
import type { StoredEvent } from './events.js';
import { clearScheduleRows, scheduleProjection } from './schedule.js';

/** Reads the log in pages (a connection cannot write while it iterates). */
export type EventPages = (afterPosition: number, limit: number) => StoredEvent[];

/**
 * A read model: tables it owns, and an apply function built against a database. `setup` creates
 * the tables (IF NOT EXISTS) and prepares statements; the returned function is synchronous and
 * runs inside the append transaction.
 */
export interface Projection {
  readonly name: string;
  /** Bump to have the read model rebuilt from the log on the next start. */
  readonly version: number;
  readonly tables: readonly string[];
  /**
   * The tables (of `tables`) that authorization or issuance trusts: start-up and `keel audit
   * verify` rebuild this projection from the verified log and compare them row by row (ADR 0094).
   */
  readonly guarded?: readonly string[];
  /**
   * The event types the apply function reads: it is offered those alone, inline and in a rebuild.
   * Where a context exports the list of its own types, use it; add the types of other contexts
   * the read model reacts to (a workspace's rows go with `WorkspaceDeleted`). With
   * `KEEL_CHECK_PROJECTION_EVENTS=1` (every test project) each projection is offered the other
   * types too, and one whose apply writes for any of them fails the command, naming both.
   */
  readonly events: readonly string[];
  setup(db: Db): (event: StoredEvent) => void;
}

/** Where the tests turn the check of the `events` declarations on; never set in production. */
export const CHECK_PROJECTION_EVENTS = 'KEEL_CHECK_PROJECTION_EVENTS';

/** Whether this process checks the projections' `events` declarations. */
export const checkingProjectionEvents = (): boolean => process.env[CHECK_PROJECTION_EVENTS] === '1';

/** A projection's apply function wrote to the database for an event type it does not declare. */
export class UndeclaredEventWritten extends Error {
  constructor(projection: string, type: string) {
    super(
      `projection ${projection} changed the database for ${type}, an event type missing from its events`,
    );
    this.name = 'UndeclaredEventWritten';
  }
}

/**
 * What offers an event to the appliers (`appliers[i]` is `projections[i]`'s) whose projection
 * declares its type, in registration order. With `check`, on SQLite, every other applier is then
 * offered it too, and one that changes the database for it (SQLite's `total_changes()` moves)
 * throws {@link UndeclaredEventWritten}, which undoes the caller's transaction.
 */
export function eventRouter(
  db: Db,
  projections: readonly Projection[],
  appliers: readonly ((event: StoredEvent) => void)[],
  check = checkingProjectionEvents(),
): (event: StoredEvent) => void {
  const byType = new Map<string, ((event: StoredEvent) => void)[]>();
  projections.forEach((p, i) => {
    const apply = appliers[i];
    if (apply === undefined) throw new Error(`projection ${p.name} has no applier`);
    for (const type of new Set(p.events)) {
      const list = byType.get(type);
      if (list === undefined) byType.set(type, [apply]);
      else list.push(apply);
    }
  });
  const none: readonly ((event: StoredEvent) => void)[] = [];
  const routed = (event: StoredEvent): void => {
    for (const apply of byType.get(event.type) ?? none) apply(event);
  };
  if (!check || !(db instanceof Database)) return routed;
  const totalChanges = db.prepare<[], number>('SELECT total_changes()').pluck();
  const declared = projections.map((p) => new Set(p.events));
  return (event) => {
    routed(event);
    projections.forEach((p, i) => {
      if (declared[i]?.has(event.type) !== false) return;
      const before = totalChanges.get();
      appliers[i]?.(event);
      if (totalChanges.get() !== before) throw new UndeclaredEventWritten(p.name, event.type);
    });
  };
}

/** Rows per transaction while rebuilding; big enough to amortise commits, small enough for memory. */
const REBUILD_BATCH = 20_000;

export class Projections {
  readonly #db: Db;
  readonly #projections: readonly Projection[];
  readonly #check: boolean;
  #route: (event: StoredEvent) => void = () => undefined;

  /** `checkEvents` defaults to whether `KEEL_CHECK_PROJECTION_EVENTS` is `1`. */
  constructor(db: Db, projections: readonly Projection[], options: { checkEvents?: boolean } = {}) {
    const names = new Set<string>();
    const tables = new Set<string>();
    for (const p of projections) {
      if (names.has(p.name)) throw new Error(`projection ${p.name} is registered twice`);
      names.add(p.name);
      for (const t of p.tables) {
        if (tables.has(t)) throw new Error(`table ${t} is owned by two projections`);
        tables.add(t);
      }
    }
    this.#db = db;
    this.#projections = projections;
    this.#check = options.checkEvents ?? checkingProjectionEvents();
  }

  /** Sets up every projection and routes events to their appliers by type. */
  #setUp(): void {
    this.#route = this.#router(this.#projections);
  }

  /** Sets up `projections` and returns what offers each event to those that declare its type. */
  #router(projections: readonly Projection[]): (event: StoredEvent) => void {
    const appliers = projections.map((p) => p.setup(this.#db));
    return eventRouter(this.#db, projections, appliers, this.#check);
  }

  get list(): readonly Projection[] {
    return this.#projections;
  }

  /** Every table of every read model, in registration order. */
  get tables(): string[] {
    return this.#projections.flatMap((p) => [...p.tables]);
  }

  /**
   * Prepare every projection. Those whose stored version differs (or that are new) are rebuilt
   * from the log, alone: each owns its tables and its rows of the schedule table. Only a change to
   * the schedule projection itself rebuilds them all. The rest start as they are, so start-up does
   * not replay.
   */
  open(events: EventPages): { rebuilt: string[] } {
    const stored = new Map(
      this.#db
        .prepare<[], { name: string; version: number }>(
          'SELECT name, version FROM projection_versions',
        )
        .all()
        .map((r) => [r.name, r.version]),
    );
    const changed = this.#projections.filter((p) => stored.get(p.name) !== p.version);
    const stale = changed.some((p) => p.name === scheduleProjection.name)
      ? this.#projections
      : changed;
    if (stale.length > 0) this.#rebuild(stale, events);
    this.#setUp();
    return { rebuilt: stale.map((p) => p.name) };
  }

  /**
   * Rebuild the named read models alone from the log, leaving every other table as it is: what
   * `open` does for a projection whose version changed.
   */
  rebuildOnly(names: readonly string[], events: EventPages): void {
    const chosen = this.#projections.filter((p) => names.includes(p.name));
    const unknown = names.filter((n) => !chosen.some((p) => p.name === n));
    if (unknown.length > 0) throw new Error(`no projection named ${unknown.join(', ')}`);
    // The schedule table holds every projection's rows: rebuilding it is rebuilding them all.
    const whole = chosen.some((p) => p.name === scheduleProjection.name);
    this.#rebuild(whole ? this.#projections : chosen, events);
    this.#setUp();
  }

  /**
   * Inline apply, inside the caller's transaction: each projection that declares the event's type
   * sees it, in registration order.
   */
  apply = (event: StoredEvent): void => {
    this.#route(event);
  };

  /** Drop every read model and rebuild all of them from the log. */
  rebuildAll(events: EventPages): void {
    this.#rebuild(this.#projections, events);
    this.#setUp();
  }

  #rebuild(projections: readonly Projection[], events: EventPages): void {
    const db = this.#db;
    const whole = projections.some((p) => p.name === scheduleProjection.name);
    db.transaction(() => {
      for (const p of projections) for (const t of p.tables) db.exec(`DROP TABLE IF EXISTS "${t}"`);
      if (!whole) for (const p of projections) clearScheduleRows(db, p.name);
    })();
    const route = this.#router(projections);
    const applyPage = db.transaction((items: StoredEvent[]) => {
      for (const e of items) route(e);
    });
    for (let after = 0; ;) {
      const page = events(after, REBUILD_BATCH);
      if (page.length === 0) break;
      applyPage(page);
      after = page[page.length - 1]!.position;
    }
    const save = db.prepare(
      'INSERT INTO projection_versions (name, version) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET version = excluded.version',
    );
    db.transaction(() => {
      for (const p of projections) save.run(p.name, p.version);
    })();
  }

  /** Every row of every read-model table, in a stable order: for replay comparisons. */
  dump(): Record<string, unknown[]> {
    const out: Record<string, unknown[]> = {};
    for (const table of this.tables) {
      const rows = this.#db
        .prepare(`SELECT * FROM "${table}"`)
        .all()
        .map((r) => JSON.stringify(r));
      out[table] = rows.sort().map((r) => JSON.parse(r) as unknown);
    }
    return out;
  }
}
