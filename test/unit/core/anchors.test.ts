import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { verifyChain, writeAnchor } from '../../../src/core/anchors.js';
import { ManualClock } from '../../../src/core/clock.js';
import { openDatabase } from '../../../src/core/database.js';
import { EventStore } from '../../../src/core/event-store.js';
import { systemMetadata } from '../../../src/core/events.js';
import { testChain } from '../../support/chain.js';

const meta = systemMetadata('test');

/** A log of `size` events over a few streams, anchored after each of `anchorsAfter`. */
function log(size: number, anchorsAfter: readonly number[]) {
  const db = openDatabase(':memory:');
  const clock = new ManualClock('2026-05-01T00:00:00.000Z');
  const chain = testChain(db, randomBytes(32));
  const store = new EventStore(db, clock, chain);
  for (let i = 1; i <= size; i++) {
    store.append(`s${i % 3}`, [{ type: 'X', data: { i } }], {
      expectedVersion: 'any',
      metadata: meta,
    });
    clock.advance(1000);
    if (anchorsAfter.includes(i)) writeAnchor(db, chain, clock.now());
  }
  return { db, chain };
}

const columns = ['stream', 'type', 'time', 'data', 'metadata', 'hash'] as const;

describe('verifying the keyed chain and its anchors', () => {
  it('names the changed row, whatever column of whatever row changed', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.nat(),
        fc.constantFrom(...columns),
        (size, pick, column) => {
          const { db, chain } = log(size, []);
          const position = 1 + (pick % size);
          db.prepare(`UPDATE events SET ${column} = ${column} || 'x' WHERE position = ?`).run(
            position,
          );
          expect(verifyChain(db, chain)).toMatchObject({ ok: false, position });
          db.close();
        },
      ),
      { numRuns: 60 },
    );
  });

  it('names the first missing position when the log is cut anywhere before its latest anchor', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 30 }),
        fc.nat(),
        fc.nat(),
        (size, anchorPick, cutPick) => {
          const anchoredAt = 1 + (anchorPick % size);
          const { db, chain } = log(size, [anchoredAt]);
          const keep = cutPick % anchoredAt; // 0 … anchoredAt - 1 events remain
          db.prepare('DELETE FROM events WHERE position > ?').run(keep);
          expect(verifyChain(db, chain)).toMatchObject({ ok: false, position: keep + 1 });
          db.close();
        },
      ),
      { numRuns: 60 },
    );
  });

  it('passes an untouched log with every anchor, and one cut after its latest anchor', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { maxLength: 5 }),
        (size, after) => {
          const anchored = after.filter((a) => a <= size);
          const { db, chain } = log(size, anchored);
          expect(verifyChain(db, chain)).toEqual({
            ok: true,
            events: size,
            anchors: anchored.length,
            keyedFrom: 1,
          });
          const last = Math.max(0, ...anchored);
          db.prepare('DELETE FROM events WHERE position > ?').run(last);
          expect(verifyChain(db, chain)).toMatchObject({ ok: true, events: last });
          db.close();
        },
      ),
      { numRuns: 40 },
    );
  });
});
