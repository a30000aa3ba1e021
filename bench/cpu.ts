/**
 * CPU time per operation of a server process, read from `/proc/<pid>/stat` (user + system time of
 * every thread of the process: its main thread, the libuv pool that generates keys, the checkpoint
 * worker). Unlike requests per second it hardly moves with what else the machine runs, so it is
 * the number to compare a change by on a shared machine. Keel, cfssl and the floor server are
 * read the same way.
 *
 * `npx tsx bench/cpu-probe.ts` prints the per-operation CPU of the two writes issue 17 sets targets on:
 * EC P-256 issue (Keel, the floor, cfssl) and `POST /runs` (Keel, the floor).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { BenchResult } from './support.js';

/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;

/** utime + stime of a /proc stat file, in µs. */
function statMicros(path: string): number {
  const stat = readFileSync(path, 'latin1');
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / TICKS_PER_SECOND;
}

/** The live processes descended from `pid` (its workers, say), `pid` first. */
function processTree(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++)
    for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child);
  return tree;
}

/**
 * `node`'s flags for a bench's daemon process: tsx's loader, and with `KEEL_BENCH_PROFILE=DIR` a
 * CPU profile written to DIR (docs/benchmarks.md, "Where Keel's main thread goes").
 */
export function daemonExecArgv(): string[] {
  const dir = process.env.KEEL_BENCH_PROFILE;
  const profile = dir ? ['--cpu-prof', '--cpu-prof-interval=200', `--cpu-prof-dir=${dir}`] : [];
  return [...profile, '--import', 'tsx'];
}

/**
 * CPU time (user + system) a live process has used so far, in µs: all its threads, or with
 * `mainThread` only the thread that runs its event loop (the one that caps a Node server's rate).
 * With `tree`, the sum over the process and its descendants (a daemon's workers).
 */
export function processCpuMicros(pid: number, mainThread = false, tree = false): number {
  let sum = 0;
  for (const p of tree ? processTree(pid) : [pid]) {
    try {
      sum += statMicros(mainThread ? `/proc/${p}/task/${p}/stat` : `/proc/${p}/stat`);
    } catch {
      // a descendant that exited meanwhile
    }
  }
  return sum;
}

/**
 * How busy the whole machine was while `work` ran: the share of all cores' time not idle (from
 * `/proc/stat`), 1 being every core busy throughout. Where it is near 1, a rate is what the cores
 * allow, whatever shares them (the load generator, the peer, PostgreSQL).
 */
export async function machineBusy<T>(work: () => Promise<T>): Promise<{ value: T; busy: number }> {
  const sample = () => {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1);
    const ticks = fields.map(Number);
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
    return { idle, total: ticks.reduce((a, b) => a + b, 0) };
  };
  const before = sample();
  const value = await work();
  const after = sample();
  const total = after.total - before.total;
  return { value, busy: total > 0 ? 1 - (after.idle - before.idle) / total : 0 };
}

export interface CpuRate {
  /** Operations per second (wall clock; moves with the machine's load). */
  perSecond: number;
  /** The server's CPU µs per operation, all threads (hardly moves with load). */
  cpuMicros: number;
  /** The part of `cpuMicros` spent on the server's main thread. */
  mainMicros: number;
}

/**
 * `total` calls with `concurrency` in flight after `warmup` unmeasured ones; the server process
 * `pid`'s CPU time over the measured calls, divided by their number.
 */
export async function cpuRate(
  pid: number,
  total: number,
  concurrency: number,
  call: (i: number) => Promise<void>,
  warmup = Math.min(total, 1000),
  tree = false,
): Promise<CpuRate> {
  const run = concurrently(concurrency, call);
  await run(warmup, total);
  const cpuBefore = processCpuMicros(pid, false, tree);
  const mainBefore = processCpuMicros(pid, true, tree);
  const start = performance.now();
  await run(total, 0);
  const seconds = (performance.now() - start) / 1000;
  return {
    perSecond: total / seconds,
    cpuMicros: (processCpuMicros(pid, false, tree) - cpuBefore) / total,
    mainMicros: (processCpuMicros(pid, true, tree) - mainBefore) / total,
  };
}

/**
 * Runs `count` calls, `concurrency` at a time, numbered from `offset` (a warm-up numbers its calls
 * past the measured ones so they touch other names).
 */
export function concurrently(
  concurrency: number,
  call: (i: number) => Promise<void>,
): (count: number, offset: number) => Promise<void> {
  return async (count, offset) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) await call(offset + next++);
      }),
    );
  };
}

/**
 * Rows of the CPU each server spent per operation over the calls its throughput row measured,
 * Keel's first: the per-operation cost beside the rate, in the same run. A Node server's main
 * thread (its event loop) is named apart, being what caps its rate; a Go server (`go: true`,
 * cfssl) spreads its work over the runtime's threads, so it has no such thread.
 */
export function cpuRows(
  operation: string,
  servers: readonly [who: string, measured: CpuRate, kind?: 'go'][],
): BenchResult[] {
  const keel = servers[0]?.[1];
  return servers.map(([who, r, kind], i) => {
    const ratio =
      i === 0 || keel === undefined
        ? ''
        : `; Keel spends ${(keel.cpuMicros / r.cpuMicros).toFixed(2)}× this` +
          (kind === 'go' ? '' : ` (main thread ${(keel.mainMicros / r.mainMicros).toFixed(2)}×)`);
    const main =
      kind === 'go'
        ? 'a Go process: the runtime spreads the work over its threads and both cores'
        : `main thread ${Math.round(r.mainMicros)} µs`;
    return {
      name: `CPU per op: ${operation}, ${who}`,
      value: Math.round(r.cpuMicros),
      unit: 'µs',
      note: `all threads of the server process (/proc), over the calls of its rate row; ${main}${ratio}`,
    };
  });
}
