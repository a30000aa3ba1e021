import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import cluster from 'node:cluster';
import { join } from 'node:path';
import type { RequestListener } from 'node:http';
import type { App, AppDeps } from './app.js';
import { createApp } from './app.js';
import { scratchRoot, type Config } from './config.js';
import { stopProcessesIn } from './scratch-processes.js';
import type { ListeningServer } from './http/server.js';
import { listen } from './http/server.js';
import { startListenerTls } from './http/listener-tls.js';

/**
 * One daemon per data directory: a lock file holding the owner's pid. Taking it stops what an
 * earlier daemon's phases left running in the directory's scratch (`scratchRoot`), then empties it.
 */
export class DataDirLock {
  readonly path: string;
  readonly #dataDir: string;
  #held = false;

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
    this.path = join(dataDir, 'keel.lock');
  }

  /** Takes the lock; answers the pids of the processes a killed daemon's phases left running. */
  acquire(): number[] {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(this.path, 'wx', 0o600);
        writeFileSync(fd, `${process.pid}\n`);
        closeSync(fd);
        this.#held = true;
        // No other daemon serves the directory now: what is in its scratch is an earlier one's,
        // left by a phase it could not finish (killed): its terraform, still running, and files
        // that may hold a workspace's secrets.
        const stopped = stopProcessesIn(scratchRoot(this.#dataDir));
        rmSync(scratchRoot(this.#dataDir), { recursive: true, force: true });
        return stopped;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const pid = Number(readFileSync(this.path, 'utf8').trim());
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
          throw new Error(
            `another Keel process (pid ${pid}) is using the data directory ${join(this.path, '..')}; stop it first or choose another --data`,
          );
        }
        // A stale lock left by a process that died: take it over.
        unlinkSync(this.path);
      }
    }
    throw new Error(`could not lock ${this.path}`);
  }

  release(): void {
    if (this.#held && existsSync(this.path)) unlinkSync(this.path);
    this.#held = false;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface Daemon {
  app: App;
  server: ListeningServer;
  bootstrapPath: string | null;
  stop(): Promise<void>;
}

/**
 * The data directory is the owner's alone: it and every directory in it 0700, every file 0600
 * (what Keel creates is made so by the process umask; this tightens what was made before).
 */
export function makePrivate(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const walk = (path: string): void => {
    chmodSync(path, 0o700);
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) chmodSync(child, 0o600);
    }
  };
  walk(dir);
}

/** Open the data directory, bootstrap it if new, serve HTTP, start the reactors. */
export async function startDaemon(config: Config, deps: AppDeps = {}): Promise<Daemon> {
  process.umask(0o077);
  makePrivate(config.dataDir);
  // A worker of `--workers` serves the directory its primary has locked (and checkpoints).
  const worker = config.workers > 1 && cluster.isWorker;
  const lock = new DataDirLock(config.dataDir);
  const leftRunning = worker ? [] : lock.acquire();
  let app: App | undefined;
  let server: ListeningServer | undefined;
  try {
    // Bind first, so a port chosen by the OS (`:0`) is known before anything records an address.
    let handler: RequestListener = (_req, res) => {
      res.statusCode = 503;
      res.end('starting');
    };
    const tls = await startListenerTls(config, deps);
    server = await listen(
      (req, res) => handler(req, res),
      config.listen.host,
      config.listen.port,
      tls?.context,
      config,
    );
    const effective: Config =
      config.listen.port === 0 && config.publicAddress.endsWith(':0')
        ? Object.freeze({ ...config, publicAddress: server.url })
        : config;
    app = createApp(effective, { backgroundCheckpoints: !worker, ...deps });
    handler = app.callback;
    const boot = app.bootstrap();
    let bootstrapPath: string | null = null;
    if (boot !== null) {
      bootstrapPath = join(config.dataDir, 'bootstrap.json');
      writeFileSync(bootstrapPath, `${JSON.stringify(boot, null, 2)}\n`, { mode: 0o600 });
      chmodSync(bootstrapPath, 0o600);
    }
    if (leftRunning.length > 0)
      app.core.logger.warn(
        { pids: leftRunning },
        "stopped the phases a killed daemon left running in the data directory's scratch",
      );
    app.start();
    const running = app;
    const listening = server;
    const stopRenewal = tls?.renewEvery(listening, running.core.logger) ?? (() => undefined);
    let stopping: Promise<void> | undefined;
    return {
      app: running,
      server: listening,
      bootstrapPath,
      stop: () =>
        (stopping ??= (async () => {
          stopRenewal();
          await listening.close();
          await running.close();
          lock.release();
        })()),
    };
  } catch (err) {
    await server?.close();
    await app?.close();
    lock.release();
    throw err;
  }
}
