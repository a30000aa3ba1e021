import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { createLogger } from '../src/core/logger.js';
import type { BenchResult } from './support.js';
import { median, round } from './support.js';

const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'keel.js');
const RUNS = 7;

/** Median wall time of a whole command, start to exit, in milliseconds. */
function timed(args: string[]): number {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = process.hrtime.bigint();
    const r = spawnSync(process.execPath, args, { cwd: ROOT, stdio: 'ignore' });
    if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}`);
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return median(times);
}

/** How long `keel` takes to start and answer, beside a bare `node` start in the same run. */
export async function benchCli(): Promise<BenchResult[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-cli-'));
  const app = createApp(testConfig(dataDir), { logger: createLogger({ level: 'silent' }) });
  await app.close();
  try {
    const bare = timed(['-e', '0']);
    const rows: [string, string[]][] = [
      ['keel help', ['help']],
      ['keel events --newest 10', ['events', '--data', dataDir, '--newest', '10']],
      ['keel audit verify', ['audit', 'verify', '--data', dataDir]],
      ['keel diagram run', ['diagram', 'run']],
    ];
    return [
      { name: 'node -e 0 (baseline)', value: round(bare), unit: 'ms', note: `median of ${RUNS}` },
      ...rows.map(([name, args]) => {
        const ms = timed([BIN, ...args]);
        return {
          name: `${name} start to exit`,
          value: round(ms),
          unit: 'ms',
          note: `median of ${RUNS}; ${round(ms / bare, 1)}× a bare node start; target < 1,000 ms`,
        };
      }),
    ];
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
