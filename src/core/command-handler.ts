import type { EventStore } from './event-store.js';
import { IllegalTransitionError } from './errors.js';
import type { AuditMetadata, NewEvent, StoredEvent } from './events.js';
import type { Clock } from './clock.js';

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

export interface Handled<S, E extends NewEvent> {
  events: StoredEvent<E>[];
  state: S;
  version: number;
}

const CACHE_LIMIT = 10_000;

/**
 * Load → decide → check → append. The fold of each stream is cached by (decider, stream,
 * version); the log stays the truth, so a stale cache entry is simply refolded.
 */
export class CommandHandler {
  readonly #store: EventStore;
  readonly #clock: Clock;
  readonly #cache = new WeakMap<object, Map<string, { version: number; state: unknown }>>();

  constructor(store: EventStore, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  load<S, E extends NewEvent>(
    stream: string,
    decider: Decider<S, E>,
  ): { state: S; version: number } {
    const cache = this.#cacheFor(decider);
    const version = this.#store.version(stream);
    const hit = cache.get(stream);
    if (hit !== undefined && hit.version === version) return { state: hit.state as S, version };
    let state = decider.initialState();
    const events = this.#store.readStream(stream) as StoredEvent<E>[];
    for (const e of events) state = decider.evolve(state, e);
    const loaded = { state, version: events.at(-1)?.version ?? 0 };
    this.#remember(cache, stream, loaded);
    return loaded;
  }

  handle<S, E extends NewEvent>(
    stream: string,
    decider: Decider<S, E>,
    decide: (state: S, version: number) => readonly E[],
    metadata: AuditMetadata,
  ): Handled<S, E> {
    // 1. Fold the stream.
    const { state, version } = this.load(stream, decider);
    // 2. Decide (may throw a KeelError).
    const proposed = decide(state, version);
    if (proposed.length === 0) return { events: [], state, version };
    // 3. Every proposed event must be legal in the state it would follow.
    let next = state;
    proposed.forEach((event, i) => {
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
    });
    // 4. Append (with the inline projections) in one transaction.
    const events = this.#store.append(stream, proposed, { expectedVersion: version, metadata });
    // 5. Fold what was stored, so the state carries the stored times and positions.
    let folded = state;
    for (const e of events) folded = decider.evolve(folded, e);
    const newVersion = version + events.length;
    this.#remember(this.#cacheFor(decider), stream, { state: folded, version: newVersion });
    return { events, state: folded, version: newVersion };
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

  #cacheFor(decider: object): Map<string, { version: number; state: unknown }> {
    let cache = this.#cache.get(decider);
    if (cache === undefined) {
      cache = new Map();
      this.#cache.set(decider, cache);
    }
    return cache;
  }

  #remember(
    cache: Map<string, { version: number; state: unknown }>,
    stream: string,
    entry: { version: number; state: unknown },
  ): void {
    cache.delete(stream);
    cache.set(stream, entry);
    if (cache.size > CACHE_LIMIT) {
      const oldest = cache.keys().next();
      if (oldest.done !== true) cache.delete(oldest.value);
    }
  }
}
