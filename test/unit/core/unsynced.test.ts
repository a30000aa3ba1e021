import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase, unsynced, type SqliteDb as Db } from '../../../src/core/database.js';

const level = (db: Db) => db.pragma('synchronous', { simple: true }) as number;
const FULL = 2;
const NORMAL = 1;

function fileDb(sync: 'full' | 'normal'): Db {
  return openDatabase(join(mkdtempSync(join(tmpdir(), 'keel-unsynced-')), 'keel.sqlite'), sync);
}

describe('unsynced', () => {
  it('runs the write at synchronous=NORMAL on a full connection, and restores FULL after', () => {
    const db = fileDb('full');
    const write = unsynced(db);
    expect(level(db)).toBe(FULL);
    const during = write(() => {
      db.prepare('INSERT INTO checkpoints (name, position) VALUES (?, ?)').run('r', 1);
      return level(db);
    });
    expect(during).toBe(NORMAL);
    expect(level(db)).toBe(FULL);
    expect(db.prepare('SELECT position FROM checkpoints').pluck().get()).toBe(1);
  });

  it('restores the level when the write throws, and passes the error on', () => {
    const db = fileDb('full');
    const write = unsynced(db);
    expect(() =>
      write(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(level(db)).toBe(FULL);
  });

  it('leaves a write inside a transaction to the transaction (its commit syncs as set)', () => {
    const db = fileDb('full');
    const write = unsynced(db);
    const during = db.transaction(() => write(() => level(db)))();
    expect(during).toBe(FULL);
    expect(level(db)).toBe(FULL);
  });

  it('changes nothing on a normal connection', () => {
    const db = fileDb('normal');
    expect(unsynced(db)(() => level(db))).toBe(NORMAL);
    expect(level(db)).toBe(NORMAL);
  });
});
