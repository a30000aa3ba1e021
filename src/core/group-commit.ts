import type { Db } from './database.js';

/**
 * How a batch's commit reaches the disk. `write` runs the batch's transaction, from BEGIN to
 * COMMIT (it may ask the database not to wait for the disk at that COMMIT); `sync` settles once
 * everything committed so far is durable. A store whose COMMIT is durable by itself (PostgreSQL,
 * SQLite at `--sync normal`, an in-memory database) has nothing more to do.
 */
export interface Durability {
  write(transaction: () => void): void;
  sync(): Promise<void>;
  /** Lets go of what `sync` holds open (the store is being closed). */
  close?(): Promise<void>;
}

/** COMMIT as it is: durable (or as durable as the store is set to be) when it returns. */
export const COMMIT_IS_DURABLE: Durability = {
  write: (transaction) => transaction(),
  sync: () => Promise.resolve(),
};

interface Pending {
  work: () => unknown;
  /** Whether the work undoes its own writes when it throws (then it needs no savepoint of its own). */
  undoesItself: boolean;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  outcome?: { ok: true; value: unknown } | { ok: false; error: unknown };
}

/** What the batch tells the code around it, so caches and listeners follow what was committed. */
export interface BatchHooks {
  /** The batch's transaction has begun. */
  start(): void;
  /** Before an item runs: the start of what `undone` may have to forget. */
  begin(): void;
  /** The item's savepoint was rolled back (it threw): forget what it wrote. */
  undone(): void;
  /** The item's savepoint was released: keep what it wrote for the batch. */
  kept(): void;
  /** The whole batch was rolled back. */
  aborted(): void;
  /** The batch's COMMIT returned; its disk sync is still to come. */
  committed(): void;
  /** The batch is durable: what it kept may now be announced. */
  durable(): void;
}

const NO_HOOKS: BatchHooks = {
  start: () => undefined,
  begin: () => undefined,
  undone: () => undefined,
  kept: () => undefined,
  aborted: () => undefined,
  committed: () => undefined,
  durable: () => undefined,
};

/**
 * Group commit (DESIGN §10). Work submitted while a batch is being written waits for the next
 * one; a batch runs every waiting item in order, each in a savepoint of one transaction that holds
 * the write lock once, so an item decides against the state the items before it left and one
 * refusal undoes only its own writes. One COMMIT and one disk sync serve the whole batch, and each
 * item's promise settles only once the batch is durable: a caller is never told of a write that a
 * crash could still take back.
 *
 * Everything up to the COMMIT runs synchronously, so nothing else on the event loop sees a batch
 * half written; only the disk sync is awaited, and new work queues meanwhile.
 */
export class GroupCommit {
  readonly #db: Db;
  readonly #durability: Durability;
  readonly #hooks: BatchHooks;
  readonly #stmts;
  #queue: Pending[] = [];
  #writing = false;
  #scheduled = false;
  /** Set when a disk sync failed: what was committed is not known to be durable, so nothing more is taken. */
  #broken: Error | null = null;
  /** The item running now, if a batch is being written (work may ask whether it is inside one). */
  #inBatch = false;

  constructor(db: Db, durability: Durability = COMMIT_IS_DURABLE, hooks: BatchHooks = NO_HOOKS) {
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
   * Runs `work` in the next batch, inside its own savepoint, and settles with its result (or its
   * error) once the batch is durable. `work` is synchronous: it runs inside the transaction.
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
  }

  #schedule(): void {
    if (this.#writing || this.#scheduled) return;
    this.#scheduled = true;
    // One turn of the event loop: requests read in the same turn join the batch.
    setImmediate(() => {
      this.#scheduled = false;
      void this.#write();
    });
  }

  async #write(): Promise<void> {
    if (this.#writing || this.#queue.length === 0) return;
    this.#writing = true;
    const batch = this.#queue;
    this.#queue = [];
    try {
      try {
        this.#durability.write(() => this.#run(batch));
      } catch (err) {
        // The transaction itself failed (BEGIN or COMMIT): nothing of the batch was written.
        for (const item of batch) item.outcome = { ok: false, error: err };
      }
      if (batch.some((item) => item.outcome?.ok === true)) {
        try {
          await this.#durability.sync();
          this.#hooks.durable();
        } catch (err) {
          this.#broken = new Error(
            `the log's disk sync failed, so what was committed is not known to be durable; restart the daemon: ${(err as Error).message}`,
          );
          for (const item of batch) item.outcome = { ok: false, error: this.#broken };
          for (const item of this.#queue.splice(0)) item.reject(this.#broken);
        }
      }
    } finally {
      this.#writing = false;
    }
    for (const item of batch) {
      const outcome = item.outcome ?? { ok: false, error: new Error('batch item did not run') };
      if (outcome.ok) item.resolve(outcome.value);
      else item.reject(outcome.error);
    }
    if (this.#queue.length > 0) this.#schedule();
  }

  /** The batch's transaction: a savepoint per item, one COMMIT. Synchronous from BEGIN to COMMIT. */
  #run(batch: Pending[]): void {
    const s = this.#stmts;
    s.begin.run();
    this.#inBatch = true;
    this.#hooks.start();
    try {
      for (const item of batch) {
        this.#hooks.begin();
        // Work that undoes its own writes when it throws (one command's append, which has a
        // savepoint of its own) saves the two statements, two round trips on PostgreSQL.
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
          if (!this.#db.inTransaction) throw error;
          if (savepoint) {
            s.rollbackTo.run();
            s.release.run();
          }
          this.#hooks.undone();
          item.outcome = { ok: false, error };
        }
      }
      this.#inBatch = false;
      s.commit.run();
      this.#hooks.committed();
    } catch (err) {
      this.#inBatch = false;
      if (this.#db.inTransaction) s.rollback.run();
      this.#hooks.aborted();
      throw err;
    }
  }
}
