import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/core/database.js';
import type { StoredEvent } from '../../../src/core/events.js';
import type { EventPages, Projection } from '../../../src/core/projections.js';
import { Projections } from '../../../src/core/projections.js';
import { scheduleProjection, scheduleRows } from '../../../src/core/schedule.js';

const log: StoredEvent[] = [1, 2, 3].map((n) => ({
  type: 'Counted',
  data: { n },
  position: n,
  stream: 'c',
  version: n,
  time: `2026-01-0${n}T00:00:00.000Z`,
  metadata: { actor: null, requestId: null, remoteAddress: null },
  hash: '',
}));
const pages: EventPages = (after, limit) => log.filter((e) => e.position > after).slice(0, limit);

/** A read model that keeps each count in its table and one schedule row per count. */
const counter = (name: string, version: number): Projection => ({
  name,
  version,
  tables: [`${name}_rows`],
  setup(db) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${name}_rows (n INTEGER PRIMARY KEY)`);
    const put = db.prepare(`INSERT INTO ${name}_rows (n) VALUES (?)`);
    const schedule = scheduleRows(db, name);
    return (e) => {
      const { n } = e.data as { n: number };
      put.run(n);
      schedule.put({ key: `${name}:${n}`, kind: name, dueAt: e.time, data: null });
    };
  },
});

const rows = (db: ReturnType<typeof openDatabase>, sql: string) => db.prepare(sql).all();

describe('projections', () => {
  it('rebuild only the one whose version changed, with only its schedule rows', () => {
    const db = openDatabase(':memory:');
    const first = new Projections(db, [scheduleProjection, counter('a', 1), counter('b', 1)]);
    expect(first.open(pages).rebuilt).toEqual(['schedule', 'a', 'b']);
    // Marks that a rebuild from the log would not write: they show what was left alone.
    db.exec('INSERT INTO b_rows (n) VALUES (99); INSERT INTO a_rows (n) VALUES (99)');
    db.exec(
      "INSERT INTO schedule (key, owner, kind, due_at, data) VALUES ('b:99', 'b', 'b', 'x', 'null'), ('a:99', 'a', 'a', 'x', 'null')",
    );

    const second = new Projections(db, [scheduleProjection, counter('a', 2), counter('b', 1)]);
    expect(second.open(pages).rebuilt).toEqual(['a']);
    expect(rows(db, 'SELECT n FROM a_rows ORDER BY n')).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(rows(db, 'SELECT n FROM b_rows ORDER BY n')).toEqual([
      { n: 1 },
      { n: 2 },
      { n: 3 },
      { n: 99 },
    ]);
    expect(rows(db, 'SELECT key FROM schedule ORDER BY key')).toEqual(
      ['a:1', 'a:2', 'a:3', 'b:1', 'b:2', 'b:3', 'b:99'].map((key) => ({ key })),
    );
    expect(new Projections(db, second.list).open(pages).rebuilt).toEqual([]);
  });

  it('rebuild every read model when the schedule projection itself changes', () => {
    const db = openDatabase(':memory:');
    new Projections(db, [scheduleProjection, counter('a', 1)]).open(pages);
    db.prepare("UPDATE projection_versions SET version = 1 WHERE name = 'schedule'").run();
    const again = new Projections(db, [scheduleProjection, counter('a', 1)]);
    expect(again.open(pages).rebuilt).toEqual(['schedule', 'a']);
    expect(rows(db, 'SELECT key FROM schedule ORDER BY key')).toHaveLength(3);
  });

  it('refuse to rebuild a projection nobody registered', () => {
    const db = openDatabase(':memory:');
    const p = new Projections(db, [scheduleProjection, counter('a', 1)]);
    p.open(pages);
    expect(() => p.rebuildOnly(['nope'], pages)).toThrow('no projection named nope');
  });
});
