import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { App, AppDeps } from './app.js';
import { createApp } from './app.js';
import type { Config } from './config.js';
import type { ListeningServer } from './http/server.js';
import { listen } from './http/server.js';

/** One daemon per data directory: a lock file holding the owner's pid. */
export class DataDirLock {
  readonly path: string;
  #held = false;

  constructor(dataDir: string) {
    this.path = join(dataDir, 'keel.lock');
  }

  acquire(): void {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(this.path, 'wx', 0o600);
        writeFileSync(fd, `${process.pid}\n`);
        closeSync(fd);
        this.#held = true;
        return;
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

/** Open the data directory, bootstrap it if new, serve HTTP, start the reactors. */
export async function startDaemon(config: Config, deps: AppDeps = {}): Promise<Daemon> {
  mkdirSync(config.dataDir, { recursive: true });
  const lock = new DataDirLock(config.dataDir);
  lock.acquire();
  let app: App | undefined;
  try {
    app = createApp(config, deps);
    const server = await listen(app.callback, config.listen.host, config.listen.port);
    const boot = app.bootstrap();
    let bootstrapPath: string | null = null;
    if (boot !== null) {
      bootstrapPath = join(config.dataDir, 'bootstrap.json');
      writeFileSync(
        bootstrapPath,
        `${JSON.stringify({ ...boot, address: config.publicAddress }, null, 2)}\n`,
        { mode: 0o600 },
      );
      chmodSync(bootstrapPath, 0o600);
    }
    app.start();
    const running = app;
    let stopping: Promise<void> | undefined;
    return {
      app: running,
      server,
      bootstrapPath,
      stop: () =>
        (stopping ??= (async () => {
          await server.close();
          await running.close();
          lock.release();
        })()),
    };
  } catch (err) {
    await app?.close();
    lock.release();
    throw err;
  }
}
