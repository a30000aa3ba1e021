import type { EventStore, ForeignAppends } from './event-store.js';
import { ConcurrencyError, IllegalTransitionError } from './errors.js';
import type { AuditMetadata, NewEvent, StoredEvent } from './events.js';
import type { Clock } from './clock.js';
import { COMMIT_IS_DURABLE, GroupCommit, type Durability } from './group-commit.js';
import { Lru } from './lru.js';
import { transactionBegins } from './read-memo.js';

/**
 * How a stream's events fold into a state, and which proposed events that state allows.
 * The fold is pure; `accepts` is the legality check every proposed event must pass.
 */
export interface Decider<S, E extends NewEvent> {
  initialState(): S;
  evolve(state: S, event: StoredEvent<E>): S;
  accepts?(state: S, event: E): boolean;
  /** A short name for the state, for error messages. */
  describe?(state: S): string;
}

/** A stream's state after its events up to `version`. */
export interface StreamFold<S> {
  state: S;
  version: number;
}

export interface Handled<S, E extends NewEvent> {
  events: StoredEvent<E>[];
  state: S;
  version: number;
}

const CACHE_LIMIT = 10_000;

type Fold = Lru<string, { version: number; state: unknown }>;

/** What a batch kept: announced, and its folds trusted, once it is durable. */
interface Written {
  events: StoredEvent[];
  streams: string[];
  folds: [Fold, string][];
}

/**
 * A remembered fold of `stream`, after another process appended `foreign`'s events to it: folded
 * on when they follow its version, else forgotten (it is read again when next needed).
 */
function carryForward(
  fold: Fold,
  decider: Decider<unknown, NewEvent>,
  stream: string,
  foreign: ForeignAppends,
): void {
  const hit = fold.get(stream);
  if (hit === undefined) return;
  const events = foreign.events(stream);
  if (events[0]?.version !== hit.version + 1) {
    fold.delete(stream);
    return;
  }
  let state = hit.state;
  for (const e of events) state = decider.evolve(state, e);
  fold.set(stream, { version: hit.version + events.length, state });
}

/**
 * Load → decide → check → append. The fold of each stream is cached by (decider, stream,
 * version); the log stays the truth, so a stale cache entry is simply refolded.
 *
 * `handle` and `atomically` go through group commit (DESIGN §10): the command is decided when its
 * batch is written, against the state every command before it left, and its promise settles once
 * the batch is durable.
 */
export class CommandHandler {
  readonly #store: EventStore;
  readonly #clock: Clock;
  readonly #cache = new WeakMap<object, Fold>();
  /** Every decider's folds (`#cache`'s values), with their decider. */
  readonly #folds = new Map<Fold, Decider<unknown, NewEvent>>();
  readonly #batches: GroupCommit<Written>;
  /** Folds written by the batch item running now, and by the batch: forgotten if undone. */
  #itemFolds: [Fold, string][] = [];
  #batchFolds: [Fold, string][] = [];

  /** `batchBudgetMs`: how long a batch may hold the event loop (tests set 0: one command each). */
  constructor(
    store: EventStore,
    clock: Clock,
    durability: Durability = COMMIT_IS_DURABLE,
    options: { batchBudgetMs?: number } = {},
  ) {
    this.#store = store;
    this.#clock = clock;
    const forget = (folds: [Fold, string][]) => {
      for (const [fold, stream] of folds) fold.delete(stream);
    };
    this.#batches = new GroupCommit(
      store.db,
      durability,
      {
        opening: () => store.batch.opening(),
        start: (opened) => {
          transactionBegins(store.db);
          // Folds of streams another process appended to since this one's last batch are
          // carried forward by what it appended, or forgotten when that is not all known.
          const foreign = store.batch.begin(opened);
          for (const [fold, decider] of this.#folds) {
            if (foreign === 'all') fold.clear();
            else for (const stream of foreign.streams) carryForward(fold, decider, stream, foreign);
          }
        },
        begin: (unprotected) => {
          this.#itemFolds = [];
          store.batch.itemStart(unprotected);
        },
        undone: () => {
          forget(this.#itemFolds);
          this.#itemFolds = [];
          store.batch.itemUndone();
        },
        kept: () => {
          this.#batchFolds.push(...this.#itemFolds);
          this.#itemFolds = [];
          store.batch.itemKept();
        },
        ended: (): Written => {
          const written = { ...store.batch.end(), folds: this.#batchFolds };
          this.#batchFolds = [];
          return written;
        },
        aborted: () => {
          forget(this.#batchFolds);
          forget(this.#itemFolds);
          this.#batchFolds = [];
          this.#itemFolds = [];
          store.batch.aborted();
        },
        failed: (written) => {
          forget(written.folds);
          store.batch.failed(written);
        },
        appended: (written) => ({
          types: [...new Set(written.events.map((e) => e.type))],
          streams: [...new Set(written.events.map((e) => e.stream))],
        }),
        durable: (written) => store.batch.committed(written.events),
      },
      options.batchBudgetMs,
    );
  }

  /**
   * Decides and appends one command in the next batch; settles with what was stored once it is
   * durable, or with the decision's refusal.
   */
  handle<S, E extends NewEvent>(
    stream: string,
    decider: Decider<S, E>,
    decide: (state: S, version: number) => readonly E[],
    metadata: AuditMetadata,
    options: { newStream?: boolean } = {},
  ): Promise<Handled<S, E>> {
    // One command writes only in its append, which undoes itself when it fails.
    return this.#batches.submit(() => this.handleSync(stream, decider, decide, metadata, options), {
      undoesItself: true,
    });
  }

  /**
   * Runs `fn` as one command of the next batch: every `handleSync` inside it commits together or
   * not at all (a savepoint of the batch's transaction). Settles once durable.
   */
  atomically<T>(fn: () => T): Promise<T> {
    return this.#batches.submit(fn);
  }

  /** Whether the caller runs inside a batch (a `handle` decision or an `atomically` function). */
  get inBatch(): boolean {
    return this.#batches.inBatch;
  }

  /** Settles once every command submitted so far is durable (or refused). */
  drained(): Promise<void> {
    return this.#batches.drained();
  }

  /** Settles once every command submitted so far is durable; then lets go of the sync's file. */
  close(): Promise<void> {
    return this.#batches.close();
  }

  /**
   * The stream's fold: remembered, or read. `seed` is the fold at one of the stream's versions as a
   * read model kept in the log's transactions holds it: only the events after it are then read
   * and folded, where a stream of large events (a CRL's) would otherwise be read whole.
   */
  load<S, E extends NewEvent>(
    stream: string,
    decider: Decider<S, E>,
    seed?: StreamFold<S>,
  ): { state: S; version: number } {
    const cache = this.#cacheFor(decider);
    const hit = cache.get(stream);
    // A remembered fold is checked against the stream's version; without one, the stream is read
    // (one query either way).
    if (hit !== undefined && hit.version === this.#store.version(stream)) {
      return { state: hit.state as S, version: hit.version };
    }
    // A seed past the stream's end is no fold of it: the stream is read whole.
    const from =
      seed !== undefined && seed.version <= this.#store.version(stream) ? seed : undefined;
    let state = from?.state ?? decider.initialState();
    const events = (
      from === undefined
        ? this.#store.readStream(stream)
        : this.#store.readStreamAfter(stream, from.version)
    ) as StoredEvent<E>[];
    for (const e of events) state = decider.evolve(state, e);
    const loaded = { state, version: events.at(-1)?.version ?? from?.version ?? 0 };
    cache.set(stream, loaded);
    if (this.#batches.inBatch) this.#itemFolds.push([cache, stream]);
    return loaded;
  }

  /**
   * The command decided and appended now, synchronously: inside `atomically` (as part of its
   * batch), or outside any batch as a transaction of its own.
   *
   * `options.newStream`: the caller has just made the stream's id (a random id or serial), so the
   * stream is taken to be empty without reading it. The assumption is checked like a cached fold:
   * the append refuses a stream that exists, which is then read and decided again.
   */
  handleSync<S, E extends NewEvent>(
    stream: string,
    decider: Decider<S, E>,
    decide: (state: S, version: number) => readonly E[],
    metadata: AuditMetadata,
    options: { newStream?: boolean; seed?: StreamFold<S> } = {},
  ): Handled<S, E> {
    const cache = this.#cacheFor(decider);
    // Optimistic: trust the cached fold; the append's version check is the arbiter, and a stale
    // cache (another writer appended) costs one refold and a second decision.
    for (let attempt = 0; ; attempt++) {
      const cached =
        attempt > 0
          ? undefined
          : (cache.get(stream) ??
            (options.newStream === true
              ? { state: decider.initialState(), version: 0 }
              : undefined));
      const { state, version } =
        (cached as { state: S; version: number } | undefined) ??
        this.load(stream, decider, options.seed);
      let proposed: readonly E[];
      try {
        proposed = this.#decideAndCheck(stream, decider, decide, state, version, metadata);
      } catch (err) {
        // A refusal based on a stale cache is not to be believed: refold and decide again.
        if (cached !== undefined && this.#store.version(stream) !== version) {
          cache.delete(stream);
          continue;
        }
        throw err;
      }
      if (proposed.length === 0) {
        // Nothing to do, unless the cached state was stale: check before answering so.
        if (cached !== undefined && this.#store.version(stream) !== version) {
          cache.delete(stream);
          continue;
        }
        return { events: [], state, version };
      }
      // Append, with the inline projections, in one transaction.
      let events: StoredEvent<E>[];
      try {
        events = this.#store.append(stream, proposed, { expectedVersion: version, metadata });
      } catch (err) {
        if (err instanceof ConcurrencyError && cached !== undefined) {
          cache.delete(stream);
          continue;
        }
        throw err;
      }
      // Fold what was stored, so the state carries the stored times and positions.
      let folded = state;
      for (const e of events) folded = decider.evolve(folded, e);
      const newVersion = version + events.length;
      cache.set(stream, { state: folded, version: newVersion });
      if (this.#batches.inBatch) this.#itemFolds.push([cache, stream]);
      return { events, state: folded, version: newVersion };
    }
  }

  /** Decide, then check every proposed event against the state the earlier ones lead to. */
  #decideAndCheck<S, E extends NewEvent>(
    stream: string,
    decider: Decider<S, E>,
    decide: (state: S, version: number) => readonly E[],
    state: S,
    version: number,
    metadata: AuditMetadata,
  ): readonly E[] {
    const proposed = decide(state, version);
    let next = state;
    for (let i = 0; i < proposed.length; i++) {
      const event = proposed[i]!;
      if (decider.accepts !== undefined && !decider.accepts(next, event)) {
        throw new IllegalTransitionError(
          stream,
          decider.describe?.(next) ?? 'its state',
          event.type,
        );
      }
      // Only a later event needs the state this one leads to.
      if (i < proposed.length - 1) {
        next = decider.evolve(next, this.#provisional(stream, version + i + 1, event, metadata));
      }
    }
    return proposed;
  }

  #provisional<E extends NewEvent>(
    stream: string,
    version: number,
    event: E,
    metadata: AuditMetadata,
  ): StoredEvent<E> {
    return {
      ...event,
      position: 0,
      stream,
      version,
      time: this.#clock.now().toISOString(),
      metadata,
      hash: '',
    };
  }

  #cacheFor<S, E extends NewEvent>(
    decider: Decider<S, E>,
  ): Lru<string, { version: number; state: unknown }> {
    let cache = this.#cache.get(decider);
    if (cache === undefined) {
      cache = new Lru(CACHE_LIMIT);
      this.#cache.set(decider, cache);
      this.#folds.set(cache, decider);
    }
    return cache;
  }
}
