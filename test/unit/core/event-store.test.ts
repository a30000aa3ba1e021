import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { openDatabase } from '../../../src/core/database.js';
import { ConcurrencyError } from '../../../src/core/errors.js';
import { randomBytes } from 'node:crypto';
import { GENESIS_HASH, ChainKey, legacyLink } from '../../../src/core/chain.js';
import { verifyChain } from '../../../src/core/anchors.js';
import { testChain } from '../../support/chain.js';
import { EventStore } from '../../../src/core/event-store.js';
import type { AuditMetadata } from '../../../src/core/events.js';

const meta: AuditMetadata = {
  actor: { accessor: 'acc-1', name: 'alice' },
  requestId: 'req-1',
  remoteAddress: '127.0.0.1',
};

function store(inline?: (e: unknown) => void) {
  const db = openDatabase(':memory:');
  const clock = new ManualClock('2026-03-01T10:00:00.000Z');
  const key = randomBytes(32);
  const chain = testChain(db, key);
  return { db, clock, key, chain, store: new EventStore(db, clock, chain, inline) };
}

/** Two connections, each with its own store, on one database file (the CLI next to the daemon). */
function twoWriters() {
  const dir = mkdtempSync(join(tmpdir(), 'keel-store-'));
  const a = openDatabase(join(dir, 'k.sqlite'));
  const b = openDatabase(join(dir, 'k.sqlite'));
  const clock = new ManualClock();
  const key = randomBytes(32);
  const chain = testChain(a, key);
  return {
    a,
    b,
    key,
    chain,
    first: new EventStore(a, clock, chain),
    second: new EventStore(b, clock, testChain(b, key)),
  };
}

describe('EventStore', () => {
  it('appends with global positions, stream versions, time and audit metadata', () => {
    const { store: s, clock } = store();
    s.append('a', [{ type: 'X', data: { n: 1 } }], { expectedVersion: 0, metadata: meta });
    clock.advance(1500);
    const [b] = s.append('b', [{ type: 'Y', data: { n: 2 } }], {
      expectedVersion: 0,
      metadata: meta,
    });
    s.append('a', [{ type: 'Z', data: {} }], { expectedVersion: 1, metadata: meta });
    expect(b).toMatchObject({
      position: 2,
      stream: 'b',
      version: 1,
      time: '2026-03-01T10:00:01.500Z',
      metadata: meta,
    });
    expect(s.readStream('a').map((e) => [e.position, e.version, e.type])).toEqual([
      [1, 1, 'X'],
      [3, 2, 'Z'],
    ]);
    expect(s.readAll(1, 10).map((e) => e.position)).toEqual([2, 3]);
    expect(s.version('a')).toBe(2);
    expect(s.version('nothing')).toBe(0);
  });

  it('refuses an append at the wrong version with a typed error and writes nothing', () => {
    const { store: s } = store();
    s.append('a', [{ type: 'X', data: {} }], { expectedVersion: 0, metadata: meta });
    expect(() =>
      s.append('a', [{ type: 'Y', data: {} }], { expectedVersion: 0, metadata: meta }),
    ).toThrow(ConcurrencyError);
    expect(s.lastPosition()).toBe(1);
    s.append('a', [{ type: 'Y', data: {} }], { expectedVersion: 'any', metadata: meta });
    expect(s.version('a')).toBe(2);
  });

  it('rolls back the events when an inline projection fails', () => {
    const { store: s } = store((e) => {
      if ((e as { type: string }).type === 'Boom') throw new Error('projection failed');
    });
    expect(() =>
      s.append(
        'a',
        [
          { type: 'Ok', data: {} },
          { type: 'Boom', data: {} },
        ],
        { expectedVersion: 0, metadata: meta },
      ),
    ).toThrow('projection failed');
    expect(s.lastPosition()).toBe(0);
  });

  it('links every event to the one before with an HMAC under the chain key', () => {
    const { store: s, db, key, chain } = store();
    const events = s.append(
      'a',
      [
        { type: 'X', data: { b: 2, a: 1 } },
        { type: 'Y', data: {} },
      ],
      { expectedVersion: 0, metadata: meta },
    );
    const row = db.prepare('SELECT * FROM events WHERE position = 1').get() as Parameters<
      typeof legacyLink
    >[1] & { hash: string };
    expect(row.data).toBe('{"a":1,"b":2}');
    expect(events[0]!.hash).toBe(new ChainKey(key).link(GENESIS_HASH, row));
    expect(events[0]!.hash).not.toBe(legacyLink(GENESIS_HASH, row));
    expect(verifyChain(db, chain)).toMatchObject({ ok: true, events: 2 });
  });

  it('names the first position whose stored bytes changed', () => {
    const { store: s, db, chain } = store();
    for (let i = 0; i < 5; i++)
      s.append(`s${i}`, [{ type: 'X', data: { i } }], { expectedVersion: 0, metadata: meta });
    db.prepare(`UPDATE events SET data = '{"i":9}' WHERE position = 3`).run();
    expect(verifyChain(db, chain)).toMatchObject({ ok: false, position: 3 });
  });

  it('notices a deleted event', () => {
    const { store: s, db, chain } = store();
    for (let i = 0; i < 3; i++)
      s.append(`s${i}`, [{ type: 'X', data: { i } }], { expectedVersion: 0, metadata: meta });
    db.prepare('DELETE FROM events WHERE position = 2').run();
    expect(verifyChain(db, chain)).toMatchObject({ ok: false, position: 2 });
  });

  it('keeps the chain whole when two writers share one database file', () => {
    const { a, b, chain, first, second } = twoWriters();
    for (let i = 0; i < 6; i++) {
      (i % 2 === 0 ? first : second).append(`s${i}`, [{ type: 'X', data: { i } }], {
        expectedVersion: 0,
        metadata: meta,
      });
      first.append(`t${i}`, [{ type: 'Y', data: { i } }], { expectedVersion: 0, metadata: meta });
    }
    expect(verifyChain(a, chain)).toMatchObject({ ok: true, events: 12 });
    a.close();
    b.close();
  });

  it('keeps the chain whole when an enclosing transaction rolls back', () => {
    const { store: s, db, chain } = store();
    s.append('a', [{ type: 'X', data: {} }], { expectedVersion: 0, metadata: meta });
    expect(() =>
      db.transaction(() => {
        s.append('a', [{ type: 'X', data: { inner: 1 } }], { expectedVersion: 1, metadata: meta });
        s.append('b', [{ type: 'X', data: { inner: 2 } }], { expectedVersion: 0, metadata: meta });
        throw new Error('the enclosing command fails');
      })(),
    ).toThrow('the enclosing command fails');
    const [next] = s.append('a', [{ type: 'Y', data: {} }], {
      expectedVersion: 1,
      metadata: meta,
    });
    expect(next).toMatchObject({ position: 2, version: 2 });
    s.append('b', [{ type: 'Y', data: {} }], { expectedVersion: 0, metadata: meta });
    expect(verifyChain(db, chain)).toMatchObject({ ok: true, events: 3 });
  });

  it('refuses a stale expected version even when another writer moved the stream', () => {
    const { a, b, chain, first, second } = twoWriters();
    first.append('s', [{ type: 'X', data: {} }], { expectedVersion: 0, metadata: meta });
    second.append('s', [{ type: 'X', data: { by: 'second' } }], {
      expectedVersion: 1,
      metadata: meta,
    });
    const stale = () =>
      first.append('s', [{ type: 'X', data: { by: 'first' } }], {
        expectedVersion: 1,
        metadata: meta,
      });
    expect(stale).toThrow(ConcurrencyError);
    expect(stale).toThrow('stream s is at version 2, expected 1');
    expect(first.readStream('s').map((e) => e.data)).toEqual([{}, { by: 'second' }]);
    first.append('s', [{ type: 'Y', data: {} }], { expectedVersion: 2, metadata: meta });
    expect(verifyChain(a, chain)).toMatchObject({ ok: true, events: 3 });
    a.close();
    b.close();
  });

  it('refuses to start a stream another writer has started', () => {
    const { a, b, chain, first, second } = twoWriters();
    second.append('n', [{ type: 'X', data: { by: 'second' } }], {
      expectedVersion: 0,
      metadata: meta,
    });
    const start = () =>
      first.append('n', [{ type: 'X', data: { by: 'first' } }], {
        expectedVersion: 0,
        metadata: meta,
      });
    expect(start).toThrow('stream n is at version 1, expected 0');
    expect(first.readStream('n').map((e) => e.data)).toEqual([{ by: 'second' }]);
    expect(verifyChain(a, chain)).toMatchObject({ ok: true, events: 1 });
    a.close();
    b.close();
  });

  it('begins a batch at the end another writer left, with what it appended to each stream', () => {
    const { a, b, key, chain, first, second } = twoWriters();
    const add = (s: EventStore, stream: string, expectedVersion: number | 'any' = 'any') =>
      s.append(stream, [{ type: 'X', data: {} }], { expectedVersion, metadata: meta });
    add(second, 'mine');
    add(first, 'x');
    add(first, 'y');
    add(first, 'x');
    expect(second.knownEnd()).toBe(1);
    b.exec('BEGIN IMMEDIATE');
    const foreign = second.batch.begin();
    if (foreign === 'all') throw new Error('every append since its end was read');
    expect(new Set(foreign.streams)).toEqual(new Set(['x', 'y']));
    expect(foreign.events('x').map((e) => [e.position, e.version])).toEqual([
      [2, 1],
      [4, 2],
    ]);
    expect(foreign.events('y').map((e) => e.version)).toEqual([1]);
    expect(second.knownEnd()).toBe(4);
    // A batch's one-stream append, written without a savepoint of its own, goes where the log
    // ends: at the end remembered before, it would have failed the whole batch.
    second.batch.itemStart(true);
    add(second, 'x', 2);
    second.batch.itemKept();
    second.batch.end();
    b.exec('COMMIT');
    // A writer that knows no end (a fresh one) takes the log's, and forgets every stream.
    const third = new EventStore(b, new ManualClock(), testChain(b, key));
    b.exec('BEGIN IMMEDIATE');
    expect(third.batch.begin()).toBe('all');
    expect(third.knownEnd()).toBe(5);
    third.batch.end();
    b.exec('COMMIT');
    expect(verifyChain(a, chain)).toMatchObject({ ok: true, events: 5 });
    a.close();
    b.close();
  });

  it('knows where its batches not yet durable begin, until each is committed, failed or rolled back', () => {
    const { store: s, db } = store();
    const batch = (stream: string) => {
      db.exec('BEGIN IMMEDIATE');
      s.batch.begin();
      s.batch.itemStart();
      s.append(stream, [{ type: 'X', data: {} }], { expectedVersion: 0, metadata: meta });
      s.batch.itemKept();
      return s.batch.end();
    };
    expect(s.unannouncedFrom()).toBeUndefined();
    const first = batch('a');
    db.exec('COMMIT');
    const second = batch('b');
    db.exec('COMMIT');
    expect(s.unannouncedFrom()).toBe(1);
    s.batch.committed(first.events);
    expect(s.unannouncedFrom()).toBe(2);
    s.batch.failed(second);
    expect(s.unannouncedFrom()).toBeUndefined();
    // Ended, then rolled back (its COMMIT failed): nothing of it is awaited.
    batch('c');
    db.exec('ROLLBACK');
    s.batch.aborted();
    expect(s.unannouncedFrom()).toBeUndefined();
    // An empty batch is awaited by nobody.
    db.exec('BEGIN IMMEDIATE');
    s.batch.begin();
    s.batch.end();
    db.exec('COMMIT');
    expect(s.unannouncedFrom()).toBeUndefined();
  });

  it('tells listeners after the commit, not before', () => {
    const { store: s } = store();
    const seen: number[] = [];
    s.onAppended((events) => seen.push(...events.map((e) => e.position)));
    s.append('a', [{ type: 'X', data: {} }], { expectedVersion: 0, metadata: meta });
    expect(() =>
      s.append('a', [{ type: 'X', data: {} }], { expectedVersion: 0, metadata: meta }),
    ).toThrow();
    expect(seen).toEqual([1]);
  });

  it('pages the log up to a time', () => {
    const { store: s, clock } = store();
    for (let i = 0; i < 7; i++) {
      s.append('a', [{ type: 'X', data: { i } }], { expectedVersion: i, metadata: meta });
      clock.advance(1000);
    }
    const pages = [...s.pages({ pageSize: 3, until: '2026-03-01T10:00:04.000Z' })];
    expect(pages.map((p) => p.length)).toEqual([3, 2]);
  });
});
