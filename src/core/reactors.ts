import { unsynced, type Db } from './database.js';
import { AuditError } from './chain.js';
import { typeMatches, type EventStore, type LogEntry } from './event-store.js';
import type { StoredEvent } from './events.js';
import type { Logger } from './logger.js';
import { touches, type ForeignChange } from './read-memo.js';

/**
 * A process manager: reads the log from its stored checkpoint and reacts, usually by sending
 * commands. Delivery is at least once, so `react` must tolerate seeing an event again.
 */
export interface Reactor {
  readonly name: string;
  /**
   * Event types it cares about (a name, or a prefix ending in `*`: `Run*`). The others are
   * filtered out by SQLite and only move its checkpoint. Without it, a reactor sees every event.
   */
  readonly types?: readonly string[];
  react(event: StoredEvent): Promise<void>;
}

const PAGE = 500;
/**
 * A reactor that only passes over events it does not care about saves its checkpoint once it is
 * this far ahead of the saved one, not after every pass: after a crash it re-reads at most this
 * many positions (filtered by type, so cheaply), and it saves a write per append meanwhile.
 */
const CHECKPOINT_LAG = 1000;

export class Reactors {
  readonly #db: Db;
  readonly #store: EventStore;
  readonly #logger: Logger;
  readonly #reactors: readonly Reactor[];
  readonly #running = new Map<string, Promise<void>>();
  readonly #again = new Set<string>();
  readonly #failing = new Set<string>();
  /** How far each reactor has read (its saved checkpoint may be up to CHECKPOINT_LAG behind). */
  readonly #progress = new Map<string, number>();
  /** Each reactor's checkpoint as this process last read or saved it (`resume` forgets it). */
  readonly #saved = new Map<string, number>();
  readonly #readers = new Map<string, (after: number, limit: number) => StoredEvent[]>();
  /**
   * Filtered reactors that may have events of their types past their progress. A clean one, woken
   * by appends it has no types in, moves past them without reading the log.
   */
  readonly #dirty = new Set<string>();
  /** Whether each filtered reactor wants an event type, by reactor and type. */
  readonly #wanted = new Map<string, Map<string, boolean>>();
  /**
   * The last position of an append this process was told of, when every position up to it was
   * told of (no other writer between); -1 until the first append, or after a gap.
   */
  #toldEnd = -1;
  readonly #stmts;
  /**
   * Checkpoints are saved without a disk sync of their own (ADR 0092): with `--sync full` a
   * reactor's pass would otherwise cost a second sync per command it saw. Lost on a power cut,
   * a checkpoint only has its events delivered again, which reactors tolerate.
   */
  readonly #unsynced: <T>(write: () => T) => T;
  #scheduled = false;
  #stopped = false;

  constructor(db: Db, store: EventStore, logger: Logger, reactors: readonly Reactor[]) {
    this.#db = db;
    this.#store = store;
    this.#logger = logger;
    this.#reactors = reactors;
    for (const r of reactors) this.#dirty.add(r.name);
    this.#stmts = {
      get: db.prepare<[string], { position: number }>(
        'SELECT position FROM checkpoints WHERE name = ?',
      ),
      set: db.prepare(
        'INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position',
      ),
    };
    this.#unsynced = unsynced(db);
  }

  checkpoint(name: string): number {
    return this.#stmts.get.get(name)?.position ?? 0;
  }

  /**
   * Wake the reactors: after an append (with its events, or with the positions and types other
   * processes appended, as a batch began), or on a poll tick (without). Wake-ups are coalesced and
   * run after the current turn, so a burst of appends costs one pass, not one per append. An
   * append wakes a filtered reactor for a read of the log only if it holds one of the reactor's
   * types; a poll tick, or appends after a gap (another writer not told of), wake every reactor
   * for a read.
   */
  notify(appended?: readonly LogEntry[]): void {
    this.#mark(appended);
    this.#schedule();
  }

  /**
   * Another process committed, and said what it appended (its positions are told later, or never:
   * `notify`). Wakes for a read only the reactors whose types it may hold; the others are not
   * woken, and keep what they knew. Unknown: every reactor reads.
   */
  heard(change: ForeignChange): void {
    if (change === 'unknown') return this.notify();
    let marked = false;
    for (const r of this.#reactors) {
      if (r.types !== undefined && !touches(change, r.types)) continue;
      this.#dirty.add(r.name);
      marked = true;
    }
    if (marked) this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#stopped || this.#reactors.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#stopped) return;
      for (const r of this.#reactors) this.#wake(r);
    });
  }

  #mark(appended: readonly LogEntry[] | undefined): void {
    if (appended === undefined) {
      for (const r of this.#reactors) this.#dirty.add(r.name);
      return;
    }
    const first = appended[0];
    const contiguous =
      first !== undefined && this.#toldEnd >= 0 && first.position === this.#toldEnd + 1;
    this.#toldEnd = appended[appended.length - 1]?.position ?? -1;
    for (const r of this.#reactors) {
      if (!contiguous || appended.some((e) => this.#wants(r, e.type))) this.#dirty.add(r.name);
    }
  }

  #wants(reactor: Reactor, type: string): boolean {
    if (reactor.types === undefined) return true;
    let byType = this.#wanted.get(reactor.name);
    if (byType === undefined) this.#wanted.set(reactor.name, (byType = new Map<string, boolean>()));
    let wanted = byType.get(type);
    if (wanted === undefined) {
      wanted = reactor.types.some((pattern) => typeMatches(pattern, type));
      byType.set(type, wanted);
    }
    return wanted;
  }

  /**
   * Forget what this process remembers of the reactors' progress and read their checkpoints
   * again: another process sharing the log moved them while this one did not run them
   * (`--workers`, on taking the leadership).
   */
  resume(): void {
    this.#saved.clear();
    this.#progress.clear();
    this.#toldEnd = -1;
    this.notify();
  }

  /** Stop waking reactors and wait for the passes under way (shutdown). */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.allSettled([...this.#running.values()]);
  }

  /**
   * Run every reactor until none has anything left to do (tests and shutdown use it). Reactors
   * that fail keep their checkpoint and are left for the next notify.
   */
  async settle(): Promise<void> {
    for (const r of this.#reactors) this.#dirty.add(r.name);
    for (let round = 0; round < 1000; round++) {
      this.#failing.clear();
      await Promise.all(this.#reactors.map((r) => this.#drain(r)));
      const last = this.#store.lastPosition();
      const behind = this.#reactors.some(
        (r) => !this.#failing.has(r.name) && this.#progressOf(r) < last,
      );
      if (!behind && this.#running.size === 0) return;
    }
    throw new Error('reactors did not settle after 1000 rounds');
  }

  /**
   * A pass nobody awaits: one that cannot read the log (the store out of reach while a database
   * fails over, say) is logged and made again on the next wake-up, instead of ending the process.
   */
  #wake(reactor: Reactor): void {
    this.#drain(reactor).catch((err: unknown) => {
      this.#dirty.add(reactor.name);
      this.#logger.error(
        { err, reactor: reactor.name },
        'reactor could not read the log; it tries again when next woken',
      );
    });
  }

  #drain(reactor: Reactor): Promise<void> {
    const running = this.#running.get(reactor.name);
    if (running !== undefined) {
      this.#again.add(reactor.name);
      return running;
    }
    // Recorded as running before it starts, so a reactor whose first step appends (and so wakes
    // the reactors) is not entered twice.
    const run = Promise.resolve()
      .then(() => this.#run(reactor))
      .finally(() => {
        this.#running.delete(reactor.name);
        if (this.#again.delete(reactor.name)) this.#wake(reactor);
      });
    this.#running.set(reactor.name, run);
    return run;
  }

  /**
   * The end of the log a filtered reactor may move to without reading: short of this process's
   * batches that are not yet durable, which are told of (`notify`) once they are.
   */
  #settledEnd(): number {
    const unannounced = this.#store.unannouncedFrom();
    return unannounced === undefined ? this.#store.knownEnd() : unannounced - 1;
  }

  #progressOf(reactor: Reactor): number {
    return this.#progress.get(reactor.name) ?? this.checkpoint(reactor.name);
  }

  /**
   * One pass: pages of the log after the checkpoint. The checkpoint is saved after each page that
   * had events for the reactor and before a failing event, so after a crash at most one page is
   * delivered again (reactors are idempotent: delivery is at least once).
   */
  async #run(reactor: Reactor): Promise<void> {
    const filtered = reactor.types !== undefined;
    let reader = this.#readers.get(reactor.name);
    if (reader === undefined) {
      const types = reactor.types;
      reader =
        types === undefined
          ? (after, limit) => this.#store.readAll(after, limit)
          : this.#store.readerOf(types);
      this.#readers.set(reactor.name, reader);
    }
    let saved = this.#saved.get(reactor.name);
    if (saved === undefined) this.#saved.set(reactor.name, (saved = this.checkpoint(reactor.name)));
    let position = Math.max(saved, this.#progress.get(reactor.name) ?? 0);
    const save = (at: number) => {
      this.#unsynced(() => this.#stmts.set.run(reactor.name, at));
      saved = at;
      this.#saved.set(reactor.name, at);
    };
    if (filtered && !this.#dirty.has(reactor.name) && this.#toldEnd === this.#settledEnd()) {
      // Every append up to the end was told of, and those since its last read held none of its
      // types.
      position = Math.max(position, this.#toldEnd);
      this.#progress.set(reactor.name, position);
      if (position - saved >= CHECKPOINT_LAG) save(position);
      return;
    }
    this.#dirty.delete(reactor.name);
    while (!this.#stopped) {
      // Read together with the page (no await between): what the filter skipped is behind `end`.
      // An end that is too low only leaves skipped positions to be filtered again next time.
      const end = this.#settledEnd();
      // This process's batches not yet durable are read once they are announced, not before.
      const unannounced = this.#store.unannouncedFrom();
      const read = reader(position, PAGE);
      const page = unannounced === undefined ? read : read.filter((e) => e.position < unannounced);
      for (const event of page) {
        try {
          await reactor.react(event);
        } catch (err) {
          save(position);
          this.#progress.set(reactor.name, position);
          this.#failing.add(reactor.name);
          this.#dirty.add(reactor.name);
          this.#logger.error(
            { err, reactor: reactor.name, position: event.position, type: event.type },
            'reactor failed; it will retry from this event',
          );
          return;
        }
        position = event.position;
      }
      const done = page.length < PAGE;
      if (done && filtered) position = Math.max(position, end);
      this.#progress.set(reactor.name, position);
      if (page.length > 0 || position - saved >= CHECKPOINT_LAG) {
        if (position !== saved) save(position);
      }
      if (done) return;
    }
  }

  get db(): Db {
    return this.#db;
  }
}

/**
 * Start-up refuses a log that ends before a reactor's checkpoint: the log lost events the
 * reactor already acted on (a truncated or restored-from-older copy), and new events at those
 * positions would be passed over unseen.
 */
export function checkReactorCheckpoints(db: Db, end: number): void {
  const ahead = db
    .prepare<[number], { name: string; position: number }>(
      'SELECT name, position FROM checkpoints WHERE position > ? ORDER BY name',
    )
    .all(end);
  if (ahead.length === 0) return;
  throw new AuditError(
    `the event log ends at position ${end} but reactor checkpoints are past it (${ahead
      .map((c) => `${c.name} at ${c.position}`)
      .join(', ')}): events were removed from the log; run keel audit verify`,
  );
}
