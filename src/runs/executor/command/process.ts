import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { LogSink } from '../types.js';

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
  const child = spawn(binary, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  const closed: Promise<void>[] = [];
  const stream = (input: NodeJS.ReadableStream) => {
    const lines = createInterface({ input, crlfDelay: Infinity });
    lines.on('line', (line) => options.log(line));
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
