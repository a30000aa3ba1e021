import { mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Checkpointer, type CheckpointResult } from '../../../src/core/checkpointer.js';
import { ManualClock } from '../../../src/core/clock.js';
import { openDatabase, type SqliteDb as Db } from '../../../src/core/database.js';
import { verifyChain } from '../../../src/core/anchors.js';
import { testChain } from '../../support/chain.js';
import { EventStore } from '../../../src/core/event-store.js';
import { systemMetadata } from '../../../src/core/events.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function database(): Db {
  const dir = mkdtempSync(join(tmpdir(), 'keel-ckpt-'));
  dirs.push(dir);
  return openDatabase(join(dir, 'keel.sqlite'));
}

/** Resolves with the first result the worker reports that satisfies `done`. */
function reported(done: (r: CheckpointResult) => boolean) {
  let resolve: (r: CheckpointResult) => void = () => undefined;
  const result = new Promise<CheckpointResult>((r) => (resolve = r));
  return { result, listener: (r: CheckpointResult) => void (done(r) && resolve(r)) };
}

describe('Checkpointer', () => {
  it('moves committed pages into the database file from its own thread', async () => {
    const db = database();
    const chain = testChain(db);
    const store = new EventStore(db, new ManualClock(), chain);
    const seen = reported((r) => r.log > 0 && r.checkpointed === r.log);
    const checkpointer = Checkpointer.start(db, { intervalMs: 5, onCheckpoint: seen.listener });
    for (let i = 0; i < 300; i++) {
      store.append(`s${i % 10}`, [{ type: 'X', data: { i } }], {
        expectedVersion: Math.floor(i / 10),
        metadata: systemMetadata('test'),
      });
    }
    const result = await seen.result;
    expect(result.checkpointed).toBe(result.log);
    await checkpointer.stop();
    expect(verifyChain(db, chain)).toMatchObject({ ok: true, events: 300 });
    db.close();
  });

  it('leaves only a backstop to commits while it runs, and gives checkpoints back when stopped', async () => {
    const db = database();
    const checkpointer = Checkpointer.start(db, { intervalMs: 5 });
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(20_000);
    await checkpointer.stop();
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    db.close();
  });

  it('hands checkpoints back to the commits when the worker fails', async () => {
    const db = database();
    // The worker opens the file by name; gone, it fails to start.
    unlinkSync(db.name);
    let failure: (err: unknown) => void = () => undefined;
    const failed = new Promise<unknown>((resolve) => (failure = resolve));
    const checkpointer = Checkpointer.start(db, { intervalMs: 5, onError: failure });
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(20_000);
    expect(await failed).toMatchObject({ code: 'SQLITE_CANTOPEN' });
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await checkpointer.stop();
    db.close();
  });

  it('refuses an in-memory database, which has no log to checkpoint', () => {
    const db = openDatabase(':memory:');
    expect(() => Checkpointer.start(db)).toThrow('an in-memory database has no write-ahead log');
    db.close();
  });
});
