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
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { BenchResult } from './support.js';

/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system) a live process has used so far, in µs: all its threads, or with
 * `mainThread` only the thread that runs its event loop (the one that caps a Node server's rate).
 */
export function processCpuMicros(pid: number, mainThread = false): number {
  const stat = readFileSync(
    mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`,
    'latin1',
  );
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / TICKS_PER_SECOND;
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
): Promise<CpuRate> {
  const run = async (count: number, offset: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) await call(offset + next++);
      }),
    );
  };
  await run(warmup, total);
  const cpuBefore = processCpuMicros(pid);
  const mainBefore = processCpuMicros(pid, true);
  const start = performance.now();
  await run(total, 0);
  const seconds = (performance.now() - start) / 1000;
  return {
    perSecond: total / seconds,
    cpuMicros: (processCpuMicros(pid) - cpuBefore) / total,
    mainMicros: (processCpuMicros(pid, true) - mainBefore) / total,
  };
}

/**
 * Rows of the CPU each server spent per operation over the calls its throughput row measured,
 * Keel's first: the per-operation cost beside the rate, in the same run.
 */
export function cpuRows(
  operation: string,
  servers: readonly [who: string, measured: CpuRate][],
): BenchResult[] {
  const keel = servers[0]?.[1];
  return servers.map(([who, r], i) => ({
    name: `CPU per op: ${operation}, ${who}`,
    value: Math.round(r.cpuMicros),
    unit: 'µs',
    note:
      `all threads of the server process (/proc), over the calls of its rate row; main thread ${Math.round(r.mainMicros)} µs` +
      (i === 0 || keel === undefined
        ? ''
        : `; Keel spends ${(keel.cpuMicros / r.cpuMicros).toFixed(2)}× this (main thread ${(keel.mainMicros / r.mainMicros).toFixed(2)}×)`),
  }));
}
