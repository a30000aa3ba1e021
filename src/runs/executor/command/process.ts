import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { LogSink } from '../types.js';

/**
 * util-linux's `setpriv`, which starts a program with a parent-death signal: an engine started
 * through it is killed the moment the daemon that started it dies (a `kill -9`, a crash, the node
 * of a cluster lost), rather than going on changing infrastructure with no one to record what it
 * did while another node (or the next daemon) takes its run over. Null where it is not installed.
 */
export const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p)) ?? null;

/** How a child process ended. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Standard output when it was captured rather than logged. */
  stdout: string;
}

/** A started child process that can be interrupted (SIGINT) or killed (SIGKILL). */
export interface RunningProcess {
  exit: Promise<ProcessExit>;
  signal(signal: 'SIGINT' | 'SIGKILL'): void;
}

export interface SpawnOptions {
  cwd: string;
  env: Record<string, string>;
  /** Every line of stdout (unless captured) and stderr goes here as soon as it is read. */
  log: LogSink;
  /** Keep stdout as data instead of logging it (for `show -json`). */
  captureStdout?: boolean;
}

/** Starts `binary args…` and streams its output line by line. */
export function runProcess(
  binary: string,
  args: readonly string[],
  options: SpawnOptions,
): RunningProcess {
  // setpriv sets the signal, then executes the engine in its own place (the same process).
  const [file, argv] =
    SETPRIV === null ? [binary, args] : [SETPRIV, ['--pdeathsig', 'KILL', '--', binary, ...args]];
  const child = spawn(file, argv, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // What setpriv says when it cannot start the engine, put as a failed spawn is put below.
  const unstarted = `setpriv: failed to execute ${binary}: `;
  let stdout = '';
  const closed: Promise<void>[] = [];
  const stream = (input: NodeJS.ReadableStream) => {
    const lines = createInterface({ input, crlfDelay: Infinity });
    lines.on('line', (line) =>
      options.log(
        line.startsWith(unstarted)
          ? `Error: could not start ${binary}: ${line.slice(unstarted.length)}`
          : line,
      ),
    );
    closed.push(new Promise((resolve) => lines.on('close', () => resolve())));
  };
  if (options.captureStdout)
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  else stream(child.stdout);
  stream(child.stderr);
  const exit = new Promise<ProcessExit>((resolve) => {
    child.on('error', (error) => {
      options.log(`Error: could not start ${binary}: ${error.message}`);
      resolve({ code: 127, signal: null, stdout });
    });
    child.on('close', (code, signal) => {
      void Promise.all(closed).then(() => resolve({ code, signal, stdout }));
    });
  });
  return {
    exit,
    signal: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}
