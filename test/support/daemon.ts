import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { inject } from 'vitest';
import type { Bootstrap } from '../../src/app.js';
import { openStore, type OpenedStore } from '../../src/core/store/open.js';
import { freshDatabase } from './store.js';

export const ROOT = join(import.meta.dirname, '..', '..');
export const MAIN = join(ROOT, 'src', 'main.ts');
export const LEDGER_MAIN = join(ROOT, 'test', 'support', 'ledger-daemon.ts');

declare module 'vitest' {
  export interface ProvidedContext {
    /** Keel compiled ahead of time for the run's spawned processes (`daemon-setup.ts`). */
    keelDaemonBuild: string;
  }
}

/**
 * The arguments to `node` that run an entry point: a TypeScript file of the checkout as its copy
 * in the run's ahead-of-time build (ADR 0093), anything else (`bin/keel.js`) as a user runs it.
 */
export function nodeArgs(entry: string, args: readonly string[]): string[] {
  if (!entry.endsWith('.ts')) return [entry, ...args];
  const build = inject('keelDaemonBuild');
  if (build === undefined)
    throw new Error('no daemon build: the project needs test/support/daemon-setup.ts');
  return [join(build, relative(ROOT, entry)).replace(/\.ts$/, '.js'), ...args];
}

export interface RunningDaemon {
  child: ChildProcess;
  url: string;
  dataDir: string;
  /** Everything the daemon printed so far. */
  output(): string;
  bootstrap(): Bootstrap;
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export const newDataDir = () => mkdtempSync(join(tmpdir(), 'keel-e2e-'));

/** The database each data directory's daemons and tools use in the `e2e-pg` project. */
const databases = new Map<string, string>();

/**
 * The environment that puts a daemon or a CLI run on a data directory on the run's store: none
 * on SQLite (the store is `<data>/keel.sqlite`); in the `e2e-pg` project
 * (`KEEL_TEST_STORE=postgres`), `KEEL_STORE` naming a fresh database of the run's PostgreSQL
 * cluster, made the first time the directory is seen and kept with it, so a restart on the same
 * directory finds the same log. A caller that names a store itself keeps it.
 */
export function storeEnv(dataDir: string): Record<string, string> {
  if (process.env.KEEL_TEST_STORE !== 'postgres') return {};
  let url = databases.get(dataDir);
  if (url === undefined) {
    url = freshDatabase().url;
    databases.set(dataDir, url);
  }
  return { KEEL_STORE: url };
}

/**
 * The log and read models of the daemon on `dataDir`, opened by the test itself on the run's
 * store: `<data>/keel.sqlite`, or its database in the `e2e-pg` project.
 */
export function openLog(dataDir: string): OpenedStore {
  const url = storeEnv(dataDir).KEEL_STORE;
  return openStore(
    url === undefined ? { kind: 'sqlite' } : { kind: 'postgres', url },
    join(dataDir, 'keel.sqlite'),
  );
}

const namesStore = (args: readonly string[], env: Record<string, string> = {}) =>
  args.includes('--store') || env.KEEL_STORE !== undefined;

/** The data directory a CLI command names (`--data DIR`), if any. */
const dataDirOf = (args: readonly string[]): string | undefined => {
  const i = args.indexOf('--data');
  return i < 0 ? undefined : args[i + 1];
};

/**
 * Start the real daemon (`keel serve`) on a loopback port chosen by the OS and wait for its
 * "keel is serving" line.
 */
export async function startDaemon(
  options: { dataDir?: string; entry?: string; env?: Record<string, string>; args?: string[] } = {},
): Promise<RunningDaemon> {
  const dataDir = options.dataDir ?? newDataDir();
  const args = options.args ?? [];
  const store = namesStore(args, options.env) ? {} : storeEnv(dataDir);
  const child = spawn(
    process.execPath,
    nodeArgs(options.entry ?? MAIN, [
      'serve',
      '--data',
      dataDir,
      '--listen',
      '127.0.0.1:0',
      ...args,
    ]),
    {
      cwd: ROOT,
      env: { ...process.env, KEEL_LOG_LEVEL: 'info', ...store, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const m = /"address":"(https?:\/\/[^"]+)".*"msg":"keel is serving"/.exec(out);
      if (m !== null) {
        child.stdout.off('data', onData);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', onData);
    void exited.then((code) =>
      reject(new Error(`daemon exited with ${code} before serving:\n${out}`)),
    );
  });
  // In `e2e-pg` the daemon must serve the database it was given, not a SQLite file.
  if (store.KEEL_STORE !== undefined && !out.includes(`"store":"${store.KEEL_STORE}"`)) {
    child.kill('SIGKILL');
    throw new Error(`daemon is not serving ${store.KEEL_STORE}:\n${out}`);
  }
  return {
    child,
    url,
    dataDir,
    output: () => out,
    bootstrap: () => JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')) as Bootstrap,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * Run a `keel` CLI command to completion; on the `e2e-pg` project's store of the data directory
 * it names (`--data DIR`), unless it names a store itself.
 */
export function keel(
  args: string[],
  env: Record<string, string> = {},
  entry = MAIN,
): { status: number | null; stdout: string; stderr: string } {
  const dataDir = dataDirOf(args);
  const store = dataDir === undefined || namesStore(args, env) ? {} : storeEnv(dataDir);
  const r = spawnSync(process.execPath, nodeArgs(entry, args), {
    cwd: ROOT,
    env: { ...process.env, ...store, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Wait for a condition on a real daemon (bounded; the daemon's own clock is real). */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}
