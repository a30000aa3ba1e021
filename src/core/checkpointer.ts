import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { SqliteDb as Db } from './database.js';

/**
 * Write-ahead log checkpoints on a thread of their own (ADR 0006).
 *
 * SQLite's default checkpoints the log inside whichever COMMIT takes it past 1,000 pages, and a
 * checkpoint copies pages into the database file and syncs it: on this kind of disk that stalls
 * the committing request for milliseconds, every few hundred commands. Here the main connection
 * stops checkpointing on its own (up to a safety limit) and a worker thread with its own
 * connection runs passive checkpoints every `intervalMs`. A passive checkpoint takes no lock a
 * writer needs, so commands never wait on the file sync; the log is still the durable copy until
 * the checkpoint has synced the pages.
 */
export class Checkpointer {
  readonly #worker: Worker;
  readonly #db: Db;
  #stopped: Promise<void> | undefined;
  #exited = false;

  private constructor(db: Db, worker: Worker, onError: (err: unknown) => void) {
    this.#db = db;
    this.#worker = worker;
    // A worker that fails (or ends on its own) hands checkpoints back to the commits.
    worker.on('error', (err: unknown) => {
      this.#inline();
      onError(err);
    });
    worker.on('exit', () => {
      this.#exited = true;
      this.#inline();
    });
  }

  /** SQLite's own checkpoints in the committing connection again. */
  #inline(): void {
    if (this.#db.open) this.#db.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);
  }

  /**
   * Leaves `db`'s checkpoints to a Checkpointer (this process's, or the `--workers` primary's):
   * its commits checkpoint only past the backstop.
   */
  static leaveCheckpoints(db: Db): void {
    // The inline checkpoint stays as a backstop should the worker fall far behind.
    db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
    // A log that grew while the worker lagged is cut back once it has been checkpointed.
    db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
  }

  /** Starts checkpointing the database `db` has open (a file; not `:memory:`). */
  static start(
    db: Db,
    options: {
      intervalMs?: number;
      onCheckpoint?: (result: CheckpointResult) => void;
      /** Told when the worker fails; checkpoints are then made inline again. */
      onError?: (err: unknown) => void;
    } = {},
  ): Checkpointer {
    if (db.memory) throw new Error('an in-memory database has no write-ahead log to checkpoint');
    Checkpointer.leaveCheckpoints(db);
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        path: db.name,
        intervalMs: options.intervalMs ?? 100,
      },
    });
    const listener = options.onCheckpoint;
    if (listener !== undefined) worker.on('message', (m: CheckpointResult) => listener(m));
    // The worker must not keep a process alive that has nothing else to do.
    worker.unref();
    return new Checkpointer(db, worker, options.onError ?? (() => undefined));
  }

  /** Stops the worker after its current checkpoint; the caller then closes its connection. */
  stop(): Promise<void> {
    this.#stopped ??= this.#exited
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          this.#worker.ref();
          this.#worker.once('exit', () => resolve());
          this.#worker.postMessage('stop');
        });
    return this.#stopped;
  }
}

/** What one checkpoint found: frames in the log, and how many of them are now in the file. */
export interface CheckpointResult {
  log: number;
  checkpointed: number;
}

/** SQLite's own threshold, restored when the worker stops. */
const SQLITE_DEFAULT_PAGES = 1000;
/** About 80 MB of log at 4 KiB pages: reached only if the worker cannot keep up. */
const BACKSTOP_PAGES = 20_000;

/**
 * The worker, as CommonJS source: it needs nothing of Keel but the SQLite driver (resolved by the
 * main thread, so it loads the same copy whatever the working directory).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 0');
let last = '';
const checkpoint = () => {
  try {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    const result = { log: row.log, checkpointed: row.checkpointed };
    const text = result.log + '/' + result.checkpointed;
    // Told only when something changed, so an idle daemon's worker stays quiet.
    if (text !== last) parentPort.postMessage(result);
    last = text;
  } catch {
    // Busy (another checkpoint is running): the next tick tries again.
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;
