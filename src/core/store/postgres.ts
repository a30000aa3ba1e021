import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { COMPAT_SQL } from './compat.js';
import {
  STORE_UNAVAILABLE,
  type Args,
  type Db,
  type RunResult,
  type Statement,
  type Transaction,
} from './port.js';
import { type Control, type Translated, splitStatements, translate } from './translate.js';
import { redactUrl, withConnectionBounds } from './url.js';
import { UnprotectedWriteFailed, type Appended, type Durability } from '../group-commit.js';
import type { ForeignChange } from '../read-memo.js';

/** The part of the `libpq` package the adapter uses: libpq's synchronous calls, its asynchronous ones and its pipeline mode. */
interface PQ {
  connectSync(conninfo: string): void;
  connect(conninfo: string, done: (err?: Error) => void): void;
  finish(): void;
  exec(text: string): void;
  prepare(name: string, text: string, nParams: number): void;
  execPrepared(name: string, values: (string | null)[]): void;
  resultStatus(): string;
  resultErrorMessage(): string;
  resultErrorFields(): Record<string, string | undefined> | null;
  errorMessage(): string;
  transactionStatus(): number;
  ntuples(): number;
  nfields(): number;
  fname(i: number): string;
  ftype(i: number): number;
  getvalue(row: number, column: number): string;
  getisnull(row: number, column: number): boolean;
  cmdTuples(): string;
  sendQuery(text: string): boolean;
  sendQueryParams(text: string, values: (string | null)[]): boolean;
  sendPrepare(name: string, text: string, nParams: number): boolean;
  sendQueryPrepared(name: string, values: (string | null)[]): boolean;
  enterPipelineMode(): boolean;
  exitPipelineMode(): boolean;
  pipelineSync(): boolean;
  getResult(): boolean;
  consumeInput(): boolean;
  isBusy(): boolean;
  startReader(): void;
  stopReader(): void;
  notifies(): { relname: string; extra: string; be_pid: number } | undefined;
  on(event: 'readable', listener: () => void): void;
  removeListener(event: 'readable', listener: () => void): void;
}

/**
 * The `libpq` package, or an error that says how to get it: it is optional, and a machine without
 * libpq's headers installs Keel without it.
 */
export function loadLibpq(
  load: (id: string) => unknown = createRequire(import.meta.url),
): new () => PQ {
  try {
    return load('libpq') as new () => PQ;
  } catch (err) {
    throw new Error(
      `--store postgres:// needs the optional package libpq, which did not install (build it with libpq-dev present: apt-get install libpq-dev && npm install): ${(err as Error).message}`,
    );
  }
}

/**
 * Whether a session has ended: libpq's PQTRANS_UNKNOWN, a bad connection. It may say it is still
 * busy, though nothing more will arrive to answer what it owes.
 */
const ended = (pq: PQ): boolean => pq.transactionStatus() === 4;

/** An error that ends its session: the server shutting it down, or the connection lost. */
const sessionEnding = (err: PostgresError): boolean =>
  err.sqlState?.startsWith('57P') === true || err.sqlState?.startsWith('08') === true;

/**
 * Calls `onReadable` whenever the session's socket has input, and once a second besides, until
 * the answer it returns is called; `onReadable` reads only what has arrived, so a call with nothing
 * new does nothing. Under load, a COMMIT sent as the server closed its session once waited without
 * end for an event that never came, and a session whose end goes unannounced must not hold a batch
 * forever.
 */
export function watch(
  pq: Pick<PQ, 'on' | 'removeListener' | 'startReader' | 'stopReader'>,
  onReadable: () => void,
): () => void {
  pq.on('readable', onReadable);
  pq.startReader();
  const again = setInterval(onReadable, 1000);
  again.unref();
  return () => {
    clearInterval(again);
    pq.stopReader();
    pq.removeListener('readable', onReadable);
  };
}

/** Connections being closed, kept from the garbage collector until libuv has let go of them. */
const closing = new Set<PQ>();

/**
 * Ends a connection. libpq's binding closes the connection's socket watcher asynchronously; if
 * the object were collected before the event loop finished that close, the process would abort.
 */
function finish(pq: PQ): void {
  pq.finish();
  closing.add(pq);
  setTimeout(() => closing.delete(pq), 1000).unref();
}

/**
 * The lock every write transaction takes first: one writer at a time across every node, the
 * equivalent of SQLite's single writer (BEGIN IMMEDIATE). An arbitrary constant ("keel" in ASCII).
 */
export const LOG_LOCK = 0x6b65656c;

/** The most a notification's payload may carry (PostgreSQL's limit is 8,000 bytes). */
const NOTIFY_PAYLOAD_LIMIT = 7900;

/** Past this many streams heard between two checks, what changed is taken as unknown. */
const HEARD_LIMIT = 10_000;

/** What another store's notification says its batch appended, or undefined if it says nothing usable. */
function parseAppended(said: string): Appended | undefined {
  try {
    const value = JSON.parse(said) as unknown;
    if (typeof value !== 'object' || value === null) return undefined;
    const { types, streams } = value as Record<string, unknown>;
    const strings = (v: unknown): v is string[] =>
      Array.isArray(v) && v.every((x) => typeof x === 'string');
    return strings(types) && strings(streams) ? { types, streams } : undefined;
  } catch {
    return undefined;
  }
}

/** PostgreSQL's SQLSTATE class for connection exceptions, given to a lost connection. */
const UNAVAILABLE = '08000';

const SCHEMA_CHANGE = /^\s*(CREATE|DROP|ALTER)\s+(TABLE|INDEX|UNIQUE\s+INDEX)\b/i;

/** What a batch's pipeline sends without waiting: savepoints, and their release and rollback. */
const PIPELINED_CONTROL = /^(SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK TO SAVEPOINT) \w+$/;

/** A statement sent into a batch's pipeline, and its answer once read. */
interface Sent {
  text: string;
  /** for a Prepare: the session's prepared names, forgotten again if it fails */
  prepares?: Map<string, string>;
  /** for a read: the rows' shape, and how many are wanted */
  shape?: 'object' | 'raw' | 'pluck';
  limit?: number;
  changes?: number;
  rows?: unknown[];
  /** the batch's NOTIFY or COMMIT, sent after its writes: its failure is not a write's */
  ends?: boolean;
}

/**
 * A pipeline's answers being read, in the order their statements were sent, up to its sync's:
 * `next` is the statement whose answer comes next; `failed`, the first failure among them and
 * whether it was one of the batch's writes.
 */
interface Answers {
  readonly sent: Sent[];
  next: number;
  answered: boolean;
  failed: { error: Error; write: boolean } | null;
}

/** SQLite's error codes for PostgreSQL's SQLSTATEs that Keel tells apart. */
function sqliteCode(state: string | undefined, constraint: string | undefined): string {
  switch (state ?? '') {
    case '23505':
      return constraint?.endsWith('_pkey') === true
        ? 'SQLITE_CONSTRAINT_PRIMARYKEY'
        : 'SQLITE_CONSTRAINT_UNIQUE';
    case '23503':
      return 'SQLITE_CONSTRAINT_FOREIGNKEY';
    case '23502':
      return 'SQLITE_CONSTRAINT_NOTNULL';
    case '23514':
      return 'SQLITE_CONSTRAINT_CHECK';
    case '40P01':
    case '55P03':
      return 'SQLITE_BUSY';
    case UNAVAILABLE:
      return STORE_UNAVAILABLE;
    default:
      return `POSTGRES_${state ?? 'ERROR'}`;
  }
}

/** An error from the server, with the SQLite code Keel checks (`code`) and PostgreSQL's own. */
export class PostgresError extends Error {
  readonly code: string;
  readonly sqlState: string | undefined;
  constructor(message: string, sqlState: string | undefined, constraint: string | undefined) {
    super(message);
    this.name = 'PostgresError';
    this.sqlState = sqlState;
    this.code = sqliteCode(sqlState, constraint);
  }
}

type Value = string | number | Buffer | null;

/** Column values typed as better-sqlite3 gives them: numbers, Buffers, text; booleans as 1/0. */
function converter(oid: number): (text: string) => Value {
  switch (oid) {
    case 20: // int8
    case 21: // int2
    case 23: // int4
    case 26: // oid
    case 700: // float4
    case 701: // float8
    case 1700: // numeric
      return Number;
    case 16: // bool
      return (v) => (v === 't' ? 1 : 0);
    case 17: // bytea, hex format
      return (v) => Buffer.from(v.slice(2), 'hex');
    default:
      return (v) => v;
  }
}

function bindValue(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return `\\x${Buffer.from(v).toString('hex')}`;
  throw new TypeError('the store can only bind numbers, strings, bigints, buffers, and null');
}

class PgStatement implements Statement {
  readonly #db: PostgresDatabase;
  readonly #sql: Translated;
  #pluck = false;
  #raw = false;

  constructor(db: PostgresDatabase, sql: Translated) {
    this.#db = db;
    this.#sql = sql;
  }

  pluck(toggleState = true): this {
    this.#pluck = toggleState;
    if (toggleState) this.#raw = false;
    return this;
  }

  raw(toggleState = true): this {
    this.#raw = toggleState;
    if (toggleState) this.#pluck = false;
    return this;
  }

  run(...params: unknown[]): RunResult {
    return this.#db.run(this.#sql, this.#bind(params));
  }

  get(...params: unknown[]): unknown {
    return this.#db.query(this.#sql, this.#bind(params), this.#shape(), 1)[0];
  }

  all(...params: unknown[]): unknown[] {
    return this.#db.query(this.#sql, this.#bind(params), this.#shape());
  }

  iterate(...params: unknown[]): IterableIterator<unknown> {
    return this.all(...params)[Symbol.iterator]();
  }

  #shape(): 'object' | 'raw' | 'pluck' {
    return this.#pluck ? 'pluck' : this.#raw ? 'raw' : 'object';
  }

  #bind(params: unknown[]): (string | null)[] {
    const p = this.#sql.params;
    if (p.kind === 'named') {
      const values = params[0];
      if (params.length !== 1 || values === null || typeof values !== 'object') {
        throw new RangeError('this statement takes its parameters as one object of named values');
      }
      return p.names.map((name) => {
        if (!(name in values)) throw new RangeError(`Missing named parameter "${name}"`);
        return bindValue((values as Record<string, unknown>)[name]);
      });
    }
    if (params.length !== p.count) {
      throw new RangeError(
        `Too ${params.length < p.count ? 'few' : 'many'} parameter values were provided`,
      );
    }
    return params.map(bindValue);
  }
}

/**
 * The PostgreSQL adapter of the store port over one libpq connection, synchronous: each call
 * answers before it returns, but for a write inside a group-commit batch, which goes through
 * libpq's pipeline and is answered at the next read (ADR 0106). SQL is translated once per text
 * and kept as a server-side prepared statement. Every transaction takes the log's lock first
 * (`LOG_LOCK`).
 */
export class PostgresDatabase implements Db {
  readonly name: string;
  readonly #PQ: new () => PQ;
  readonly #url: string;
  readonly #schema: string | undefined;
  /** The writer's session: every transaction (and so every write to the log) runs on it. */
  #pq: PQ;
  /**
   * A second session for statements outside a transaction (the reads of read models), so that a
   * read never waits for a batch's COMMIT in flight on the writer (DESIGN §10). Opened on first use.
   */
  #reader: PQ | undefined;
  /** The session the last statement ran on: its result is read from there. */
  #current: PQ;
  /** Names this store's commits in their notifications, so it can tell them from others'. */
  readonly #tag = randomUUID();
  /** The session that listens for other sessions' commits (`LISTEN keel_log`), once asked. */
  #listener: PQ | undefined;
  #notified = 0;
  /** What the commits counted since `foreignChanges` last answered appended, as they said. */
  #heard: { types: Set<string>; streams: Set<string> } | 'unknown' = {
    types: new Set(),
    streams: new Set(),
  };
  /**
   * The round trip on the listening session in flight (`heardUpTo`), and the one queued behind it
   * for the callers that came after it was sent.
   */
  #probe: { settle: () => void; done: Promise<void> } | null = null;
  #nextProbe: Promise<void> | null = null;
  /** Sessions to make again before their next use: the other one met a lost server. */
  readonly #stale = { writer: false, reader: false };
  /** The writer's session ended while a batch's answers were read: made again at its next use. */
  #writerLost = false;
  /**
   * The id of the writer's transaction, read with its BEGIN: when the session is lost before its
   * COMMIT is answered, the server is asked whether that transaction committed.
   */
  #xid: string | undefined;
  /** A COMMIT sent without waiting for it (a batch's): settled before the writer is used again. */
  #inFlight: { drain(): void } | null = null;
  readonly #keys = new Map<string, string[]>();
  readonly #translated = new Map<string, Translated>();
  readonly #prepared = new WeakMap<PQ, Map<string, string>>();
  /**
   * A batch's statements sent without waiting for their answers (libpq's pipeline mode), while a
   * group-commit batch is written: null outside one (see `pipeline`).
   */
  #pipe: { sent: Sent[]; failed: Error | null } | null = null;
  /** How many transactions (the outermost and its savepoints) are open. */
  #depth = 0;
  #open = true;
  readonly #lock: number;

  /**
   * Connects to `url` (a libpq connection string). `schema` keeps the tables apart from Keel's
   * log (the embedded cloud's); `lock` is the transactions' lock (`LOG_LOCK` by default).
   */
  constructor(url: string, options: { schema?: string; lock?: number } = {}) {
    this.#PQ = loadLibpq();
    this.name = redactUrl(url);
    this.#url = withConnectionBounds(url);
    this.#schema = options.schema;
    this.#lock = options.lock ?? LOG_LOCK;
    this.#pq = this.#connect();
    this.#current = this.#pq;
    this.#simple('SELECT datcollate FROM pg_database WHERE datname = current_database()');
    const collate = String(this.rows('pluck')[0]);
    if (!/^(C|POSIX|C\.UTF-?8)$/i.test(collate)) {
      this.close();
      throw new Error(
        `the database at ${this.name} sorts text by locale ${collate}; Keel needs byte order, as SQLite has it: CREATE DATABASE … TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'`,
      );
    }
    this.transaction(() => {
      if (options.schema !== undefined) {
        this.#simple(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`);
      }
      this.#simple(COMPAT_SQL);
    })();
  }

  /** A new session: connected, in UTC, in its schema; no statement prepared on it yet. */
  #connect(): PQ {
    const pq = new this.#PQ();
    try {
      pq.connectSync(this.#url);
    } catch (err) {
      closing.add(pq);
      setTimeout(() => closing.delete(pq), 1000).unref();
      throw new PostgresError(
        `cannot connect to ${this.name}: ${redactUrl((err as Error).message.trim())}`,
        UNAVAILABLE,
        undefined,
      );
    }
    this.#prepared.set(pq, new Map());
    const path = this.#schema === undefined ? '' : `; SET search_path = ${this.#schema}, public`;
    // Standard strings, whatever the server's default: a backslash in a literal (a notification's
    // payload, `#commitText`) is then only a backslash.
    pq.exec(
      `SET client_min_messages = warning; SET standard_conforming_strings = on; SET TIME ZONE 'UTC'${path}`,
    );
    return pq;
  }

  /**
   * The connection, made again if it was lost (the server restarted, or failed over): the call
   * that met the loss failed; the next one, outside a transaction, gets a new session.
   */
  #live(): PQ {
    if (!this.#open) throw new TypeError('The database connection is not open');
    this.#inFlight?.drain();
    // PQTRANS_UNKNOWN: the connection is bad. Or the other session met a lost server, so this
    // one (idle meanwhile) is lost too: made again before it fails a statement to say so. Or a
    // batch's answers ended with the session's end, which libpq may not have read yet.
    if (
      this.#writerLost ||
      this.#pq.transactionStatus() === 4 ||
      (this.#stale.writer && this.#pq.transactionStatus() === 0)
    ) {
      const lost = this.#pq;
      this.#pq = this.#connect();
      this.#stale.writer = false;
      this.#writerLost = false;
      finish(lost);
    }
    this.#current = this.#pq;
    return this.#pq;
  }

  /** The reader's session, made (again) when needed. */
  #liveReader(): PQ {
    if (!this.#open) throw new TypeError('The database connection is not open');
    if (
      this.#reader === undefined ||
      this.#reader.transactionStatus() === 4 ||
      this.#stale.reader
    ) {
      const lost = this.#reader;
      this.#reader = this.#connect();
      this.#stale.reader = false;
      if (lost !== undefined) finish(lost);
    }
    this.#current = this.#reader;
    return this.#reader;
  }

  /**
   * A write transaction's start: the log's lock (read committed, so each statement after it sees
   * every commit made before it), and the transaction's id.
   */
  #beginText(): string {
    return `BEGIN; SELECT pg_advisory_xact_lock(${this.#lock}); SELECT txid_current()::text`;
  }

  /**
   * Whether transaction `xid` committed, asked after the writer's session was lost before its
   * COMMIT was answered (on the reader's session, made again if need be). `unknown` when it cannot
   * be asked or the answer is not final yet.
   */
  #outcomeOf(xid: string | undefined): 'committed' | 'aborted' | 'unknown' {
    if (xid === undefined) return 'unknown';
    // The reader's session may have been lost with the writer's: asked on a new one.
    this.#stale.reader = true;
    try {
      const status = this.prepare<[string], string | null>('SELECT txid_status(?)')
        .pluck()
        .get(xid);
      return status === 'committed' || status === 'aborted' ? status : 'unknown';
    } catch {
      return 'unknown';
    }
  }

  /**
   * A COMMIT whose outcome the server could not be asked (it is out of reach): the batch's
   * callers are told that it may or may not have happened (the store is unavailable, ask again),
   * and everything remembered is forgotten, as after another node's commit that went unheard. The
   * next batch begins at the log's end as the server knows it.
   */
  #outcomeUnknown(error: Error): PostgresError {
    this.#notified++;
    this.#heard = 'unknown';
    return new PostgresError(
      `the connection to the database was lost before it answered a COMMIT, and whether that COMMIT happened could not be asked: ${error.message}`,
      UNAVAILABLE,
      undefined,
    );
  }

  /** A COMMIT that tells the other nodes, sent as one message (`#notifyText`). */
  #commitText(appended?: Appended): string {
    return `${this.#notifyText(appended)}; COMMIT`;
  }

  /**
   * The notification a commit sends, in its transaction: it goes out with the commit, or not at
   * all if the transaction is undone. It names this store (to tell its own commits from
   * others'), then what the batch appended when that is given and fits.
   */
  #notifyText(appended?: Appended): string {
    let payload: string = this.#tag;
    if (appended !== undefined) {
      const said = `${payload}\n${JSON.stringify({ types: appended.types, streams: appended.streams })}`;
      if (Buffer.byteLength(said) <= NOTIFY_PAYLOAD_LIMIT) payload = said;
    }
    return `NOTIFY keel_log, '${payload.replaceAll("'", "''")}'`;
  }

  /**
   * What the commits counted by `foreignCommits` appended since the last call, as their
   * notifications said; `unknown` if one did not say or may have gone unheard.
   */
  foreignChanges(): ForeignChange {
    const heard = this.#heard;
    this.#heard = { types: new Set(), streams: new Set() };
    return heard;
  }

  /** Adds what another store's notification said to what `foreignChanges` answers next. */
  #hear(said: string | undefined): void {
    const heard = this.#heard;
    if (heard === 'unknown') return;
    const appended = said === undefined ? undefined : parseAppended(said);
    if (appended === undefined || heard.streams.size + appended.streams.length > HEARD_LIMIT) {
      this.#heard = 'unknown';
      return;
    }
    for (const type of appended.types) heard.types.add(type);
    for (const stream of appended.streams) heard.streams.add(stream);
  }

  /**
   * How many commits other sessions (other nodes, other processes) have announced since this
   * store first asked, without a round trip: a session of its own listens on `keel_log`. If that
   * session is lost, the count moves on by one (a commit may have been missed) and the next call
   * listens again.
   */
  foreignCommits(): number {
    if (this.#listener === undefined && this.#open) this.#listen();
    return this.#notified;
  }

  /**
   * Settles once every commit another session finished before the call is counted by
   * `foreignCommits`. A notification travels on its own, so a request that follows another node's
   * acknowledged write may arrive before it: this sends a statement on the listening session, and
   * the server delivers the notifications it holds for that session before it says the statement
   * is done (PostgreSQL 14 and later). Callers that come while one is in flight share the next.
   */
  heardUpTo(): Promise<void> {
    if (this.#probe === null) return this.#sendProbe();
    this.#nextProbe ??= this.#probe.done.then(() => {
      this.#nextProbe = null;
      return this.#sendProbe();
    });
    return this.#nextProbe;
  }

  #sendProbe(): Promise<void> {
    if (!this.#open) return Promise.resolve();
    if (this.#listener === undefined) {
      try {
        this.#listen();
      } catch (err) {
        // The server out of reach: nothing to wait for. `foreignCommits` meets the same error,
        // and the caller forgets what it remembered.
        if ((err as PostgresError).sqlState !== UNAVAILABLE) throw err;
        return Promise.resolve();
      }
    }
    const pq = this.#listener;
    let settle = () => {};
    const done = new Promise<void>((resolve) => (settle = resolve));
    const probe = {
      settle: () => {
        if (this.#probe === probe) this.#probe = null;
        settle();
      },
      done,
    };
    this.#probe = probe;
    // Not sent (the session is lost): the count has moved on already (see `#listen`), which
    // makes the caller forget what it remembered, the answer to a commit it may not have heard.
    if (pq === undefined || !pq.sendQuery('SELECT 1')) {
      if (pq !== undefined) this.#lose(pq);
      probe.settle();
    }
    return done;
  }

  #listen(): void {
    const pq = this.#connect();
    pq.exec('LISTEN keel_log');
    this.#check('LISTEN keel_log', pq);
    pq.on('readable', () => {
      if (!pq.consumeInput()) {
        this.#lose(pq);
        return;
      }
      this.#countNotifications(pq);
      // The probe's answer: its results, then the server's ready-for-query, after which every
      // notification sent before it has been read.
      if (this.#probe !== null && this.#listener === pq) {
        while (!pq.isBusy()) {
          if (!pq.getResult()) {
            this.#countNotifications(pq);
            this.#probe.settle();
            break;
          }
        }
      }
    });
    pq.startReader();
    this.#listener = pq;
  }

  #countNotifications(pq: PQ): void {
    for (let n = pq.notifies(); n !== undefined; n = pq.notifies()) {
      const end = n.extra.indexOf('\n');
      if ((end < 0 ? n.extra : n.extra.slice(0, end)) === this.#tag) continue;
      this.#notified++;
      this.#hear(end < 0 ? undefined : n.extra.slice(end + 1));
    }
  }

  /** The listening session is lost: a commit may have gone unheard, so the count moves on. */
  #lose(pq: PQ): void {
    pq.stopReader();
    finish(pq);
    if (this.#listener === pq) this.#listener = undefined;
    this.#notified++;
    this.#heard = 'unknown';
    this.#probe?.settle();
  }

  /**
   * How a group-commit batch ends on this store: its COMMIT is sent, and the event loop goes on
   * while the server flushes it; reads meanwhile run on the reader's session and see the log as
   * it was before the batch. Anything that needs the writer first waits for the answer.
   */
  get durability(): Durability {
    return {
      begin: async (read) => {
        // Rows come from the lock, the transaction's id and the read, in that order.
        const [, xid, rows] = await this.#inFlightQuery(
          `${this.#beginText()}${read === undefined ? '' : `; ${read}`}`,
          'begin',
        );
        this.#xid = xid?.[0]?.[0] as string | undefined;
        return read === undefined ? undefined : (rows ?? []);
      },
      commit: async (_commitNow, appended) => {
        if (this.#pipe !== null) return this.#commitPipeline(appended);
        await this.#inFlightQuery(this.#commitText(appended), 'commit');
      },
      pipeline: {
        start: () => this.#startPipeline(),
        abandon: () => this.#abandonPipeline(),
      },
    };
  }

  /**
   * From here until the COMMIT, the batch's writes (and savepoints) are sent without waiting for
   * their answers; a read sends what it asks with a sync and reads every answer up to it (DESIGN
   * §10). The COMMIT goes into the pipeline after the last write, and their answers are read
   * together without blocking (`#commitPipeline`). A write that failed, found at a read or at the
   * COMMIT, fails the batch's attempt (`UnprotectedWriteFailed`): it is then written again without
   * the pipeline, every statement answered before the next.
   */
  #startPipeline(): void {
    const pq = this.#live();
    if (this.#pipe !== null || !this.inTransaction) return;
    if (!pq.enterPipelineMode()) return;
    this.#pipe = { sent: [], failed: null };
  }

  /** Reads every answer the pipeline owes; a failure among them fails the batch's attempt. */
  #flushPipeline(): void {
    const pipe = this.#pipe;
    if (pipe === null || pipe.sent.length === 0) {
      if (pipe?.failed) throw new UnprotectedWriteFailed(pipe.failed);
      return;
    }
    const pq = this.#pq;
    this.#current = pq;
    if (!pq.pipelineSync()) pipe.failed ??= this.#lostError(pq);
    const answers: Answers = { sent: pipe.sent.splice(0), next: 0, answered: false, failed: null };
    this.#readAnswers(pq, answers, true);
    if (answers.failed !== null && sessionEnding(answers.failed.error as PostgresError))
      this.#writerLost = true;
    pipe.failed ??= answers.failed?.error ?? null;
    if (pipe.failed !== null) throw new UnprotectedWriteFailed(pipe.failed);
  }

  /**
   * Reads the pipeline's answers in order, up to its sync's; `wait`: each as libpq gives it,
   * waiting for it, else only those that have arrived. Answers whether the sync's was read.
   */
  #readAnswers(pq: PQ, answers: Answers, wait: boolean): boolean {
    for (;;) {
      // A session that ended answers what it still owes at once (an error, or nothing).
      if (!wait && pq.isBusy() && !ended(pq)) return false;
      const one = answers.sent[answers.next];
      const got = pq.getResult();
      if (one === undefined) {
        // Every statement answered: then the sync's own answer.
        if (!got || pq.resultStatus() === 'PGRES_PIPELINE_SYNC') return true;
        continue;
      }
      if (!got) {
        // The end of this statement's answer (none at all: the connection was lost).
        if (!answers.answered) this.#answerFailed(answers, one, this.#lostError(pq));
        answers.next++;
        answers.answered = false;
        continue;
      }
      answers.answered = true;
      if (pq.resultStatus() === 'PGRES_PIPELINE_ABORTED') {
        one.prepares?.delete(one.text);
        continue;
      }
      try {
        this.#check(one.text, pq);
      } catch (err) {
        one.prepares?.delete(one.text);
        this.#answerFailed(answers, one, err as Error);
        // The server ended the session (its FATAL, SQLSTATE class 57P or 08): nothing more will
        // be answered, and libpq may not yet see the end of the socket that says so.
        if (sessionEnding(err as PostgresError)) return true;
        continue;
      }
      one.changes = Number(pq.cmdTuples()) || 0;
      if (one.shape !== undefined) one.rows = this.#rowsOf(pq, one.shape, one.limit);
    }
  }

  #answerFailed(answers: Answers, one: Sent, error: Error): void {
    answers.failed ??= { error, write: one.ends !== true };
  }

  /**
   * The batch's NOTIFY and COMMIT, sent into its pipeline after its writes, with one sync for all
   * of them: the event loop goes on while the server runs the writes and flushes the commit. A
   * write that failed leaves nothing of the batch committed, and rejects with
   * `UnprotectedWriteFailed` (the batch is written again with savepoints); a COMMIT that failed,
   * with its error. A COMMIT whose answer never came (the session lost) is what the server says
   * of the transaction: committed, or not (written again), or unknown when it cannot be asked
   * (`#outcomeUnknown`).
   */
  #commitPipeline(appended: Appended | undefined): Promise<void> {
    const pipe = this.#pipe!;
    const pq = this.#pq;
    const xid = this.#xid;
    this.#xid = undefined;
    for (const text of [this.#notifyText(appended), 'COMMIT']) {
      if (!pq.sendQueryParams(text, [])) pipe.failed ??= this.#lostError(pq);
      pipe.sent.push({ text, ends: true });
    }
    if (!pq.pipelineSync()) pipe.failed ??= this.#lostError(pq);
    // The batch is over for everything but its answers: reads go to the reader's session again.
    this.#pipe = null;
    const answers: Answers = { sent: pipe.sent, next: 0, answered: false, failed: null };
    // A write's failure found at a read earlier in the batch, which a caller swallowed.
    if (pipe.failed !== null) answers.failed = { error: pipe.failed, write: true };
    return new Promise<void>((resolve, reject) => {
      let unwatch = () => {};
      const settle = () => {
        unwatch();
        this.#inFlight = null;
        pq.exitPipelineMode();
        const failed = answers.failed;
        if (failed === null) return resolve();
        const error = failed.error as PostgresError;
        if (sessionEnding(error)) {
          // The session ended (lost, or ended by the server): its transaction with it.
          this.#writerLost = true;
        } else if (pq.transactionStatus() === 2 || pq.transactionStatus() === 3) {
          // A failed write aborted the transaction, which is still open: it ends here.
          try {
            this.#simple('ROLLBACK');
          } catch {
            this.#writerLost = true;
          }
        }
        if (error.code === STORE_UNAVAILABLE || (sessionEnding(error) && !failed.write)) {
          // The session was lost (or ended) before the COMMIT was answered: the server says
          // whether it happened. Not committed, the batch is written again on a new session.
          switch (this.#outcomeOf(xid)) {
            case 'committed':
              return resolve();
            case 'aborted':
              return reject(new UnprotectedWriteFailed(failed.error));
            case 'unknown':
              return reject(this.#outcomeUnknown(failed.error));
          }
        }
        reject(failed.write ? new UnprotectedWriteFailed(failed.error) : failed.error);
      };
      const onReadable = () => {
        if (!pq.consumeInput()) {
          answers.failed ??= { error: this.#lostError(pq), write: false };
          return settle();
        }
        if (this.#readAnswers(pq, answers, false)) settle();
      };
      this.#inFlight = {
        drain: () => {
          this.#readAnswers(pq, answers, true);
          settle();
        },
      };
      unwatch = watch(pq, onReadable);
    });
  }

  #lostError(pq: PQ): PostgresError {
    return new PostgresError(
      pq.errorMessage().trim() || 'the connection was lost',
      UNAVAILABLE,
      undefined,
    );
  }

  /** Reads what the pipeline owes and leaves pipeline mode (before COMMIT, or a simple query). */
  #leavePipeline(): void {
    if (this.#pipe === null) return;
    try {
      this.#flushPipeline();
    } finally {
      this.#pipe = null;
      this.#pq.exitPipelineMode();
    }
  }

  /** Leaves pipeline mode after a failure, whatever the pipeline still owes (it is rolled back). */
  #abandonPipeline(): void {
    try {
      this.#leavePipeline();
    } catch {
      // the batch is being rolled back: what failed in it is already known
    }
  }

  /** Sends a statement into the pipeline; its answer is read at the next flush. */
  #send(sql: Translated, values: (string | null)[], sent: Sent): Sent {
    const pipe = this.#pipe!;
    const pq = this.#pq;
    const prepared = this.#prepared.get(pq)!;
    let name = prepared.get(sql.text);
    if (name === undefined) {
      name = `keel_${prepared.size + 1}`;
      prepared.set(sql.text, name);
      if (!pq.sendPrepare(name, sql.text, values.length)) pipe.failed ??= this.#lostError(pq);
      pipe.sent.push({ text: sql.text, prepares: prepared });
    }
    if (!pq.sendQueryPrepared(name, values)) pipe.failed ??= this.#lostError(pq);
    pipe.sent.push(sent);
    if (sql.creates !== null) this.#keys.set(sql.creates.table, sql.creates.key);
    return sent;
  }

  /** A write: in a batch's pipeline, sent without waiting (its count is read when asked for). */
  run(sql: Translated, values: (string | null)[]): RunResult {
    if (this.#pipe === null || sql.control !== null) {
      this.execute(sql, values);
      return { changes: this.changes() };
    }
    const sent = this.#send(sql, values, { text: sql.text });
    const flush = () => this.#flushPipeline();
    return {
      get changes(): number {
        flush();
        return sent.changes ?? 0;
      },
    };
  }

  /** A read: in a batch's pipeline, sent with everything before it, and answered at once. */
  query(
    sql: Translated,
    values: (string | null)[],
    shape: 'object' | 'raw' | 'pluck',
    limit?: number,
  ): unknown[] {
    if (this.#pipe === null || sql.control !== null) {
      this.execute(sql, values);
      return this.rows(shape, limit);
    }
    const sent = this.#send(sql, values, { text: sql.text, shape, limit });
    this.#flushPipeline();
    return sent.rows ?? [];
  }

  /**
   * Sends `text` on the writer's session and settles with its answer, the event loop free
   * meanwhile (a batch's BEGIN and lock, its COMMIT).
   */
  #inFlightQuery(text: string, what: 'begin' | 'commit'): Promise<unknown[][][]> {
    const pq = this.#live();
    const xid = this.#xid;
    if (what === 'commit') this.#xid = undefined;
    if (!pq.sendQuery(text)) {
      return Promise.reject(
        new PostgresError(
          `cannot send ${what === 'begin' ? 'BEGIN' : 'COMMIT'}: ${pq.errorMessage().trim()}`,
          UNAVAILABLE,
          undefined,
        ),
      );
    }
    // The rows of each statement that returned rows, in order.
    const rows: unknown[][][] = [];
    return new Promise<unknown[][][]>((resolve, reject) => {
      let unwatch = () => {};
      // Every result of the COMMIT, read without blocking once it has all arrived (or, from
      // `drain`, waiting for it): the first error among them fails the batch.
      const collect = (): Error | null => {
        let error: Error | null = null;
        while (pq.getResult()) {
          try {
            this.#check(text, pq);
            if (pq.resultStatus() === 'PGRES_TUPLES_OK')
              rows.push(this.#rowsOf(pq, 'raw') as unknown[][]);
          } catch (err) {
            error ??= err as Error;
          }
        }
        return error;
      };
      const settle = (error: Error | null) => {
        unwatch();
        this.#inFlight = null;
        if (error === null) return resolve(rows);
        if (sessionEnding(error as PostgresError)) this.#writerLost = true;
        if (what === 'begin') {
          // A BEGIN whose lock was not had leaves no transaction behind for the next batch.
          if (this.inTransaction) this.#simple('ROLLBACK');
          return reject(error);
        }
        // A COMMIT whose answer never came: the server says whether it happened.
        if ((error as PostgresError).code === STORE_UNAVAILABLE) {
          switch (this.#outcomeOf(xid)) {
            case 'committed':
              return resolve(rows);
            case 'aborted':
              return reject(error);
            case 'unknown':
              return reject(this.#outcomeUnknown(error));
          }
        }
        reject(error);
      };
      const onReadable = () => {
        if (!pq.consumeInput()) {
          settle(new PostgresError(pq.errorMessage().trim(), UNAVAILABLE, undefined));
          return;
        }
        // A session that ended (the server's FATAL read, its socket closed) is read to the end
        // now: no more input will come to say so.
        if (!pq.isBusy() || ended(pq)) settle(collect());
      };
      this.#inFlight = { drain: () => settle(collect()) };
      unwatch = watch(pq, onReadable);
    });
  }

  get open(): boolean {
    return this.#open;
  }

  get inTransaction(): boolean {
    // A batch's pipeline is inside its transaction, though the session is busy (PQTRANS_ACTIVE).
    if (this.#pipe !== null) return true;
    // PQTRANS_INTRANS (2) or PQTRANS_INERROR (3): local state, no round trip. A COMMIT in
    // flight is PQTRANS_ACTIVE (1): the transaction is over for everything but its answer.
    const status = this.#pq.transactionStatus();
    return status === 2 || status === 3;
  }

  prepare<P extends unknown[] | object = unknown[], R = unknown>(
    source: string,
  ): P extends unknown[] ? Statement<P, R> : Statement<[P], R> {
    const statement: Statement = new PgStatement(this, this.#translate(source));
    return statement as P extends unknown[] ? Statement<P, R> : Statement<[P], R>;
  }

  exec(source: string): this {
    this.#leavePipeline();
    const texts: string[] = [];
    for (const one of splitStatements(source)) {
      const t = this.#translate(one);
      if (t.control !== null) this.#control(t.control);
      else texts.push(t.text);
    }
    if (texts.length === 0) return this;
    const script = texts.join(';\n');
    // Schema changes take the log's lock like any write: nodes starting at once would otherwise
    // race to create the same table (CREATE DATABASE, which no transaction may hold, is not one).
    if (!this.inTransaction && texts.some((t) => SCHEMA_CHANGE.test(t))) {
      this.transaction(() => this.#simple(script))();
    } else this.#simple(script);
    return this;
  }

  transaction<F extends (...params: never[]) => unknown>(fn: F): Transaction<F> {
    const run = (...params: Args<F>): ReturnType<F> => {
      const nested = this.inTransaction;
      const name = `keel_tx_${this.#depth}`;
      this.#control(nested ? { kind: 'savepoint', name } : { kind: 'begin' });
      this.#depth++;
      try {
        const result = fn(...params) as ReturnType<F>;
        if (result instanceof Promise)
          throw new TypeError('Transaction function cannot return a promise');
        this.#control(nested ? { kind: 'release', name } : { kind: 'commit' });
        return result;
      } catch (err) {
        if (this.inTransaction) {
          if (nested) {
            this.#control({ kind: 'rollback-to', name });
            this.#control({ kind: 'release', name });
          } else this.#control({ kind: 'rollback' });
        }
        throw err;
      } finally {
        this.#depth--;
      }
    };
    return Object.assign(run, { immediate: run, deferred: run });
  }

  /**
   * Gathers the planner's statistics of the database's tables (`ANALYZE`), on a session of its
   * own that is connected and read without blocking the event loop; settles once done. Plans the
   * server keeps for prepared statements are made again afterwards, from the new statistics.
   */
  analyze(): Promise<void> {
    const pq = new this.#PQ();
    return new Promise<void>((resolve, reject) => {
      pq.connect(this.#url, (err) => {
        if (err !== undefined && err !== null) {
          finish(pq);
          return reject(
            new PostgresError(
              `cannot connect to ${this.name}: ${redactUrl(err.message.trim())}`,
              UNAVAILABLE,
              undefined,
            ),
          );
        }
        const done = (error: Error | null) => {
          unwatch();
          finish(pq);
          if (error === null) resolve();
          else reject(error);
        };
        let unwatch = () => {};
        // Every table of the database the role may analyse: Keel's, and the embedded cloud's.
        if (!pq.sendQuery('ANALYZE')) {
          return done(this.#lostError(pq));
        }
        unwatch = watch(pq, () => {
          if (!pq.consumeInput()) {
            return done(this.#lostError(pq));
          }
          if (pq.isBusy() && !ended(pq)) return;
          let error: Error | null = null;
          while (pq.getResult()) {
            try {
              this.#check('ANALYZE', pq);
            } catch (e) {
              error ??= e as Error;
            }
          }
          if (error === null && ended(pq)) error = this.#lostError(pq);
          done(error);
        });
      });
    });
  }

  close(): this {
    if (this.#open) {
      this.#inFlight?.drain();
      this.#open = false;
      finish(this.#pq);
      if (this.#reader !== undefined) finish(this.#reader);
      if (this.#listener !== undefined) {
        this.#listener.stopReader();
        finish(this.#listener);
        this.#listener = undefined;
      }
      this.#probe?.settle();
    }
    return this;
  }

  /** Runs a translated statement; its rows (or its count) are read from the connection next. */
  execute(sql: Translated, values: (string | null)[]): void {
    if (sql.control !== null) return this.#control(sql.control);
    this.#leavePipeline();
    // Inside a transaction on the writer's session; outside one, on the reader's.
    const pq = this.inTransaction ? this.#live() : this.#liveReader();
    const prepared = this.#prepared.get(pq)!;
    let name = prepared.get(sql.text);
    if (name === undefined) {
      name = `keel_${prepared.size + 1}`;
      pq.prepare(name, sql.text, values.length);
      this.#check(sql.text, pq);
      prepared.set(sql.text, name);
    }
    pq.execPrepared(name, values);
    this.#check(sql.text, pq);
    if (sql.creates !== null) this.#keys.set(sql.creates.table, sql.creates.key);
  }

  changes(): number {
    return Number(this.#current.cmdTuples()) || 0;
  }

  rows(shape: 'object' | 'raw' | 'pluck', limit = Number.POSITIVE_INFINITY): unknown[] {
    return this.#rowsOf(this.#current, shape, limit);
  }

  #rowsOf(pq: PQ, shape: 'object' | 'raw' | 'pluck', limit = Number.POSITIVE_INFINITY): unknown[] {
    const n = Math.min(pq.ntuples(), limit);
    const columns = pq.nfields();
    const convert = Array.from({ length: columns }, (_, c) => converter(pq.ftype(c)));
    const value = (r: number, c: number): Value =>
      pq.getisnull(r, c) ? null : convert[c]!(pq.getvalue(r, c));
    const out: unknown[] = new Array<unknown>(n);
    if (shape === 'pluck') {
      for (let r = 0; r < n; r++) out[r] = value(r, 0);
      return out;
    }
    if (shape === 'raw') {
      for (let r = 0; r < n; r++) out[r] = Array.from({ length: columns }, (_, c) => value(r, c));
      return out;
    }
    const names = Array.from({ length: columns }, (_, c) => pq.fname(c));
    for (let r = 0; r < n; r++) {
      const row: Record<string, Value> = {};
      for (let c = 0; c < columns; c++) row[names[c]!] = value(r, c);
      out[r] = row;
    }
    return out;
  }

  #translate(source: string): Translated {
    let t = this.#translated.get(source);
    if (t === undefined) {
      t = translate(source, (table) => this.#keys.get(table) ?? this.#primaryKey(table));
      if (t.creates !== null) this.#keys.set(t.creates.table, t.creates.key);
      this.#translated.set(source, t);
    }
    return t;
  }

  /** A table's primary key from the catalog, for tables created by an earlier process. */
  #primaryKey(table: string): string[] | undefined {
    // Outside a transaction on the reader's session, like any read: the writer's may have a
    // batch's BEGIN or COMMIT in flight.
    this.#leavePipeline();
    const pq = this.inTransaction ? this.#live() : this.#liveReader();
    pq.prepare(
      '',
      `SELECT a.attname FROM pg_index i JOIN pg_attribute a
         ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
       WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
      1,
    );
    this.#check('primary key lookup', pq);
    pq.execPrepared('', [table]);
    this.#check('primary key lookup', pq);
    const key = this.rows('pluck') as string[];
    if (key.length === 0) return undefined;
    this.#keys.set(table, key);
    return key;
  }

  #control(c: Control): void {
    switch (c.kind) {
      case 'begin':
        this.#simple(this.#beginText());
        this.#xid = this.#pq.getvalue(0, 0);
        return;
      case 'commit':
        return this.#simple(this.#commitText());
      case 'rollback':
        return this.#simple('ROLLBACK');
      case 'savepoint':
        return this.#simple(`SAVEPOINT ${c.name}`);
      case 'release':
        return this.#simple(`RELEASE SAVEPOINT ${c.name}`);
      case 'rollback-to':
        return this.#simple(`ROLLBACK TO SAVEPOINT ${c.name}`);
    }
  }

  #simple(text: string): void {
    if (this.#pipe !== null) {
      if (PIPELINED_CONTROL.test(text)) {
        if (!this.#pq.sendQueryParams(text, [])) this.#pipe.failed ??= this.#lostError(this.#pq);
        this.#pipe.sent.push({ text });
        return;
      }
      if (text === 'ROLLBACK') this.#abandonPipeline();
      else this.#leavePipeline();
    }
    this.#live().exec(text);
    this.#check(text);
  }

  #check(text: string, pq: PQ = this.#pq): void {
    const status = pq.resultStatus();
    if (
      status === 'PGRES_FATAL_ERROR' ||
      status === 'PGRES_BAD_RESPONSE' ||
      status === 'PGRES_NONFATAL_ERROR'
    ) {
      const fields = pq.resultErrorFields() ?? {};
      // A lost connection has no SQLSTATE of its own from libpq, or the server's shutdown one.
      if (pq.transactionStatus() === 4) fields.sqlState = UNAVAILABLE;
      if (
        sqliteCode(fields.sqlState, undefined) === STORE_UNAVAILABLE ||
        fields.sqlState?.startsWith('57P') === true
      ) {
        this.#stale.writer = pq !== this.#pq;
        this.#stale.reader = pq !== this.#reader;
      }
      const message = fields.messagePrimary ?? (pq.resultErrorMessage() || pq.errorMessage());
      throw new PostgresError(
        `${message.trim()} (in: ${text.slice(0, 200)})`,
        fields.sqlState,
        fields.constraintName,
      );
    }
  }
}
