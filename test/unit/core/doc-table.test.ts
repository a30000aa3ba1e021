import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/core/database.js';
import { DocTable } from '../../../src/core/sql.js';

/** A read model table of JSON documents: upsert by id, reads by id and by key in id order. */

interface Doc {
  id: string;
  owner: string;
  n: number;
}

const table = new DocTable<Doc>('docs', 'owner', (d) => d.owner);

function open() {
  const db = openDatabase(':memory:');
  db.exec(table.ddl);
  return { db, put: table.writer(db), read: table.reader(db) };
}

describe('DocTable', () => {
  it('upserts by id and reads back by id and by key, in id order', () => {
    const { put, read } = open();
    put({ id: 'b', owner: 'x', n: 1 });
    put({ id: 'a', owner: 'x', n: 2 });
    put({ id: 'c', owner: 'y', n: 3 });
    expect(read.get('a')).toEqual({ id: 'a', owner: 'x', n: 2 });
    expect(read.get('nope')).toBeNull();
    expect(read.where('x').map((d) => d.id)).toEqual(['a', 'b']);
    // Replacing a document moves it to its new key.
    put({ id: 'b', owner: 'y', n: 4 });
    expect(read.where('x').map((d) => d.id)).toEqual(['a']);
    expect(read.where('y')).toEqual([
      { id: 'b', owner: 'y', n: 4 },
      { id: 'c', owner: 'y', n: 3 },
    ]);
    expect(read.where('z')).toEqual([]);
  });

  it('a unique key keeps one document per key value: the newer replaces the older', () => {
    const unique = new DocTable<Doc>('once', 'owner', (d) => d.owner, { uniqueKey: true });
    const db = openDatabase(':memory:');
    db.exec(unique.ddl);
    const put = unique.writer(db);
    put({ id: 'a', owner: 'x', n: 1 });
    // INSERT OR REPLACE resolves the clash by dropping the older row, as the table promises.
    put({ id: 'b', owner: 'x', n: 2 });
    expect(
      unique
        .reader(db)
        .where('x')
        .map((d) => d.id),
    ).toEqual(['b']);
    expect(unique.reader(db).get('a')).toBeNull();
  });
});
