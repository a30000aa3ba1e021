import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { systemClock } from '../src/core/clock.js';
import { openDatabase } from '../src/core/database.js';
import { EventStore } from '../src/core/event-store.js';
import { systemMetadata } from '../src/core/events.js';
import { randomIds } from '../src/core/ids.js';
import { silentLogger } from '../src/core/logger.js';
import { ledgerCommands, ledgerContext } from '../test/support/ledger/context.js';
import type { BenchResult } from './support.js';
import { round } from './support.js';

const KEY = Buffer.alloc(32, 9);

/** Raw SQLite: one row per transaction, WAL, synchronous=NORMAL — the physical limit for one writer. */
function rawCommits(dir: string, n: number): number {
  const db = new Database(join(dir, 'raw.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL,
    type TEXT NOT NULL, time TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, hash TEXT NOT NULL,
    UNIQUE (stream, version))`);
  const insert = db.prepare(
    'INSERT INTO events (stream, version, type, time, data, metadata, hash) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const meta = JSON.stringify(systemMetadata('bench'));
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    insert.run(
      `account-${i % 100}`,
      Math.floor(i / 100) + 1,
      'FundsDeposited',
      new Date().toISOString(),
      `{"amount":${i}}`,
      meta,
      'x'.repeat(64),
    );
  }
  const perSec = n / ((performance.now() - start) / 1000);
  db.close();
  return perSec;
}

/**
 * Keel: single-event commands through the command handler (fold cache, machine check, hash chain,
 * audit metadata). With `projection`, the test ledger's read model also writes two rows per command
 * in the same transaction.
 */
function keelCommands(dir: string, n: number, projection: boolean): number {
  const app = createApp(testConfig(dir), {
    clock: systemClock,
    ids: randomIds,
    logger: silentLogger(),
    sealKey: KEY,
    databasePath: join(dir, `keel-${projection}.sqlite`),
    extraContexts: (core) => (projection ? [ledgerContext(core)] : []),
  });
  const commands = ledgerCommands(app.core);
  const meta = systemMetadata('bench');
  for (let a = 0; a < 100; a++) commands.open(`b${a}`, 'bench', '0000', meta);
  const start = performance.now();
  for (let i = 0; i < n; i++) commands.deposit(`b${i % 100}`, 1 + (i % 50), meta);
  const perSec = n / ((performance.now() - start) / 1000);
  void app.close();
  return perSec;
}

/** A log of `total` deposits over 1,000 accounts, written in big batches. */
function buildLog(path: string, total: number): void {
  const db = openDatabase(path);
  const store = new EventStore(db, systemClock);
  const meta = systemMetadata('bench');
  const sealer = { $sealed: 'v1:bench', $hmac: '0'.repeat(64) };
  const accounts = 1000;
  for (let a = 0; a < accounts; a++) {
    store.append(
      `account-r${a}`,
      [{ type: 'AccountOpened', data: { id: `r${a}`, owner: 'bench', pin: sealer } }],
      {
        expectedVersion: 0,
        metadata: meta,
      },
    );
  }
  const perAccount = Math.ceil((total - accounts) / accounts);
  const batch = 250;
  db.transaction(() => {
    for (let a = 0; a < accounts; a++) {
      for (let v = 0; v < perAccount; v += batch) {
        const events = Array.from({ length: Math.min(batch, perAccount - v) }, (_, i) => ({
          type: 'FundsDeposited',
          data: { amount: 1 + ((v + i) % 90) },
        }));
        store.append(`account-r${a}`, events, { expectedVersion: 'any', metadata: meta });
      }
    }
  })();
  db.close();
}

export async function benchCore(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-'));
  try {
    const n = 20_000;
    const raw = rawCommits(dir, n);
    const bare = keelCommands(dir, n, false);
    const keel = keelCommands(dir, n, true);

    const total = 1_000_000;
    const logPath = join(dir, 'replay.sqlite');
    buildLog(logPath, total);
    const deps = {
      clock: systemClock,
      ids: randomIds,
      logger: silentLogger(),
      sealKey: KEY,
      databasePath: logPath,
      extraContexts: ledgerContext,
    };
    // First open builds the read models (new projections); that is the full replay.
    let start = performance.now();
    const first = createApp(testConfig(dir), {
      ...deps,
      extraContexts: (core) => [ledgerContext(core)],
    });
    const replayMs = performance.now() - start;
    const events = first.core.store.lastPosition();
    await first.close();
    // Second open: read models are current, so start-up must not replay.
    start = performance.now();
    const second = createApp(testConfig(dir), {
      ...deps,
      extraContexts: (core) => [ledgerContext(core)],
    });
    const startupMs = performance.now() - start;
    await second.close();

    return [
      {
        name: 'raw SQLite single-row commits',
        value: round(raw),
        unit: 'commits/s',
        note: 'WAL, synchronous=NORMAL, one INSERT per transaction',
      },
      {
        name: 'Keel single-event commands through the command handler',
        value: round(bare),
        unit: 'commands/s',
        note: `${round((bare / raw) * 100)}% of raw (target ≥ 60%); fold cache, machine check, hash chain, audit metadata`,
      },
      {
        name: 'the same, with an inline projection writing two read-model rows',
        value: round(keel),
        unit: 'commands/s',
        note: `${round((keel / raw) * 100)}% of raw`,
      },
      {
        name: `full replay of ${events.toLocaleString('en')} events`,
        value: round(events / (replayMs / 1000)),
        unit: 'events/s',
        note: `${round(replayMs)} ms (target ≥ 150,000 events/s)`,
      },
      {
        name: `start-up with ${events.toLocaleString('en')} events in the log`,
        value: round(startupMs, 1),
        unit: 'ms',
        note: 'open, migrate, check projection versions; no replay (target < 1,000 ms)',
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of await benchCore())
    console.log(`${r.name}: ${r.value} ${r.unit}${r.note ? ` — ${r.note}` : ''}`);
}
