import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/core/database.js';
import type { StoredEvent } from '../../../src/core/events.js';
import type { EventPages, Projection } from '../../../src/core/projections.js';
import {
  checkingProjectionEvents,
  Projections,
  UndeclaredEventWritten,
} from '../../../src/core/projections.js';
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
  events: ['Counted'],
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

/** An event of `type` at `position`, as the log would hold it. */
const eventOf = (type: string, position: number): StoredEvent => ({
  ...log[0]!,
  type,
  position,
  version: position,
});

/**
 * A read model that declares `declared`, records every call of its apply function (in `seen`, and
 * as `name:type` in `calls`), and writes a row for each event whose type is in `writes` (declared
 * or not).
 */
const recorder = (
  name: string,
  declared: readonly string[],
  writes: readonly string[] = [],
  calls: string[] = [],
) => {
  const seen: string[] = [];
  const projection: Projection = {
    name,
    version: 1,
    tables: [`${name}_rows`],
    events: declared,
    setup(db) {
      db.exec(`CREATE TABLE IF NOT EXISTS ${name}_rows (position INTEGER PRIMARY KEY)`);
      const put = db.prepare(`INSERT INTO ${name}_rows (position) VALUES (?)`);
      return (e) => {
        seen.push(e.type);
        calls.push(`${name}:${e.type}`);
        if (writes.includes(e.type)) put.run(e.position);
      };
    },
  };
  return { projection, seen };
};

describe('projections offer each event to those that declare its type', () => {
  it('are checked throughout the test suite (vitest.config.ts sets the variable)', () => {
    expect(checkingProjectionEvents()).toBe(true);
  });

  it('call only the declared appliers, in registration order, when the check is off', () => {
    const db = openDatabase(':memory:');
    const calls: string[] = [];
    const a = recorder('a', ['Opened', 'Closed'], [], calls);
    const b = recorder('b', ['Closed'], [], calls);
    const c = recorder('c', [], [], calls);
    const p = new Projections(db, [a.projection, b.projection, c.projection], {
      checkEvents: false,
    });
    p.open(() => []);
    p.apply(eventOf('Opened', 1));
    p.apply(eventOf('Closed', 2));
    p.apply(eventOf('Other', 3));
    expect(calls).toEqual(['a:Opened', 'a:Closed', 'b:Closed']);
  });

  it('rebuild from the log with the declared appliers alone', () => {
    const db = openDatabase(':memory:');
    const a = recorder('a', ['Counted'], ['Counted']);
    const b = recorder('b', ['Other']);
    new Projections(db, [a.projection, b.projection], { checkEvents: false }).open(pages);
    expect(a.seen).toEqual(['Counted', 'Counted', 'Counted']);
    expect(b.seen).toEqual([]);
    expect(rows(db, 'SELECT position FROM a_rows ORDER BY position')).toHaveLength(3);
  });

  it('with the check on, pass a projection that writes for declared types and reads others', () => {
    const db = openDatabase(':memory:');
    const a = recorder('a', ['Opened'], ['Opened']);
    const p = new Projections(db, [a.projection], { checkEvents: true });
    p.open(() => []);
    p.apply(eventOf('Opened', 1));
    p.apply(eventOf('Other', 2));
    // The undeclared type was offered (to be checked) and changed nothing.
    expect(a.seen).toEqual(['Opened', 'Other']);
    expect(rows(db, 'SELECT position FROM a_rows')).toEqual([{ position: 1 }]);
  });

  it('with the check on, fail the command when a projection writes for an undeclared type', () => {
    const db = openDatabase(':memory:');
    const a = recorder('a', ['Opened'], ['Opened']);
    const forgetful = recorder('forgetful', ['Opened'], ['Opened', 'Closed']);
    const p = new Projections(db, [a.projection, forgetful.projection], { checkEvents: true });
    p.open(() => []);
    const append = db.transaction((e: StoredEvent) => p.apply(e));
    append(eventOf('Opened', 1));
    expect(() => append(eventOf('Closed', 2))).toThrow(
      'projection forgetful changed the database for Closed, an event type missing from its events',
    );
    // The append's transaction is undone with it.
    expect(rows(db, 'SELECT position FROM forgetful_rows')).toEqual([{ position: 1 }]);
  });

  it('with the check on, fail a rebuild that writes for an undeclared type', () => {
    const db = openDatabase(':memory:');
    const forgetful = recorder('forgetful', [], ['Counted']);
    const p = new Projections(db, [forgetful.projection], { checkEvents: true });
    expect(() => p.open(pages)).toThrow(UndeclaredEventWritten);
  });

  it('with the check off, never offer an undeclared type, so nothing is written for it', () => {
    const db = openDatabase(':memory:');
    const forgetful = recorder('forgetful', ['Opened'], ['Opened', 'Closed']);
    const p = new Projections(db, [forgetful.projection], { checkEvents: false });
    p.open(() => []);
    p.apply(eventOf('Closed', 1));
    expect(forgetful.seen).toEqual([]);
    expect(rows(db, 'SELECT position FROM forgetful_rows')).toEqual([]);
  });
});
