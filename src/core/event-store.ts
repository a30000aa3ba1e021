import { GENESIS_HASH, type Chain } from './chain.js';
import type { Clock } from './clock.js';
import { canonicalJson } from './canonical.js';
import type { Db } from './database.js';
import { ConcurrencyError } from './errors.js';
import { UnprotectedWriteFailed } from './group-commit.js';
import type { AuditMetadata, NewEvent, StoredEvent } from './events.js';
import { Lru } from './lru.js';

export type ExpectedVersion = number | 'any';

export interface AppendOptions {
  expectedVersion: ExpectedVersion;
  metadata: AuditMetadata;
}

/**
 * Metadata text by object: the events of one request share their metadata object, so it is
 * serialised once. An object is frozen when first appended, so its text cannot go stale.
 */
const metadataTexts = new WeakMap<AuditMetadata, string>();

/**
 * How many of other processes' appends a batch reads as it begins (`batch.opening`); past that,
 * it forgets every remembered stream version.
 */
const CATCH_UP = 1000;

/**
 * What other processes appended after a position, newest first (`batch.opening`): whole, where the
 * read shares a round trip with the batch's BEGIN (PostgreSQL); where it is local (SQLite), the
 * columns that say where each stream ends, its events read only for the folds that want them.
 */
const SINCE_SQL = `SELECT position, stream, version, type, time, data, metadata, hash FROM events WHERE position > ? ORDER BY position DESC LIMIT ${CATCH_UP}`;
const SINCE_ENDS_SQL = `SELECT position, stream, version, hash FROM events WHERE position > ? ORDER BY position DESC LIMIT ${CATCH_UP}`;
/** The log's end, for a process that knows none. */
const TAIL_SQL =
  'SELECT position, stream, version, hash FROM events ORDER BY position DESC LIMIT 1';

/** A row of what another process appended: whole (`RawRow`), or where it ends a stream. */
type EndRow = [position: number, stream: string, version: number, hash: string];

/**
 * What other processes appended since a batch's process last knew the log's end, as its batch
 * begins: the streams, and each one's events in order (parsed when asked for).
 */
export interface ForeignAppends {
  readonly streams: readonly string[];
  events(stream: string): readonly StoredEvent[];
}

function metadataText(metadata: AuditMetadata): string {
  let text = metadataTexts.get(metadata);
  if (text === undefined) {
    text = canonicalJson(metadata);
    if (metadata.actor !== null) Object.freeze(metadata.actor);
    metadataTexts.set(Object.freeze(metadata), text);
  }
  return text;
}

/** A row as `.raw()` returns it: the columns in table order, without an object per row. */
type RawRow = [number, string, number, string, string, string, string, string];

/**
 * Rows to events. Consecutive events of one request share their metadata text, so its parse is
 * reused (the parsed object is frozen, being shared).
 */
function toEvents(rows: readonly RawRow[]): StoredEvent[] {
  let lastText = '';
  let lastMeta: AuditMetadata | undefined;
  const out: StoredEvent[] = new Array<StoredEvent>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const [position, stream, version, type, time, data, metadata, hash] = rows[i]!;
    if (metadata !== lastText || lastMeta === undefined) {
      lastText = metadata;
      lastMeta = Object.freeze(JSON.parse(metadata) as AuditMetadata);
    }
    out[i] = {
      position,
      stream,
      version,
      type,
      time,
      data: JSON.parse(data) as unknown,
      metadata: lastMeta,
      hash,
    };
  }
  return out;
}

const NOTHING_FOREIGN: ForeignAppends = { streams: [], events: () => [] };

/** Where an event is in the log, and of what type: what a wake-up needs of an append. */
export type LogEntry = Pick<StoredEvent, 'position' | 'type'>;

/** Called inside the append transaction for every stored event (inline projections). */
export type InlineApply = (event: StoredEvent) => void;

/**
 * The SQLite event log. `append` checks the stream's version, writes the events with their chain
 * hashes and runs the inline projections, all in one synchronous transaction.
 */
export class EventStore {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #chain: Chain;
  readonly #inline: InlineApply;
  readonly #listeners = new Set<(events: readonly StoredEvent[]) => void>();
  readonly #foreignListeners = new Set<(appended: readonly LogEntry[]) => void>();
  readonly #stmts;
  /**
   * The end of the log as this process last wrote it, saving a query per append. Positions are
   * dense, so if another writer appended meanwhile the insert hits the primary key and the append
   * is retried from the database's end.
   */
  #last: { position: number; hash: string } | null = null;
  /**
   * Stream versions as this process last committed them, saving the version query when the
   * caller's expected version agrees. Only a hint: a writer this process did not see makes the
   * insert hit UNIQUE (stream, version), which is the same concurrency error. Least recently
   * used out: a forgotten hint costs one version query.
   */
  readonly #versions = new Lru<string, number>(VERSION_HINTS);
  #time = { ms: Number.NaN, text: '' };

  constructor(db: Db, clock: Clock, chain: Chain, inline: InlineApply = () => undefined) {
    this.#db = db;
    this.#clock = clock;
    this.#chain = chain;
    this.#inline = inline;
    this.#stmts = {
      // The write lock from the start: the end of the log and the stream's version are read
      // inside it, so appends from several processes sharing the file take one total order.
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT keel_append'),
      release: db.prepare('RELEASE keel_append'),
      rollbackTo: db.prepare('ROLLBACK TO keel_append'),
      version: db.prepare<[string], { version: number }>(
        'SELECT version FROM events WHERE stream = ? ORDER BY version DESC LIMIT 1',
      ),
      last: db.prepare<[], { position: number; hash: string }>(
        'SELECT position, hash FROM events ORDER BY position DESC LIMIT 1',
      ),
      // The position the hash was computed for: if another writer took it since the end this
      // process remembers, the primary key refuses the row and the append is retried.
      insert: db.prepare<[number, string, number, string, string, string, string, string]>(
        'INSERT INTO events (position, stream, version, type, time, data, metadata, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      stream: db
        .prepare<[string], RawRow>(
          'SELECT position, stream, version, type, time, data, metadata, hash FROM events WHERE stream = ? ORDER BY version',
        )
        .raw(true),
      streamAfter: db
        .prepare<[string, number], RawRow>(
          'SELECT position, stream, version, type, time, data, metadata, hash FROM events WHERE stream = ? AND version > ? ORDER BY version',
        )
        .raw(true),
      sinceEnds: db.prepare<[number], unknown[]>(SINCE_ENDS_SQL).raw(true),
      streamSince: db
        .prepare<[string, number], RawRow>(
          'SELECT position, stream, version, type, time, data, metadata, hash FROM events WHERE stream = ? AND position > ? ORDER BY version',
        )
        .raw(true),
      tail: db.prepare<[], unknown[]>(TAIL_SQL).raw(true),
      all: db
        .prepare<[number, number], RawRow>(
          'SELECT position, stream, version, type, time, data, metadata, hash FROM events WHERE position > ? ORDER BY position LIMIT ?',
        )
        .raw(true),
      allUntil: db
        .prepare<[number, string, number], RawRow>(
          'SELECT position, stream, version, type, time, data, metadata, hash FROM events WHERE position > ? AND time <= ? ORDER BY position LIMIT ?',
        )
        .raw(true),
    };
  }

  get db(): Db {
    return this.#db;
  }

  /** The log's audit chain: its key, where keyed links start, where its head file is. */
  get chain(): Chain {
    return this.#chain;
  }

  /** Current version of a stream; 0 when it has no events. */
  version(stream: string): number {
    return this.#stmts.version.get(stream)?.version ?? 0;
  }

  lastPosition(): number {
    return this.#stmts.last.get()?.position ?? 0;
  }

  /**
   * The end of the log as far as this process knows without a query: what it last committed, or
   * the database's answer when it has not remembered one. Another writer may have gone further;
   * callers use it where a lower answer is only a missed shortcut.
   */
  knownEnd(): number {
    return this.#last?.position ?? this.lastPosition();
  }

  /**
   * Where this process's batches that are written but not yet durable begin (on SQLite at
   * `--sync full` a batch is written while the one before it syncs; on PostgreSQL its COMMIT is
   * in flight), or undefined: their events are announced once durable, and not to be acted on
   * before.
   */
  unannouncedFrom(): number | undefined {
    return this.#unannounced[0];
  }

  append<E extends NewEvent>(
    stream: string,
    events: readonly E[],
    options: AppendOptions,
  ): StoredEvent<E>[] {
    if (events.length === 0) return [];
    // Inside a caller's transaction nothing is committed yet: that transaction may still roll
    // back, so what this append writes must not be remembered as the end of the log.
    const enclosed = this.#db.inTransaction;
    const write = () => this.#appendInTransaction(stream, events, options);
    let stored: StoredEvent<E>[];
    if (enclosed && this.#held?.unprotected === true) {
      // Once only: a second append in the same command would not be undone with the first.
      this.#held.unprotected = false;
      try {
        stored = write();
      } catch (err) {
        // A version check that refused before writing anything is answered as it is.
        if (err instanceof ConcurrencyError) throw err;
        throw new UnprotectedWriteFailed(err);
      }
      return this.#appended(stream, stored, enclosed);
    }
    try {
      try {
        stored = this.#atomically(enclosed, write);
      } catch (err) {
        this.#last = null;
        this.#versions.delete(stream);
        // Another writer (the CLI, say) appended since the cached end of the log: read it, retry.
        if (!isPositionTaken(err)) throw err;
        stored = this.#atomically(enclosed, write);
      }
    } catch (err) {
      if (err instanceof VersionTaken) {
        throw new ConcurrencyError(stream, err.expected, this.version(stream));
      }
      throw err;
    }
    return this.#appended(stream, stored, enclosed);
  }

  /** What the store remembers and announces of an append that succeeded. */
  #appended<E extends NewEvent>(
    stream: string,
    stored: StoredEvent<E>[],
    enclosed: boolean,
  ): StoredEvent<E>[] {
    const end = stored[stored.length - 1]!;
    if (this.#held !== null) {
      // Inside a group-commit batch: remembered for the batch's later commands, forgotten again
      // if the command or the batch is undone.
      this.#last = { position: end.position, hash: end.hash };
      this.#versions.set(stream, end.version);
      this.#held.streams.push(stream);
    } else if (enclosed) {
      this.#last = null;
      this.#versions.delete(stream);
    } else {
      this.#last = { position: end.position, hash: end.hash };
      this.#versions.set(stream, end.version);
    }
    if (this.#held !== null) this.#held.item.push(...stored);
    else this.#announce(stored);
    return stored;
  }

  /**
   * Inside a batch (group commit), appends are announced to the listeners only once the batch is
   * durable, and only those whose item was kept: a reactor never acts on a write that a crash, or
   * a rolled-back savepoint, could take back.
   */
  readonly batch = {
    /**
     * A query for what other processes appended since the end of the log this process knows
     * (newest first, at most `CATCH_UP` rows), run as the batch begins under the log's lock
     * (PostgreSQL: in the BEGIN's own round trip). `begin` takes its rows.
     */
    opening: (): string => {
      this.#openedFrom = this.#last?.position ?? null;
      return this.#openedFrom === null
        ? TAIL_SQL
        : SINCE_SQL.replace('?', String(this.#openedFrom));
    },
    /**
     * The batch's transaction has begun. Given the rows `opening` asked for (or, without them,
     * having read them now: SQLite, where the read costs microseconds), the log's end is known
     * again, and so are the versions of the streams other processes appended to: answers what
     * they appended, or `all` when it is not all known (then every remembered version is
     * forgotten).
     */
    begin: (opened?: unknown[][]): ForeignAppends | 'all' => {
      this.#ended = null;
      let whole = true;
      if (opened === undefined) {
        this.#openedFrom = this.#last?.position ?? null;
        whole = false;
        opened =
          this.#openedFrom === null
            ? this.#stmts.tail.all()
            : this.#stmts.sinceEnds.all(this.#openedFrom);
      }
      const changed = this.#caughtUp(opened, whole);
      this.#held = {
        item: [],
        kept: [],
        streams: [],
        itemStreams: 0,
        itemLast: this.#last,
        unprotected: false,
      };
      return changed;
    },
    itemStart: (unprotected = false): void => {
      if (this.#held === null) return;
      this.#held.unprotected = unprotected;
      this.#held.item = [];
      this.#held.itemStreams = this.#held.streams.length;
      this.#held.itemLast = this.#last;
    },
    itemUndone: (): void => {
      const held = this.#held;
      if (held === null) return;
      held.item = [];
      for (const stream of held.streams.splice(held.itemStreams)) this.#versions.delete(stream);
      this.#last = held.itemLast;
    },
    itemKept: (): void => {
      if (this.#held === null) return;
      for (const e of this.#held.item) this.#held.kept.push(e);
      this.#held.item = [];
    },
    /**
     * Every item has run: what the batch kept, held until it is durable, and the streams whose
     * versions it remembered (forgotten if its COMMIT fails).
     */
    end: (): { events: StoredEvent[]; streams: string[] } => {
      const held = this.#held;
      this.#held = null;
      const events = held?.kept ?? [];
      this.#ended = events[0]?.position ?? null;
      if (this.#ended !== null) this.#unannounced.push(this.#ended);
      return { events, streams: held?.streams ?? [] };
    },
    /**
     * The batch was rolled back while being written (its COMMIT, too, may have failed): nothing of
     * it happened.
     */
    aborted: (): void => {
      this.#settle(this.#ended ?? undefined);
      this.#ended = null;
      for (const stream of this.#held?.streams ?? []) this.#versions.delete(stream);
      this.#held = null;
      this.#last = null;
    },
    /**
     * The batch's COMMIT failed after it was written (given what `end` answered for it): forget
     * what it made remembered.
     */
    failed: (batch: { events: readonly StoredEvent[]; streams: readonly string[] }): void => {
      this.#settle(batch.events[0]?.position);
      for (const stream of batch.streams) this.#versions.delete(stream);
      this.#last = null;
    },
    /** The batch is committed and durable: its events are announced. */
    committed: (kept: readonly StoredEvent[]): void => {
      this.#settle(kept[0]?.position);
      if (kept.length > 0) this.#announce(kept);
    },
  };

  /**
   * The first positions of batches this process wrote whose durability is still awaited, oldest
   * first: their events are announced once it is known (`unannouncedFrom`).
   */
  readonly #unannounced: number[] = [];
  /** Where the batch being written now begins, once it has ended (`#unannounced`'s last). */
  #ended: number | null = null;

  /** The batch that begins at `first` is durable, or will never be: it is no longer awaited. */
  #settle(first: number | undefined): void {
    if (first === undefined) return;
    const at = this.#unannounced.indexOf(first);
    if (at >= 0) this.#unannounced.splice(at, 1);
  }

  #held: {
    item: StoredEvent[];
    kept: StoredEvent[];
    /** Streams whose versions the batch remembered, in order; `itemStreams` where the item began. */
    streams: string[];
    itemStreams: number;
    /** The end of the log when the item began. */
    itemLast: { position: number; hash: string } | null;
    /** The item's append goes without a savepoint; a failure fails the batch's attempt. */
    unprotected: boolean;
  } | null = null;

  /** Where the last `batch.opening` asked from: null when this process knew no end of the log. */
  #openedFrom: number | null = null;

  /**
   * Takes what `batch.opening` read (`whole` rows, or only where each ends a stream): the log's
   * end, and what was appended since.
   */
  #caughtUp(opened: unknown[][], whole: boolean): ForeignAppends | 'all' {
    const from = this.#openedFrom;
    const rows = opened as (RawRow | EndRow)[];
    const tail = rows[0];
    if (tail === undefined) return from === null ? 'all' : NOTHING_FOREIGN;
    this.#last = { position: tail[0], hash: (tail as unknown[]).at(-1) as string };
    // Positions are dense: every row since `from` was read when there are as many as it moved.
    if (from === null || rows.length < tail[0] - from) {
      this.#versions.clear();
      return 'all';
    }
    // Newest first: a stream's first row is its version now; its rows, reversed, are in order.
    // Whole rows are kept for the folds that want them; ends are read from the file instead.
    const byStream = new Map<string, RawRow[]>();
    for (const row of rows) {
      let mine = byStream.get(row[1]);
      if (mine === undefined) {
        byStream.set(row[1], (mine = []));
        this.#versions.set(row[1], row[2]);
      }
      if (whole) mine.push(row as RawRow);
    }
    if (whole && this.#foreignListeners.size > 0) {
      // Every position since `from`, each with its type: told in order, without parsing the rest.
      const entries: LogEntry[] = new Array<LogEntry>(rows.length);
      for (let i = 0; i < rows.length; i++) {
        const row = rows[rows.length - 1 - i] as RawRow;
        entries[i] = { position: row[0], type: row[3] };
      }
      for (const listener of this.#foreignListeners) listener(entries);
    }
    return {
      streams: [...byStream.keys()],
      events: whole
        ? (stream) => toEvents((byStream.get(stream) ?? []).toReversed())
        : (stream) => toEvents(this.#stmts.streamSince.all(stream, from)),
    };
  }

  #announce(events: readonly StoredEvent[]): void {
    for (const listener of this.#listeners) listener(events);
  }

  /**
   * `fn` as one transaction, or as a savepoint inside the caller's; undone if it throws. (What
   * better-sqlite3's `transaction()` does, without its per-call bookkeeping.)
   */
  #atomically<T>(enclosed: boolean, fn: () => T): T {
    const s = this.#stmts;
    (enclosed ? s.savepoint : s.begin).run();
    try {
      const result = fn();
      (enclosed ? s.release : s.commit).run();
      return result;
    } catch (err) {
      if (this.#db.inTransaction) {
        if (enclosed) {
          s.rollbackTo.run();
          s.release.run();
        } else s.rollback.run();
      }
      throw err;
    }
  }

  /** The clock's time as text; appends within one millisecond share the formatting. */
  #isoNow(): string {
    const ms = this.#clock.now().getTime();
    if (ms !== this.#time.ms) this.#time = { ms, text: new Date(ms).toISOString() };
    return this.#time.text;
  }

  /**
   * The version to append after. The remembered one is trusted only when it agrees with the
   * caller; a disagreement (or no hint, or `any`) asks the database, which decides. A caller that
   * expects a new stream needs no answer: if the stream has events, its version 1 is taken and
   * the insert fails on UNIQUE (stream, version).
   */
  #currentVersion(stream: string, expected: ExpectedVersion): number {
    if (expected === 0) return 0;
    if (expected !== 'any' && this.#versions.get(stream) === expected) return expected;
    return this.version(stream);
  }

  #appendInTransaction<E extends NewEvent>(
    stream: string,
    events: readonly E[],
    { expectedVersion, metadata }: AppendOptions,
  ): StoredEvent<E>[] {
    const actual = this.#currentVersion(stream, expectedVersion);
    if (expectedVersion !== 'any' && expectedVersion !== actual) {
      throw new ConcurrencyError(stream, expectedVersion, actual);
    }
    const last = this.#last ?? this.#stmts.last.get() ?? { position: 0, hash: GENESIS_HASH };
    let prevHash = last.hash;
    let position = last.position;
    const time = this.#isoNow();
    const metadataJson = metadataText(metadata);
    const out: StoredEvent<E>[] = new Array<StoredEvent<E>>(events.length);
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!;
      position += 1;
      const row = {
        position,
        stream,
        version: actual + i + 1,
        type: event.type,
        time,
        data: canonicalJson(event.data),
        metadata: metadataJson,
      };
      const hash = this.#chain.link(prevHash, row);
      try {
        this.#stmts.insert.run(
          position,
          row.stream,
          row.version,
          row.type,
          row.time,
          row.data,
          row.metadata,
          hash,
        );
      } catch (err) {
        // The stream moved on under a stale version hint: a concurrency conflict like any other,
        // whose actual version is read once the failed write is undone.
        if (!isVersionTaken(err)) throw err;
        throw new VersionTaken(stream, actual);
      }
      prevHash = hash;
      const storedEvent = {
        ...event,
        position,
        stream,
        version: row.version,
        time,
        metadata,
        hash,
      } as StoredEvent<E>;
      this.#inline(storedEvent);
      out[i] = storedEvent;
    }
    return out;
  }

  readStream(stream: string): StoredEvent[] {
    return toEvents(this.#stmts.stream.all(stream));
  }

  /** The stream's events after its version `version`, in order. */
  readStreamAfter(stream: string, version: number): StoredEvent[] {
    return toEvents(this.#stmts.streamAfter.all(stream, version));
  }

  /** Events after a global position, in order, at most `limit` of them (and none after `until`). */
  readAll(afterPosition = 0, limit = 1000, until?: string): StoredEvent[] {
    const rows =
      until === undefined
        ? this.#stmts.all.all(afterPosition, limit)
        : this.#stmts.allUntil.all(afterPosition, until, limit);
    return toEvents(rows);
  }

  /**
   * A reader of the events whose type matches one of `types` (a name, or a prefix ending in `*`),
   * filtered by the store: the others are neither read nor parsed.
   *
   * The upper bound changes no answer (no position is past the log's end). It keeps the read on
   * the log's key: PostgreSQL keeps one plan for a prepared statement after five runs, planned for
   * the table as it was then. Planned on an empty log, a bare `position > $1` got a scan of the
   * whole table and a sort, kept as the log grew, so every reactor pass read the whole log. A
   * bounded range is estimated as narrow, and is read through the key on a table of any size.
   */
  readerOf(types: readonly string[]): (afterPosition: number, limit: number) => StoredEvent[] {
    if (types.length === 0) return () => [];
    const statement = this.#db
      .prepare<unknown[], RawRow>(
        `SELECT position, stream, version, type, time, data, metadata, hash FROM events
          WHERE position > ? AND position <= (SELECT max(position) FROM events)
            AND (${types.map(typeClause).join(' OR ')})
          ORDER BY position LIMIT ?`,
      )
      .raw(true);
    const patterns = types.map((t) => (t.endsWith('*') ? t.slice(0, -1) : t));
    return (afterPosition, limit) => toEvents(statement.all(afterPosition, ...patterns, limit));
  }

  /** Walk the log in pages (up to a time, if given) without holding it all in memory. */
  *pages(options: { until?: string; pageSize?: number } = {}): Generator<StoredEvent[]> {
    for (let after = 0; ;) {
      const page = this.readAll(after, options.pageSize ?? 5000, options.until);
      if (page.length === 0) return;
      yield page;
      after = page[page.length - 1]!.position;
    }
  }

  /** Notified after each committed append (reactors wake up on it). */
  onAppended(listener: (events: readonly StoredEvent[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Told, as a batch begins, of every position other processes appended since the end of the log
   * this process knew, each with its type, in order (where the batch's opening read them whole:
   * PostgreSQL). Not told when that read did not hold them all, nor where it read only where each
   * stream ends (SQLite).
   */
  onForeignAppended(listener: (appended: readonly LogEntry[]) => void): () => void {
    this.#foreignListeners.add(listener);
    return () => this.#foreignListeners.delete(listener);
  }
}

/**
 * The stream's version was taken under a stale hint. Its actual version is read after the write
 * is undone: PostgreSQL answers nothing inside a transaction a failed statement aborted.
 */
class VersionTaken extends Error {
  constructor(
    readonly stream: string,
    readonly expected: number,
  ) {
    super(`stream ${stream} moved past version ${expected}`);
  }
}

/** The log's end moved under this process (another writer appended): the append is retried. */
const isPositionTaken = (err: unknown): boolean =>
  (err as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';

/** Whether an event type matches a reactor's type pattern (a name, or a prefix ending in `*`). */
export const typeMatches = (pattern: string, type: string): boolean =>
  pattern.endsWith('*') ? type.startsWith(pattern.slice(0, -1)) : pattern === type;

/** SQL matching a type pattern, a name whole or a prefix `Run*`, against one parameter. */
const typeClause = (pattern: string): string =>
  pattern.endsWith('*') ? `substr(type, 1, ${pattern.length - 1}) = ?` : 'type = ?';

const isVersionTaken = (err: unknown): boolean =>
  (err as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE';

/** Streams whose version this process remembers (past it, the first written is forgotten). */
const VERSION_HINTS = 10_000;
