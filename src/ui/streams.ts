import type { AnyStateMachine } from 'xstate';
import type { CommandHandler, Decider } from '../core/command-handler.js';
import type { Db } from '../core/database.js';
import type { AuditMetadata, NewEvent, StoredEvent } from '../core/events.js';
import type { EventStore } from '../core/event-store.js';
import { machineDecider } from '../core/machine-decider.js';
import { redactSealed } from '../core/seal.js';
import type { StreamLocation } from '../core/streams.js';
import type { MachineGraph } from './diagram.js';
import { machineGraph } from './diagram.js';

/** Which machine folds which streams: every stream whose name starts with `streamPrefix`. */
export interface StreamKind {
  /** The machine's name in `machines/index.ts` (`run`, `lease`, …). */
  readonly name: string;
  readonly machine: AnyStateMachine;
  /** Streams of this kind are named `<streamPrefix>…`; null when the streams are not known. */
  readonly streamPrefix: string | null;
  /** When the prefix is shared with other streams: the whole name must match this too. */
  readonly streamPattern?: RegExp;
}

/**
 * Pair every registered machine with where its streams live (each context declares its own, with
 * the stream names it builds its ids from). A machine without a location still gets its diagram;
 * its streams are simply not counted or browsable.
 */
export function streamKinds(
  machines: Readonly<Record<string, AnyStateMachine>>,
  locations: Readonly<Record<string, StreamLocation>>,
): StreamKind[] {
  return Object.entries(machines)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, machine]) => {
      const at = locations[name];
      return at === undefined
        ? { name, machine, streamPrefix: null }
        : { name, machine, streamPrefix: at.prefix, streamPattern: at.pattern };
    });
}

/** A state value as its leaf paths: `planning` → [`planning`], `{a: 'b'}` → [`a.b`]. */
export function leafPaths(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => leafPaths(v).map((p) => `${k}.${p}`));
  }
  return [String(value)];
}

/** One event of a stream with the state the stream was in right after it. */
export interface HistoryEntry {
  position: number;
  version: number;
  type: string;
  time: string;
  actor: AuditMetadata['actor'];
  request_id: string | null;
  remote_address: string | null;
  /** The event's data with sealed fields shown as `hmac:<hex>`. */
  data: unknown;
  /** The state as of this event (`rotating.retry` for nested states). */
  state: string;
  /** The leaf states' short names: what a diagram highlights. */
  leaves: string[];
}

export interface StreamHistory {
  stream: string;
  machine: string | null;
  /** The state before the first event (the machine's initial state). */
  initial: { state: string; leaves: string[] } | null;
  history: HistoryEntry[];
}

type AnySnapshot = { value: unknown };

/**
 * The stream → machine registry with server-side folds: a stream's state as of each of its
 * events, and the live count of streams in each state.
 */
export class StreamRegistry {
  readonly kinds: readonly StreamKind[];
  readonly #deciders = new Map<string, Decider<AnySnapshot, NewEvent>>();
  readonly #graphs = new Map<string, MachineGraph>();
  readonly #store: EventStore;
  readonly #handler: CommandHandler;
  readonly #db: Db;

  constructor(kinds: readonly StreamKind[], deps: { store: EventStore; handler: CommandHandler }) {
    this.kinds = kinds;
    this.#store = deps.store;
    this.#handler = deps.handler;
    this.#db = deps.store.db;
    for (const k of kinds) {
      this.#deciders.set(k.name, machineDecider(k.machine) as Decider<AnySnapshot, NewEvent>);
      this.#graphs.set(k.name, machineGraph(k.machine));
    }
  }

  kind(name: string): StreamKind | undefined {
    return this.kinds.find((k) => k.name === name);
  }

  graph(name: string): MachineGraph | undefined {
    return this.#graphs.get(name);
  }

  /** The kind whose prefix is the longest one the stream starts with (and whose pattern fits). */
  kindOf(stream: string): StreamKind | undefined {
    let best: StreamKind | undefined;
    for (const k of this.kinds) {
      if (k.streamPrefix === null || !stream.startsWith(k.streamPrefix)) continue;
      if (k.streamPattern !== undefined && !k.streamPattern.test(stream)) continue;
      if (best === undefined || k.streamPrefix.length > (best.streamPrefix ?? '').length) best = k;
    }
    return best;
  }

  /** Every stream of a kind, by name, with its current state. */
  streams(name: string): { stream: string; state: string; version: number }[] {
    const kind = this.kind(name);
    const decider = this.#deciders.get(name);
    if (kind === undefined || decider === undefined || kind.streamPrefix === null) return [];
    return this.#streamNames(kind.streamPrefix)
      .filter((stream) => this.kindOf(stream) === kind)
      .map((stream) => {
        const { state, version } = this.#handler.load(stream, decider);
        return { stream, state: leafPaths(state.value).join(','), version };
      });
  }

  /** How many streams of a kind are in each leaf state (by the state's short name). */
  counts(name: string): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const s of this.streams(name)) {
      for (const leaf of s.state.split(',')) {
        const short = leaf.split('.').pop() ?? leaf;
        counts[short] = (counts[short] ?? 0) + 1;
      }
    }
    return counts;
  }

  /**
   * A stream's events, each with the state as of that event. Streams no machine folds still get
   * their history, without states.
   */
  history(stream: string): StreamHistory {
    const events = this.#store.readStream(stream);
    const kind = this.kindOf(stream);
    const decider = kind === undefined ? undefined : this.#deciders.get(kind.name);
    let state = decider?.initialState();
    const describe = (s: AnySnapshot | undefined) => {
      const paths = s === undefined ? [] : leafPaths(s.value);
      return { state: paths.join(','), leaves: paths.map((p) => p.split('.').pop() ?? p) };
    };
    const initial = decider === undefined ? null : describe(state);
    const history = events.map((e: StoredEvent) => {
      if (decider !== undefined && state !== undefined) state = decider.evolve(state, e);
      return {
        position: e.position,
        version: e.version,
        type: e.type,
        time: e.time,
        actor: e.metadata.actor,
        request_id: e.metadata.requestId,
        client_request_id: e.metadata.clientRequestId ?? null,
        remote_address: e.metadata.remoteAddress,
        data: redactSealed(e.data),
        ...describe(state),
      };
    });
    return { stream, machine: kind?.name ?? null, initial, history };
  }

  #streamNames(prefix: string): string[] {
    // A range over the (stream, version) index: every name that starts with the prefix.
    return this.#db
      .prepare<[string, string], { stream: string }>(
        'SELECT DISTINCT stream FROM events WHERE stream >= ? AND stream < ? ORDER BY stream',
      )
      .all(prefix, `${prefix}\u{10ffff}`)
      .map((r) => r.stream);
  }
}
