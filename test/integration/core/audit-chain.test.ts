import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { verifyChain } from '../../../src/core/anchors.js';
import { ChainKey, legacyLink, openChain, type EventRow } from '../../../src/core/chain.js';
import { ManualClock } from '../../../src/core/clock.js';
import { openDatabase, type Db } from '../../../src/core/database.js';
import { silentLogger } from '../../../src/core/logger.js';
import { testConfig } from '../../../src/config.js';
import { TEST_SEAL_KEY } from '../../support/app.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(dataDir: string, sealKey = TEST_SEAL_KEY): App {
  return createApp(testConfig(dataDir), {
    clock: new ManualClock('2026-01-01T00:00:00.000Z'),
    logger: silentLogger(),
    sealKey,
  });
}

/** A data directory with a bootstrapped log and `tokens` more events, closed. */
async function written(tokens: number): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-audit-'));
  dirs.push(dataDir);
  const app = open(dataDir);
  app.bootstrap();
  for (let i = 0; i < tokens; i++) app.tokens.secretsToken(['default'], 0);
  await app.close();
  return dataDir;
}

const db = (dataDir: string) => openDatabase(join(dataDir, 'keel.sqlite'));
const verify = (d: Db, dataDir: string) =>
  verifyChain(d, openChain(d, new ChainKey(TEST_SEAL_KEY), join(dataDir, 'audit', 'head.json')));

/** Turn a data directory into what the version before the keyed chain wrote. */
function makeLegacy(dataDir: string): void {
  const d = db(dataDir);
  let prev = '0'.repeat(64);
  const update = d.prepare('UPDATE events SET hash = ? WHERE position = ?');
  for (const row of d.prepare('SELECT * FROM events ORDER BY position').all() as EventRow[]) {
    prev = legacyLink(prev, row);
    update.run(prev, row.position);
  }
  d.exec('DROP TABLE audit_chain; DROP TABLE audit_anchors');
  d.prepare('DELETE FROM schema_migrations WHERE version = 2').run();
  d.close();
  rmSync(join(dataDir, 'audit'), { recursive: true, force: true });
}

describe('the keyed audit chain', () => {
  it('anchors the head on close, in the table and in <data>/audit/head.json', async () => {
    const dataDir = await written(3);
    const d = db(dataDir);
    const end = (d.prepare('SELECT max(position) AS p FROM events').get() as { p: number }).p;
    const head = JSON.parse(readFileSync(join(dataDir, 'audit', 'head.json'), 'utf8')) as {
      position: number;
    };
    expect(head.position).toBe(end);
    expect(d.prepare('SELECT position FROM audit_anchors').all()).toEqual([{ position: end }]);
    expect(verify(d, dataDir)).toEqual({ ok: true, events: end, anchors: 1, keyedFrom: 1 });
    d.close();
  });

  it('opens a log written before the chain was keyed, and keys what follows', async () => {
    const dataDir = await written(2);
    makeLegacy(dataDir);
    // The unkeyed log is anchored on its first open, before anything is appended.
    const first = open(dataDir);
    const d0 = db(dataDir);
    expect(d0.prepare('SELECT count(*) AS n FROM audit_anchors').get()).toEqual({ n: 1 });
    d0.close();
    await first.close();
    const legacyEnd = (() => {
      const d = db(dataDir);
      const p = (d.prepare('SELECT max(position) AS p FROM events').get() as { p: number }).p;
      d.close();
      return p;
    })();
    const app = open(dataDir);
    app.tokens.secretsToken(['default'], 0);
    await app.close();

    const d = db(dataDir);
    expect(verify(d, dataDir)).toMatchObject({ ok: true, keyedFrom: legacyEnd + 1 });
    // An old event edited and its unkeyed link recomputed: the anchor of the first open pins it.
    d.prepare(
      `UPDATE events SET data = replace(data, '"default"', '"root"') WHERE position = ?`,
    ).run(legacyEnd);
    const row = d.prepare('SELECT * FROM events WHERE position = ?').get(legacyEnd) as EventRow;
    const before = d.prepare('SELECT hash FROM events WHERE position = ?').get(legacyEnd - 1) as {
      hash: string;
    };
    d.prepare('UPDATE events SET hash = ? WHERE position = ?').run(
      legacyLink(before.hash, row),
      legacyEnd,
    );
    expect(verify(d, dataDir)).toMatchObject({ ok: false, position: legacyEnd });
    // Without the anchors, the first keyed link (which covers the last unkeyed hash) breaks.
    d.prepare('DELETE FROM audit_anchors').run();
    rmSync(join(dataDir, 'audit'), { recursive: true, force: true });
    expect(verify(d, dataDir)).toMatchObject({ ok: false, position: legacyEnd + 1 });
    d.close();
  });

  it('refuses to move where keyed hashing starts, and refuses another keyring', async () => {
    const dataDir = await written(1);
    expect(() => open(dataDir, Buffer.alloc(32, 9))).toThrow(/not signed by this keyring/);
    const d = db(dataDir);
    d.prepare('UPDATE audit_chain SET keyed_from = 1000').run();
    d.close();
    expect(() => open(dataDir)).toThrow(/not signed by this keyring/);
    const e = db(dataDir);
    e.prepare('DELETE FROM audit_chain').run();
    e.close();
    expect(() => open(dataDir)).toThrow(/record \(where keyed hashing starts\) is missing/);
    expect(existsSync(join(dataDir, 'keel.sqlite'))).toBe(true);
  });

  it('names an anchor that does not match its event', async () => {
    const dataDir = await written(2);
    const d = db(dataDir);
    const anchored = (d.prepare('SELECT position FROM audit_anchors').get() as { position: number })
      .position;
    d.prepare('UPDATE audit_anchors SET hash = ?').run('f'.repeat(64));
    expect(verify(d, dataDir)).toMatchObject({ ok: false, position: anchored });
    d.close();
  });
});

describe('anchoring while serving', () => {
  it('anchors on start, again once the interval has passed on the clock, and not while the head stands', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const dataDir = mkdtempSync(join(tmpdir(), 'keel-audit-'));
    dirs.push(dataDir);
    const clock = new ManualClock('2026-01-01T00:00:00.000Z');
    const app = createApp(testConfig(dataDir, { pollIntervalMs: 100, anchorIntervalMs: 5000 }), {
      clock,
      logger: silentLogger(),
      sealKey: TEST_SEAL_KEY,
      executor: false,
    });
    try {
      app.bootstrap();
      const anchors = () =>
        (
          app.core.db
            .prepare('SELECT position, time FROM audit_anchors ORDER BY position')
            .all() as {
            position: number;
            time: string;
          }[]
        ).map((a) => `${a.position}@${a.time}`);
      const end = () => app.core.store.lastPosition();
      app.start();
      const first = end();
      expect(anchors()).toEqual([`${first}@2026-01-01T00:00:00.000Z`]);
      app.tokens.secretsToken(['default'], 0);
      clock.advance(4000);
      vi.advanceTimersByTime(100);
      expect(anchors()).toHaveLength(1); // the interval has not passed
      clock.advance(1000);
      vi.advanceTimersByTime(100);
      expect(anchors()).toEqual([
        `${first}@2026-01-01T00:00:00.000Z`,
        `${end()}@2026-01-01T00:00:05.000Z`,
      ]);
      clock.advance(5000);
      vi.advanceTimersByTime(100);
      expect(anchors()).toHaveLength(2); // the head has not moved
    } finally {
      vi.useRealTimers();
      await app.close();
    }
  });
});
