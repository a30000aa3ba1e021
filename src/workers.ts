import cluster from 'node:cluster';
import type { Worker } from 'node:cluster';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Checkpointer } from './core/checkpointer.js';
import { openDatabase } from './core/database.js';
import type { Logger } from './core/logger.js';
import { stopProcessesIn } from './scratch-processes.js';
import { processScratch, type Config } from './config.js';
import { DataDirLock } from './daemon.js';

/** What a worker tells its primary once it serves (`process.send`). */
export interface WorkerReady {
  type: 'keel-worker-ready';
  url: string;
  bootstrapPath: string | null;
}

const isReady = (m: unknown): m is WorkerReady =>
  typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'keel-worker-ready';

export interface Primary {
  url: string;
  bootstrapPath: string | null;
  /** The workers' process ids (a replaced worker's successor included). */
  pids(): number[];
  stop(): Promise<void>;
}

/**
 * The primary of `--workers N` (ADR 0080): it locks the data directory, forks the workers one
 * after another (the first creates, migrates and bootstraps the log; the others find it ready),
 * runs the write-ahead-log checkpoints for all of them, and replaces a worker that dies. The
 * workers share the listener through node:cluster; which of them leads the reactors and timers
 * is settled among them through the database.
 */
export async function startPrimary(config: Config, logger: Logger): Promise<Primary> {
  mkdirSync(config.dataDir, { recursive: true });
  const lock = new DataDirLock(config.dataDir);
  const leftRunning = lock.acquire();
  if (leftRunning.length > 0)
    logger.warn(
      { pids: leftRunning },
      "stopped the phases a killed daemon left running in the data directory's scratch",
    );
  const workers = new Set<Worker>();
  let stopping = false;
  let serving = false;

  const fork = (): Promise<WorkerReady> =>
    new Promise<WorkerReady>((resolve, reject) => {
      const worker = cluster.fork();
      workers.add(worker);
      let served = false;
      worker.on('message', (m: unknown) => {
        if (!isReady(m)) return;
        served = true;
        resolve(m);
      });
      worker.once('exit', (code, signal) => {
        workers.delete(worker);
        // What its phases left: a worker killed mid-phase could stop neither its terraform nor
        // remove its files (in clear).
        if (worker.process.pid !== undefined) {
          const scratch = processScratch(config.dataDir, worker.process.pid);
          const stopped = stopProcessesIn(scratch);
          if (stopped.length > 0)
            logger.warn({ pids: stopped }, 'stopped the phases a dead worker left running');
          rmSync(scratch, { recursive: true, force: true });
        }
        reject(new Error(`a worker exited (${signal ?? code}) before it served`));
        if (stopping || !serving) return;
        // One that never served would fail again: no loop of forks, the others go on serving.
        if (!served) {
          logger.error({ pid: worker.process.pid, code, signal }, 'a new worker failed to start');
          return;
        }
        logger.warn({ pid: worker.process.pid, code, signal }, 'a worker died; starting another');
        // Its failure to start is logged by its own exit handler.
        fork().catch(() => undefined);
      });
    });

  const stopWorkers = async () => {
    stopping = true;
    await Promise.all(
      [...workers].map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve();
            w.once('exit', () => resolve());
            w.process.kill('SIGTERM');
          }),
      ),
    );
  };

  let checkpoints: { db: ReturnType<typeof openDatabase>; worker: Checkpointer } | undefined;
  try {
    const first = await fork();
    for (let i = 1; i < config.workers; i++) await fork();
    // The workers' commits leave checkpoints to this process (Checkpointer.leaveCheckpoints);
    // PostgreSQL checkpoints by itself.
    if (config.store.kind === 'sqlite') {
      const db = openDatabase(join(config.dataDir, 'keel.sqlite'));
      checkpoints = {
        db,
        worker: Checkpointer.start(db, {
          onError: (err) =>
            logger.error({ err }, 'the checkpoint worker failed; checkpoints are inline again'),
        }),
      };
    }
    serving = true;
    const held = checkpoints;
    let stopped: Promise<void> | undefined;
    return {
      url: first.url,
      bootstrapPath: first.bootstrapPath,
      pids: () => [...workers].flatMap((w) => (w.process.pid === undefined ? [] : [w.process.pid])),
      stop: () =>
        (stopped ??= (async () => {
          await stopWorkers();
          await held?.worker.stop();
          held?.db.close();
          lock.release();
        })()),
    };
  } catch (err) {
    await stopWorkers();
    lock.release();
    throw err;
  }
}
