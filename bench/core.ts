import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createApp } from '../src/app.js';
import type { Decider } from '../src/core/command-handler.js';
import type { NewEvent } from '../src/core/events.js';
import { Checkpointer } from '../src/core/checkpointer.js';
import { testConfig } from '../src/config.js';
import { systemClock } from '../src/core/clock.js';
import { openDatabase, type SyncMode } from '../src/core/database.js';
import { ChainKey, openChain } from '../src/core/chain.js';
import { EventStore } from '../src/core/event-store.js';
import { systemMetadata } from '../src/core/events.js';
import { randomIds } from '../src/core/ids.js';
import { silentLogger } from '../src/core/logger.js';
import { accountDecider, ledgerContext } from '../test/support/ledger/context.js';
import { accountStream, type LedgerEvent } from '../test/support/ledger/events.js';
import type { BenchResult } from './support.js';
import { round } from './support.js';

const KEY = Buffer.alloc(32, 9);
/** Interleaved measuring rounds of the commit loops, and commands or commits per round. */
const ROUNDS = 10;
const ROUND_SIZE = 30_000;
const SYNC_ROUNDS = 5;
const SYNC_ROUND_SIZE = 500;

/** A measured loop: `step(i)` for i in [from, from + n); returns calls per second. */
type Loop = (from: number, n: number) => number;

function timed(n: number, from: number, step: (i: number) => void): number {
  const start = performance.now();
  for (let i = from; i < from + n; i++) step(i);
  return n / ((performance.now() - start) / 1000);
}

/** Raw SQLite: one row per transaction, WAL, synchronous=NORMAL — the physical limit for one writer. */
function rawCommits(
  dir: string,
  checkpoints: 'inline' | 'worker',
): { loop: Loop; close(): Promise<void> } {
  const db = new Database(join(dir, `raw-${checkpoints}.sqlite`));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL,
    type TEXT NOT NULL, time TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, hash TEXT NOT NULL,
    UNIQUE (stream, version))`);
  // Like for like with Keel's daemon: the same checkpoint worker on the same kind of database.
  const checkpointer = checkpoints === 'worker' ? Checkpointer.start(db) : undefined;
  const insert = db.prepare(
    'INSERT INTO events (stream, version, type, time, data, metadata, hash) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const meta = JSON.stringify(systemMetadata('bench'));
  return {
    loop: (from, n) =>
      timed(n, from, (i) =>
        insert.run(
          `account-${i % 100}`,
          Math.floor(i / 100) + 1,
          'FundsDeposited',
          new Date().toISOString(),
          `{"amount":${i}}`,
          meta,
          'x'.repeat(64),
        ),
      ),
    close: async () => {
      await checkpointer?.stop();
      db.close();
    },
  };
}

/**
 * Keel: single-event commands through the command handler (fold cache, machine check, hash chain,
 * audit metadata). With `projection`, the test ledger's read model also writes two rows per command
 * in the same transaction.
 */
function keelCommands(
  dir: string,
  kind: 'machine' | 'projection' | 'plain',
  sync: SyncMode = 'normal',
): { loop: Loop; close(): Promise<void> } {
  const projection = kind === 'projection';
  const app = createApp(testConfig(dir, { sync }), {
    clock: systemClock,
    ids: randomIds,
    logger: silentLogger(),
    sealKey: KEY,
    databasePath: join(dir, `keel-${kind}-${sync}.sqlite`),
    // As the daemon runs: the log is checkpointed on a worker thread (ADR 0006).
    backgroundCheckpoints: true,
    extraContexts: (core) => (projection ? [ledgerContext(core)] : []),
  });
  const meta = systemMetadata('bench');
  if (kind === 'plain') {
    // The same command through a decider that is a plain fold: what the machine check costs.
    const handler = app.core.handler;
    return {
      loop: (from, n) =>
        timed(n, from, (i) => {
          handler.handleSync(
            `plain-${i % 100}`,
            countingDecider,
            () => [{ type: 'FundsDeposited', data: { amount: 1 + (i % 50) } }],
            meta,
          );
        }),
      close: () => app.close(),
    };
  }
  for (let a = 0; a < 100; a++)
    app.core.handler.handleSync(
      accountStream(`b${a}`),
      accountDecider,
      (): LedgerEvent[] => [
        {
          type: 'AccountOpened',
          data: { id: `b${a}`, owner: 'bench', pin: app.core.sealer.seal('0000') },
        },
      ],
      meta,
    );
  // One command at a time, synchronously: the command path's own cost, without group commit
  // (bench/command-path.ts measures the daemon's asynchronous path under concurrency).
  return {
    loop: (from, n) =>
      timed(n, from, (i) => {
        app.core.handler.handleSync(
          accountStream(`b${i % 100}`),
          accountDecider,
          (): LedgerEvent[] => [{ type: 'FundsDeposited', data: { amount: 1 + (i % 50) } }],
          meta,
        );
      }),
    close: () => app.close(),
  };
}

/** A decider without a machine: it counts events and accepts any. */
const countingDecider: Decider<number, NewEvent> = {
  initialState: () => 0,
  evolve: (count) => count + 1,
};

/** Commit rates of the loops, and each one's ratio to the two raw baselines. */
interface CommitRates {
  /** Median rate of each loop over the rounds. */
  rate: { raw: number; rawWorker: number; bare: number; keel: number; plain: number };
  /** Median over the rounds of a loop's rate divided by the worker baseline's in the same round. */
  ofRawWorker: { bare: number; keel: number; plain: number };
  /** The same against the raw baseline with SQLite's defaults. */
  ofRaw: { bare: number };
  /** The lowest and highest round's ratio of the machine commands to the worker baseline. */
  bareSpread: [number, number];
}

/**
 * Rounds of the loops, interleaved so that a noisy moment on the machine touches all of them
 * alike. Each rate is the median of its rounds (the first, warm-up round is dropped), and each
 * ratio the median of the rounds' ratios, so a slow stretch of the machine cancels out.
 */
async function commitRates(dir: string, rounds: number, n: number): Promise<CommitRates> {
  const loops = [
    rawCommits(dir, 'inline'),
    rawCommits(dir, 'worker'),
    keelCommands(dir, 'machine'),
    keelCommands(dir, 'projection'),
    keelCommands(dir, 'plain'),
  ];
  const rates: number[][] = loops.map(() => []);
  for (let r = 0; r <= rounds; r++) {
    // The order turns each round: a loop that writes much leaves its checkpoint worker busy while
    // the next one runs, and no loop should always be the one that follows it.
    for (let j = 0; j < loops.length; j++) {
      const k = (j + r) % loops.length;
      const rate = loops[k]!.loop(r * n, n);
      if (r > 0) rates[k]!.push(rate);
    }
  }
  for (const l of loops) await l.close();
  const [raw, rawWorker, bare, keel, plain] = rates as [
    number[],
    number[],
    number[],
    number[],
    number[],
  ];
  const ratios = (xs: number[], of: number[]) => xs.map((x, r) => x / of[r]!);
  const ratio = (xs: number[], of: number[]) => median(ratios(xs, of));
  return {
    rate: {
      raw: median(raw),
      rawWorker: median(rawWorker),
      bare: median(bare),
      keel: median(keel),
      plain: median(plain),
    },
    ofRawWorker: {
      bare: ratio(bare, rawWorker),
      keel: ratio(keel, rawWorker),
      plain: ratio(plain, rawWorker),
    },
    ofRaw: { bare: ratio(bare, raw) },
    bareSpread: [Math.min(...ratios(bare, rawWorker)), Math.max(...ratios(bare, rawWorker))],
  };
}

/**
 * What `--sync full` costs: the single-event command loop with each sync mode, in interleaved
 * rounds (fewer and smaller than above: a full sync waits for the disk at every commit).
 */
async function syncRates(dir: string): Promise<{ full: number; normal: number; ratio: number }> {
  const own = join(dir, 'sync');
  mkdirSync(own);
  const loops = [keelCommands(own, 'machine', 'full'), keelCommands(own, 'machine', 'normal')];
  const rates: [number[], number[]] = [[], []];
  for (let r = 0; r <= SYNC_ROUNDS; r++) {
    for (let j = 0; j < loops.length; j++) {
      const k = (j + r) % loops.length;
      const rate = loops[k]!.loop(r * SYNC_ROUND_SIZE, SYNC_ROUND_SIZE);
      if (r > 0) rates[k]!.push(rate);
    }
  }
  for (const l of loops) await l.close();
  const [full, normal] = rates;
  return {
    full: median(full),
    normal: median(normal),
    ratio: median(full.map((f, r) => f / normal[r]!)),
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A log of `total` deposits over 1,000 accounts, written in big batches. */
export function buildLog(path: string, total: number): void {
  const db = openDatabase(path);
  const store = new EventStore(db, systemClock, openChain(db, new ChainKey(KEY)));
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
    const { rate, ofRawWorker, ofRaw, bareSpread } = await commitRates(dir, ROUNDS, ROUND_SIZE);
    const { raw, rawWorker, bare, keel, plain } = rate;
    const percent = (x: number) => round(x * 100);
    const sync = await syncRates(dir);

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
        name: 'raw SQLite single-row commits, checkpoints on a worker thread',
        value: round(rawWorker),
        unit: 'commits/s',
        note: `WAL, synchronous=NORMAL, the checkpoint worker Keel's daemon uses (ADR 0006); one INSERT per transaction; median of ${ROUNDS} interleaved rounds; the percentages below are medians of each round's ratio`,
      },
      {
        name: 'raw SQLite single-row commits, SQLite defaults',
        value: round(raw),
        unit: 'commits/s',
        note: 'the same with inline checkpoints past 1,000 pages, which stall the commit that triggers them',
      },
      {
        name: 'Keel single-event commands through the command handler, --sync normal',
        value: round(bare),
        unit: 'commands/s',
        note: `${percent(ofRawWorker.bare)}% of raw with the same checkpoints (target ≥ 60%; rounds ${percent(bareSpread[0])}–${percent(bareSpread[1])}%); ${percent(ofRaw.bare)}% of SQLite defaults; as the daemon runs with --sync normal; fold cache, machine check, keyed hash chain, audit metadata`,
      },
      {
        name: 'Keel single-event commands with --sync full (the default)',
        value: round(sync.full),
        unit: 'commands/s',
        note: `${percent(sync.ratio)}% of the same loop with --sync normal in the same rounds (${round(sync.normal)} commands/s); median of ${SYNC_ROUNDS} interleaved rounds of ${SYNC_ROUND_SIZE}; every commit waits for the disk (ADR 0061)`,
      },
      {
        name: 'the same command through a plain decider (no machine)',
        value: round(plain),
        unit: 'commands/s',
        note: `${percent(ofRawWorker.plain)}% of raw with the same checkpoints: the difference to the row above is the XState machine's check and fold`,
      },
      {
        name: 'the same, with an inline projection writing two read-model rows',
        value: round(keel),
        unit: 'commands/s',
        note: `${percent(ofRawWorker.keel)}% of raw with the same checkpoints`,
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
