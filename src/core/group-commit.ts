import type { Db } from './database.js';

/**
 * How a batch reaches the disk. `commit` is called once the batch's items are written, inside its
 * transaction; it ends the transaction and settles once the batch is durable. The default runs
 * COMMIT, durable when it returns (as durable as the store is set to be). SQLite at `--sync full`
 * commits without its own sync and syncs the write-ahead log on the libuv pool; PostgreSQL sends
 * the COMMIT and waits for the server's answer without blocking the event loop.
 *
 * A `SyncFailed` rejection says the commit happened but its durability is unknown; any other
 * rejection says the batch was not committed.
 */
export interface Durability {
  /**
   * Whether the next batch may be written while this one's durability is awaited (SQLite: its
   * COMMIT has returned and only the disk sync is pending, which a later sync covers too), once as
   * many commands wait as this one held. A PostgreSQL COMMIT in flight holds the writer's session,
   * so the next batch waits.
   */
  readonly overlaps?: boolean;
  /**
   * Opens the batch's transaction without blocking the event loop (PostgreSQL: BEGIN and the
   * log's lock, whose wait for another node's batch is answered asynchronously). Without it, the
   * batch's own `BEGIN IMMEDIATE` opens it. `read`, a query the batch's hooks ask for
   * (`BatchHooks.opening`), runs in the same round trip once the lock is held; its rows are the
   * answer.
   */
  begin?(read?: string): Promise<unknown[][] | undefined>;
  /** Wraps the whole batch (what must be set before BEGIN and restored after the COMMIT). */
  around?(batch: () => void): void;
  /**
   * Sending a batch's writes without waiting for each answer (PostgreSQL's pipeline mode), from
   * `start` to the batch's `commit`, whose answer comes with theirs. A write that failed is found
   * at the next read, which throws `UnprotectedWriteFailed`, or at the commit, which rejects with
   * it (nothing of the batch committed): the batch is then written again without the pipeline,
   * each statement answered before the next. `abandon` leaves it whatever it still owes (the
   * batch is being rolled back).
   */
  readonly pipeline?: { start(): void; abandon(): void };
  /**
   * `appended`: the event types and streams the batch appended, for stores that tell other
   * processes what changed (PostgreSQL's notification).
   */
  commit(commitNow: () => void, appended?: Appended): Promise<void>;
  /** Lets go of what `commit` holds open (the store is being closed). */
  close?(): Promise<void>;
}

/** What a batch appended: its event types and its streams, each once. */
export interface Appended {
  readonly types: readonly string[];
  readonly streams: readonly string[];
}

/**
 * A write failed where nothing could undo it alone (a one-stream command's append, written without
 * a savepoint of its own inside a batch): the batch is rolled back and written again with one.
 */
export class UnprotectedWriteFailed extends Error {
  constructor(readonly failure: unknown) {
    super(`a write failed inside a batch: ${(failure as Error).message}`);
  }
}

/** The commit happened, but the disk did not confirm it: nothing more may be taken. */
export class SyncFailed extends Error {}

/** COMMIT as it is: durable (or as durable as the store is set to be) when it returns. */
export const COMMIT_IS_DURABLE: Durability = {
  commit: (commitNow) => {
    commitNow();
    return Promise.resolve();
  },
};

/** How long a batch may hold the event loop before the rest of its commands wait for the next. */
const BATCH_BUDGET_MS = 2;

interface Pending {
  work: () => unknown;
  /** Whether the work undoes its own writes when it throws (then it needs no savepoint of its own). */
  undoesItself: boolean;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  outcome?: { ok: true; value: unknown } | { ok: false; error: unknown };
}

/**
 * What the batch tells the code around it, so caches and listeners follow what was committed.
 * `Written` is what `ended` keeps of a batch for `durable` or `failed`.
 */
export interface BatchHooks<Written> {
  /**
   * A query to run as the batch's transaction begins, under the log's lock, where the store
   * opens it asynchronously (`Durability.begin`): what another process wrote since this one last
   * knew the log's end. Undefined: nothing to ask.
   */
  opening?(): string | undefined;
  /** The batch's transaction has begun; `opened`: the rows `opening` asked for, if it ran. */
  start(opened?: unknown[][]): void;
  /**
   * Before an item runs: the start of what `undone` may have to forget. `unprotected`: the item's
   * one append may skip its own savepoint (a failure of it fails the batch's first attempt).
   */
  begin(unprotected: boolean): void;
  /** The item's savepoint was rolled back (it threw): forget what it wrote. */
  undone(): void;
  /** The item's savepoint was released: keep what it wrote for the batch. */
  kept(): void;
  /**
   * Every item has run; the COMMIT is next (synchronous, before anything else runs). Answers what
   * `durable` or `failed` is given for this batch.
   */
  ended(): Written;
  /** What the batch `ended` with appended (told to other processes with its commit). */
  appended?(batch: Written): Appended;
  /** The whole batch was rolled back while it was being written. */
  aborted(): void;
  /** The batch's COMMIT, or its sync, failed after it was written. */
  failed(batch: Written): void;
  /** The batch is committed and durable: what it kept may now be announced. */
  durable(batch: Written): void;
}

/**
 * Group commit (DESIGN §10). Work submitted while a batch is being written waits for the next
 * one; a batch runs every waiting item in order, each in a savepoint of one transaction that holds
 * the write lock once, so an item decides against the state the items before it left and one
 * refusal undoes only its own writes. One COMMIT and one disk sync serve the whole batch, and each
 * item's promise settles only once the batch is durable: a caller is never told of a write that a
 * crash could still take back.
 *
 * Everything up to the COMMIT runs synchronously, so nothing else on the event loop sees a batch
 * half written; only the commit's durability is awaited, and new work queues meanwhile.
 */
export class GroupCommit<Written> {
  readonly #db: Db;
  readonly #durability: Durability;
  readonly #hooks: BatchHooks<Written>;
  readonly #stmts;
  #queue: Pending[] = [];
  #writing = false;
  #scheduled = false;
  /** The last batch written, settling (its promises settle once it is durable). */
  #settling: Promise<void> = Promise.resolve();
  /**
   * While a batch's durability is awaited on a store whose batches overlap: how many items must
   * be waiting for the next batch to start before it is durable, and what starts it. No batch
   * starts meanwhile.
   */
  #overlapAt: { items: number; start: () => void } | null = null;
  /** Set when a disk sync failed: what was committed is not known to be durable, so nothing more is taken. */
  #broken: Error | null = null;
  /** Whether a batch's items are being run now (work may ask whether it is inside one). */
  #inBatch = false;

  readonly #budgetMs: number;

  constructor(
    db: Db,
    durability: Durability,
    hooks: BatchHooks<Written>,
    budgetMs = BATCH_BUDGET_MS,
  ) {
    this.#budgetMs = budgetMs;
    this.#db = db;
    this.#durability = durability;
    this.#hooks = hooks;
    this.#stmts = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT keel_batch_item'),
      release: db.prepare('RELEASE keel_batch_item'),
      rollbackTo: db.prepare('ROLLBACK TO keel_batch_item'),
    };
  }

  /** Whether the caller runs inside a batch's transaction (as a submitted item's work). */
  get inBatch(): boolean {
    return this.#inBatch;
  }

  /**
   * Runs `work` in the next batch, inside a savepoint of its own unless it `undoesItself`, and
   * settles with its result (or its error) once the batch is durable. `work` is synchronous: it
   * runs inside the transaction.
   */
  submit<T>(work: () => T, options: { undoesItself?: boolean } = {}): Promise<T> {
    if (this.#broken !== null) return Promise.reject(this.#broken);
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        work,
        undoesItself: options.undoesItself === true,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      if (this.#overlapAt !== null && this.#queue.length >= this.#overlapAt.items) {
        this.#overlapAt.start();
      }
      this.#schedule();
    });
  }

  /** Waits for the batches in flight, then lets go of the sync's file. */
  async close(): Promise<void> {
    await this.drained();
    await this.#durability.close?.();
  }

  /** Settles once every item submitted before the call is durable (or has failed). */
  async drained(): Promise<void> {
    while (this.#writing || this.#queue.length > 0) {
      await this.submit(() => undefined).catch(() => undefined);
    }
    await this.#settling;
  }

  #schedule(): void {
    if (this.#writing || this.#scheduled || this.#overlapAt !== null) return;
    this.#scheduled = true;
    // One turn of the event loop: requests read in the same turn join the batch.
    setImmediate(() => {
      this.#scheduled = false;
      void this.#write();
    });
  }

  async #write(): Promise<void> {
    if (this.#writing || this.#overlapAt !== null || this.#queue.length === 0) return;
    this.#writing = true;
    let begun = false;
    let opened: unknown[][] | undefined;
    if (this.#durability.begin !== undefined) {
      try {
        // The lock is waited for without blocking; commands that arrive meanwhile join the batch.
        opened = await this.#durability.begin(this.#hooks.opening?.());
        begun = true;
      } catch (err) {
        for (const item of this.#queue.splice(0)) item.reject(err);
        this.#writing = false;
        if (this.#queue.length > 0) this.#schedule();
        return;
      }
    }
    const batch = this.#queue;
    this.#queue = [];
    let written: { committed: Promise<void>; token: Written } | undefined;
    try {
      const run = () => {
        try {
          written = this.#run(batch, begun, false, opened);
        } catch (err) {
          if (!(err instanceof UnprotectedWriteFailed)) throw err;
          // Rolled back: written again, every command with a savepoint of its own.
          for (const item of batch) delete item.outcome;
          written = this.#run(batch, false, true);
        }
      };
      if (this.#durability.around === undefined) run();
      else this.#durability.around(run);
    } catch (err) {
      // The transaction itself failed (BEGIN, or a failure that ended it): nothing was written.
      for (const item of batch) item.outcome = { ok: false, error: err };
    }
    // Batches settle in the order they were written, each once it is durable.
    const previous = this.#settling;
    const settled = (async () => {
      await previous;
      if (written !== undefined) await this.#durable(batch, written);
      for (const item of batch) {
        const outcome = item.outcome ?? { ok: false, error: new Error('batch item did not run') };
        if (outcome.ok) item.resolve(outcome.value);
        else item.reject(outcome.error);
      }
    })();
    this.#settling = settled;
    if (this.#durability.overlaps !== true) await settled;
    this.#writing = false;
    if (this.#durability.overlaps === true && this.#queue.length < batch.length) {
      // The next batch is written while this one's sync runs only once as many items wait as
      // this one held: a fast sync is over first, and the next batch takes everything that came
      // meanwhile (fewer, larger batches cost less per item); a slow one does not hold them.
      // This batch is written (`drained` does not wait for it to be durable by writing more).
      await new Promise<void>((start) => {
        this.#overlapAt = { items: batch.length, start };
        void settled.then(start);
      });
      this.#overlapAt = null;
    }
    if (this.#queue.length > 0) this.#schedule();
    await settled;
  }

  async #durable(
    batch: Pending[],
    written: { committed: Promise<void>; token: Written },
  ): Promise<void> {
    try {
      await written.committed;
      this.#hooks.durable(written.token);
    } catch (err) {
      this.#hooks.failed(written.token);
      if (err instanceof UnprotectedWriteFailed) return this.#writeAgain(batch);
      let error = err;
      if (err instanceof SyncFailed) {
        this.#broken ??= new Error(
          `the log's disk sync failed, so what was committed is not known to be durable; restart the daemon: ${err.message}`,
        );
        error = this.#broken;
        for (const item of this.#queue.splice(0)) item.reject(this.#broken);
      }
      for (const item of batch) item.outcome = { ok: false, error };
    }
  }

  /**
   * A batch whose pipelined writes failed at its commit, so that nothing of it was committed:
   * written again in a transaction of its own, every item with a savepoint of its own and every
   * statement answered in turn, so a refused write fails its own item alone.
   */
  async #writeAgain(batch: Pending[]): Promise<void> {
    for (const item of batch) delete item.outcome;
    let written: { committed: Promise<void>; token: Written } | undefined;
    try {
      const begun = this.#durability.begin !== undefined;
      const opened = begun ? await this.#durability.begin?.(this.#hooks.opening?.()) : undefined;
      const run = () => {
        written = this.#run(batch, begun, true, opened);
      };
      if (this.#durability.around === undefined) run();
      else this.#durability.around(run);
    } catch (err) {
      for (const item of batch) item.outcome = { ok: false, error: err };
      return;
    }
    if (written !== undefined) await this.#durable(batch, written);
  }

  /**
   * The batch's transaction: a savepoint per item (unless it undoes itself), then the commit.
   * Synchronous from BEGIN until the COMMIT is sent; answers the promise of its durability.
   */
  #run(
    batch: Pending[],
    begun: boolean,
    careful: boolean,
    opened?: unknown[][],
  ): { committed: Promise<void>; token: Written } {
    const s = this.#stmts;
    if (!begun) s.begin.run();
    this.#inBatch = true;
    this.#hooks.start(opened);
    const pipeline = careful ? undefined : this.#durability.pipeline;
    try {
      pipeline?.start();
      const started = performance.now();
      for (let i = 0; i < batch.length; i++) {
        // A batch holds the event loop while it is written: past its budget, what is left goes
        // to the next batch, so a read waits for at most about this long (on SQLite the next
        // batch is written while this one's sync runs; the order stays the same).
        if (i > 0 && performance.now() - started >= this.#budgetMs) {
          this.#queue.unshift(...batch.splice(i));
          break;
        }
        const item = batch[i]!;
        // A one-stream command writes only in its append, after its decision: a refusal writes
        // nothing, so it needs no savepoint, and its append goes without one too (two statements
        // fewer each, two round trips on PostgreSQL). Should that append fail, the batch is
        // written again with savepoints (`careful`).
        this.#hooks.begin(item.undoesItself && !careful);
        const savepoint = !item.undoesItself;
        if (savepoint) s.savepoint.run();
        try {
          const value = item.work();
          if (savepoint) s.release.run();
          this.#hooks.kept();
          item.outcome = { ok: true, value };
        } catch (error) {
          // A failure SQLite answers by rolling back the whole transaction (a full disk, say)
          // takes the items before this one with it: the batch fails as a whole.
          if (!this.#db.inTransaction || error instanceof UnprotectedWriteFailed) throw error;
          if (savepoint) {
            s.rollbackTo.run();
            s.release.run();
          }
          this.#hooks.undone();
          item.outcome = { ok: false, error };
        }
      }
      this.#inBatch = false;
      const token = this.#hooks.ended();
      const appended = this.#hooks.appended?.(token);
      return { committed: this.#durability.commit(() => s.commit.run(), appended), token };
    } catch (err) {
      this.#inBatch = false;
      pipeline?.abandon();
      if (this.#db.inTransaction) s.rollback.run();
      this.#hooks.aborted();
      throw err;
    }
  }
}
