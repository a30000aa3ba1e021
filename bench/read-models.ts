import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp, type AppDeps } from '../src/app.js';
import { testConfig, type Config } from '../src/config.js';
import { openDatabase } from '../src/core/database.js';
import { systemClock } from '../src/core/clock.js';
import { systemMetadata } from '../src/core/events.js';
import { randomIds } from '../src/core/ids.js';
import { silentLogger } from '../src/core/logger.js';
import { PostgresDatabase } from '../src/core/store/postgres.js';
import { tokenStream } from '../src/secrets/sys/events.js';
import { clusterUrl, startCluster } from '../test/support/postgres.js';
import { ledgerContext } from '../test/support/ledger/context.js';
import { buildLog } from './core.js';
import type { BenchResult } from './support.js';
import { median, round } from './support.js';

/**
 * What checking the guarded read models against the log costs at start-up (ADR 0094), on a log of
 * 1,000,000 events: start-up with the check against start-up without it, in the same run. Two
 * logs bound it: one whose events no guarded projection reads (the chain walk alone), and one
 * where every event is a token, so the rebuild writes a row for each.
 */

const KEY = Buffer.alloc(32, 9);
const TOTAL = 1_000_000;
/** Events of the PostgreSQL log: each statement is a round trip, so building a million takes long. */
const PG_TOTAL = 100_000;

const deps = (databasePath: string): AppDeps => ({
  clock: systemClock,
  ids: randomIds,
  logger: silentLogger(),
  sealKey: KEY,
  databasePath,
  extraContexts: (core) => [ledgerContext(core)],
});

/** A log of `total` secrets-token creations, written through the store with the projections. */
async function tokenLog(config: Config, path: string, total: number): Promise<void> {
  const app = createApp(config, { ...deps(path), checkReadModels: false });
  const { db, store } = app.core;
  const meta = systemMetadata('bench');
  const batch = 10_000;
  for (let from = 0; from < total; from += batch) {
    db.transaction(() => {
      for (let i = from; i < Math.min(total, from + batch); i++) {
        const accessor = `bench${String(i).padStart(8, '0')}`;
        store.append(
          tokenStream(accessor),
          [
            {
              type: 'SecretsTokenCreated',
              data: {
                accessor,
                tokenHmac: i.toString(16).padStart(64, '0'),
                policies: ['default'],
                displayName: `token-${i}`,
                expiresAt: null,
                ttlSeconds: 0,
                parentAccessor: null,
                meta: {},
              },
            },
          ],
          { expectedVersion: 0, metadata: meta },
        );
      }
    })();
  }
  await app.close();
}

type How = 'unchecked' | 'rebuilt' | 'sealed';

/**
 * Milliseconds to open the app on `path`, wall-clock and the process's CPU time (medians of
 * `runs`): without the check, with the check rebuilding and comparing (the seal removed first), or
 * finding the seal of the clean stop before it. CPU time is what the check costs whatever else the
 * machine runs; wall-clock time is what an operator waits.
 */
async function startUp(
  config: Config,
  path: string,
  how: How,
  runs: number,
): Promise<{ wall: number; cpu: number }> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    if (how === 'rebuilt' && config.store.kind === 'sqlite') {
      const db = openDatabase(path);
      db.exec('DROP TABLE IF EXISTS read_model_seal');
      db.close();
    }
    const start = performance.now();
    const used = process.cpuUsage();
    const app = createApp(config, { ...deps(path), checkReadModels: how !== 'unchecked' });
    const { user, system } = process.cpuUsage(used);
    wall.push(performance.now() - start);
    cpu.push((user + system) / 1000);
    await app.close();
  }
  return { wall: median(wall), cpu: median(cpu) };
}

/** A start-up's times as a result's value (wall-clock) and the start of its note. */
const timesOf = (t: { wall: number; cpu: number }) => ({
  value: round(t.wall),
  unit: 'ms',
  cpu: `${round(t.cpu)} ms of CPU`,
});

export async function benchReadModels(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-read-models-'));
  try {
    const results: BenchResult[] = [];
    const logs = [
      {
        name: 'ledger deposits (no guarded projection reads them)',
        path: join(dir, 'ledger.sqlite'),
      },
      { name: 'secrets tokens (each one a guarded row)', path: join(dir, 'tokens.sqlite') },
    ];
    buildLog(logs[0]!.path, TOTAL);
    const config = testConfig(dir);
    await tokenLog(config, logs[1]!.path, TOTAL);
    for (const log of logs) {
      // The first open after writing builds the read models it lacks; it is not counted.
      await startUp(config, log.path, 'unchecked', 1);
      const unchecked = await startUp(config, log.path, 'unchecked', 3);
      // One run: it takes long, and its CPU time hardly varies.
      const rebuilt = timesOf(await startUp(config, log.path, 'rebuilt', 1));
      const sealed = timesOf(await startUp(config, log.path, 'sealed', 3));
      const what = `start-up, ${TOTAL.toLocaleString('en')} ${log.name}`;
      results.push(
        {
          name: `${what}, read models rebuilt and compared`,
          value: rebuilt.value,
          unit: rebuilt.unit,
          note: `${rebuilt.cpu}; after a crash, on PostgreSQL, with --workers, or with no seal; ${round(unchecked.wall, 1)} ms without any check`,
        },
        {
          name: `${what}, read models as sealed at the last clean stop`,
          value: sealed.value,
          unit: sealed.unit,
          note: `${sealed.cpu}; the tables hashed and the seal checked; median of 3`,
        },
      );
    }
    results.push(await onPostgres(dir));
    return results;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The same on a PostgreSQL store (always rebuilt there: no seal), on a throwaway cluster. */
async function onPostgres(dir: string): Promise<BenchResult> {
  const cluster = startCluster();
  try {
    const admin = new PostgresDatabase(clusterUrl(cluster.socketDir));
    admin.exec('CREATE DATABASE keel_read_models');
    admin.close();
    const url = clusterUrl(cluster.socketDir, 'keel_read_models');
    const config = testConfig(dir, { store: { kind: 'postgres', url } });
    const path = join(dir, 'unused.sqlite');
    await tokenLog(config, path, PG_TOTAL);
    const unchecked = await startUp(config, path, 'unchecked', 3);
    const rebuilt = timesOf(await startUp(config, path, 'rebuilt', 3));
    return {
      name: `start-up on PostgreSQL, ${PG_TOTAL.toLocaleString('en')} secrets tokens, read models rebuilt and compared`,
      value: rebuilt.value,
      unit: rebuilt.unit,
      note: `${rebuilt.cpu} in Keel's process; ${round(unchecked.wall, 1)} ms without any check; median of 3; a local cluster over its Unix socket`,
    };
  } finally {
    cluster.stop();
  }
}
