import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bootstrap } from '../../src/app.js';

const ROOT = join(import.meta.dirname, '..', '..');
export const MAIN = join(ROOT, 'src', 'main.ts');
export const LEDGER_MAIN = join(ROOT, 'test', 'support', 'ledger-daemon.ts');

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

/**
 * Start the real daemon (`keel serve`) on a loopback port chosen by the OS and wait for its
 * "keel is serving" line.
 */
export async function startDaemon(
  options: { dataDir?: string; entry?: string; env?: Record<string, string>; args?: string[] } = {},
): Promise<RunningDaemon> {
  const dataDir = options.dataDir ?? newDataDir();
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      options.entry ?? MAIN,
      'serve',
      '--data',
      dataDir,
      '--listen',
      '127.0.0.1:0',
      ...(options.args ?? []),
    ],
    {
      cwd: ROOT,
      env: { ...process.env, KEEL_LOG_LEVEL: 'info', ...options.env },
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

/** Run a `keel` CLI command to completion. */
export function keel(
  args: string[],
  env: Record<string, string> = {},
  entry = MAIN,
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', entry, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
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
