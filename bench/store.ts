import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { systemClock } from '../src/core/clock.js';
import { systemMetadata } from '../src/core/events.js';
import { randomIds } from '../src/core/ids.js';
import { silentLogger } from '../src/core/logger.js';
import { PostgresDatabase } from '../src/core/store/postgres.js';
import { accountDecider } from '../test/support/ledger/context.js';
import { accountStream, type LedgerEvent } from '../test/support/ledger/events.js';
import { clusterUrl, startCluster } from '../test/support/postgres.js';
import type { BenchResult } from './support.js';
import { median, round } from './support.js';

const ROUNDS = 6;
const ROUND_SIZE = 1500;

function timed(n: number, from: number, step: (i: number) => void): number {
  const start = performance.now();
  for (let i = from; i < from + n; i++) step(i);
  return n / ((performance.now() - start) / 1000);
}

function createDatabase(socket: string, name: string): string {
  const admin = new PostgresDatabase(clusterUrl(socket));
  admin.exec(`CREATE DATABASE ${name}`);
  admin.close();
  return clusterUrl(socket, name);
}

/**
 * The PostgreSQL store (ADR 0081): Keel's single-event commands on a throwaway cluster with
 * PostgreSQL's default durability (each commit waits for the disk), next to raw single-row
 * autocommit INSERTs of the same event row on the same server, in interleaved rounds.
 */
export async function benchStore(): Promise<BenchResult[]> {
  const cluster = startCluster({ durable: true });
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-store-'));
  try {
    const raw = new PostgresDatabase(createDatabase(cluster.socketDir, 'raw'));
    raw.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL,
      type TEXT NOT NULL, time TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, hash TEXT NOT NULL,
      UNIQUE (stream, version))`);
    const insert = raw.prepare(
      'INSERT INTO events (position, stream, version, type, time, data, metadata, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const metaText = JSON.stringify(systemMetadata('bench'));
    const rawLoop = (from: number, n: number) =>
      timed(n, from, (i) =>
        insert.run(
          i + 1,
          `account-${i % 100}`,
          Math.floor(i / 100) + 1,
          'FundsDeposited',
          new Date().toISOString(),
          `{"amount":${i}}`,
          metaText,
          'x'.repeat(64),
        ),
      );

    const url = createDatabase(cluster.socketDir, 'keel');
    const app = createApp(testConfig(dir, { store: { kind: 'postgres', url } }), {
      clock: systemClock,
      ids: randomIds,
      logger: silentLogger(),
      sealKey: Buffer.alloc(32, 9),
    });
    const meta = systemMetadata('bench');
    const command = (id: string, event: LedgerEvent) =>
      app.core.handler.handleSync(accountStream(id), accountDecider, () => [event], meta);
    for (let a = 0; a < 100; a++)
      command(`b${a}`, {
        type: 'AccountOpened',
        data: { id: `b${a}`, owner: 'bench', pin: app.core.sealer.seal('0000') },
      });
    // One command at a time, synchronously: a command's own round trips, without group commit
    // (bench/command-path.ts measures nodes under concurrency against pgbench).
    const keelLoop = (from: number, n: number) =>
      timed(n, from, (i) => {
        command(`b${i % 100}`, { type: 'FundsDeposited', data: { amount: 1 + (i % 50) } });
      });

    /** Interleaved rounds of both loops; medians of the rates and of the rounds' ratios. */
    let offset = 0;
    const rates = () => {
      const rawRates: number[] = [];
      const keelRates: number[] = [];
      for (let r = 0; r <= ROUNDS; r++, offset += ROUND_SIZE) {
        const k = keelLoop(offset, ROUND_SIZE);
        const w = rawLoop(offset, ROUND_SIZE);
        // The first round warms both up and is not counted.
        if (r === 0) continue;
        keelRates.push(k);
        rawRates.push(w);
      }
      return {
        raw: median(rawRates),
        keel: median(keelRates),
        ratio: median(keelRates.map((k, r) => k / rawRates[r]!)),
      };
    };
    const durable = rates();
    // Without the wait for the disk at commit, round trips and Keel's own work are what is left.
    for (const db of [raw, app.core.db]) db.exec('SET synchronous_commit = off');
    const fast = rates();
    await app.close();
    raw.close();
    const rounds = `median of ${ROUNDS} interleaved rounds of ${ROUND_SIZE}`;
    return [
      {
        name: 'raw PostgreSQL single-row commits',
        value: round(durable.raw),
        unit: 'commits/s',
        note: `one autocommit INSERT of an event row per round trip (libpq, unix socket, each commit waits for the disk); ${rounds}`,
      },
      {
        name: 'Keel single-event commands on PostgreSQL',
        value: round(durable.keel),
        unit: 'commands/s',
        note: `${round(durable.ratio * 100)}% of raw on the same server (target ≥ 50%); BEGIN with the log's lock, the event, COMMIT: three round trips, one disk wait`,
      },
      {
        name: 'raw PostgreSQL single-row commits, synchronous_commit off',
        value: round(fast.raw),
        unit: 'commits/s',
        note: 'the same, without the wait for the disk: one round trip each',
      },
      {
        name: 'Keel single-event commands on PostgreSQL, synchronous_commit off',
        value: round(fast.keel),
        unit: 'commands/s',
        note: `${round(fast.ratio * 100)}% of raw: the three round trips and Keel's own work per command`,
      },
    ];
  } finally {
    cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
