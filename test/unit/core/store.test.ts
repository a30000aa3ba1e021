import { describe, expect, it, vi } from 'vitest';
import { NOCASE_COLLATION, splitStatements, translate } from '../../../src/core/store/translate.js';
import { loadLibpq, watch } from '../../../src/core/store/postgres.js';
import { redactUrl, withConnectionBounds } from '../../../src/core/store/url.js';

const keys = (table: string) =>
  ({ t: ['id'], pair: ['a', 'b'] })[table] as readonly string[] | undefined;
const pg = (sql: string) => translate(sql, keys).text;

describe('translate (SQLite dialect to PostgreSQL)', () => {
  it('numbers positional parameters, and leaves ? inside literals and quoted names alone', () => {
    const t = translate(
      `SELECT '?', "a?" FROM t WHERE x = ? AND y = 'it''s ?' AND z IN (?, ?)`,
      keys,
    );
    expect(t.text).toBe(`SELECT '?', "a?" FROM t WHERE x = $1 AND y = 'it''s ?' AND z IN ($2, $3)`);
    expect(t.params).toEqual({ kind: 'positional', count: 3 });
  });

  it('binds named parameters by name, one number per name', () => {
    const t = translate(
      'UPDATE t SET a = @a, b = COALESCE(@b, b) WHERE id = @id AND a <> @a',
      keys,
    );
    expect(t.text).toBe('UPDATE t SET a = $1, b = COALESCE($2, b) WHERE id = $3 AND a <> $1');
    expect(t.params).toEqual({ kind: 'named', names: ['a', 'b', 'id'] });
  });

  it('gives a parameter tested with IS a type PostgreSQL can infer', () => {
    expect(pg('SELECT 1 FROM t WHERE (? IS NULL OR v = ?)')).toBe(
      'SELECT 1 FROM t WHERE ($1::text IS NULL OR v = $2)',
    );
  });

  it('turns INSERT OR IGNORE into ON CONFLICT DO NOTHING', () => {
    expect(pg('INSERT OR IGNORE INTO pair (a, b) VALUES (?, ?)')).toBe(
      'INSERT INTO pair (a, b) VALUES ($1, $2) ON CONFLICT DO NOTHING',
    );
  });

  it('turns INSERT OR REPLACE into an upsert on the primary key', () => {
    expect(pg('INSERT OR REPLACE INTO t (id, doc, n) VALUES (?, ?, ?)')).toBe(
      'INSERT INTO t (id, doc, n) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc, n = EXCLUDED.n',
    );
    expect(pg('INSERT OR REPLACE INTO pair (a, b) VALUES (?, ?)')).toBe(
      'INSERT INTO pair (a, b) VALUES ($1, $2) ON CONFLICT (a, b) DO NOTHING',
    );
    expect(() => pg('INSERT OR REPLACE INTO unknown (a) VALUES (?)')).toThrow(/no primary key/);
  });

  it('maps column types, moves COLLATE NOCASE after the type, and reads the primary key', () => {
    const t = translate(
      'CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY COLLATE NOCASE, n INTEGER NOT NULL, r REAL, b BLOB)',
      keys,
    );
    expect(t.text).toBe(
      `CREATE TABLE IF NOT EXISTS users (name TEXT COLLATE ${NOCASE_COLLATION} PRIMARY KEY, n BIGINT NOT NULL, r DOUBLE PRECISION, b BYTEA)`,
    );
    expect(t.creates).toEqual({ table: 'users', key: ['name'] });
    expect(translate('CREATE TABLE x (a TEXT, b TEXT, PRIMARY KEY (a, b))', keys).creates).toEqual({
      table: 'x',
      key: ['a', 'b'],
    });
    expect(translate('CREATE TABLE y (v TEXT)', keys).creates).toEqual({ table: 'y', key: [] });
  });

  it('renames instr to strpos and keeps everything else as written', () => {
    expect(pg('SELECT instr(lower(m), lower(?)) > 0 FROM t')).toBe(
      'SELECT strpos(lower(m), lower($1)) > 0 FROM t',
    );
    expect(pg("SELECT json_extract(doc, '$.a') FROM t ORDER BY length(p) DESC")).toBe(
      "SELECT json_extract(doc, '$.a') FROM t ORDER BY length(p) DESC",
    );
  });

  it('classifies transaction statements for the adapter to run', () => {
    expect(translate('BEGIN IMMEDIATE', keys).control).toEqual({ kind: 'begin' });
    expect(translate('COMMIT', keys).control).toEqual({ kind: 'commit' });
    expect(translate('SAVEPOINT keel_append', keys).control).toEqual({
      kind: 'savepoint',
      name: 'keel_append',
    });
    expect(translate('ROLLBACK TO keel_append', keys).control).toEqual({
      kind: 'rollback-to',
      name: 'keel_append',
    });
    expect(translate('RELEASE keel_append', keys).control).toEqual({
      kind: 'release',
      name: 'keel_append',
    });
    expect(translate('SELECT 1', keys).control).toBeNull();
  });

  it('refuses what it cannot translate, naming it', () => {
    expect(() => pg('SELECT 1 FROM t WHERE type GLOB ?')).toThrow(/GLOB/);
    expect(() => pg('PRAGMA data_version')).toThrow(/PRAGMA/);
    expect(() => pg('INSERT OR ABORT INTO t (id) VALUES (?)')).toThrow(/OR ABORT/);
    expect(() => pg('SELECT ? WHERE x = @x')).toThrow(/mixes/);
  });

  it('splits a script at semicolons outside literals', () => {
    expect(
      splitStatements("CREATE TABLE a (x TEXT DEFAULT ';'); ; INSERT INTO a VALUES ('b');"),
    ).toEqual(["CREATE TABLE a (x TEXT DEFAULT ';')", "INSERT INTO a VALUES ('b')"]);
  });
});

describe('redactUrl', () => {
  it('hides a password in the URL or as a parameter, and nothing else', () => {
    expect(redactUrl('postgres://keel:s3cr%40t@db.example:5432/keel?sslmode=require')).toBe(
      'postgres://keel:***@db.example:5432/keel?sslmode=require',
    );
    expect(redactUrl('postgresql:///keel?host=/run/pg&password=hunter2&user=k')).toBe(
      'postgresql:///keel?host=/run/pg&password=***&user=k',
    );
    expect(redactUrl('postgres://keel@db/keel')).toBe('postgres://keel@db/keel');
  });
});

describe('withConnectionBounds', () => {
  it('bounds the waits libpq would make without end, unless the URL sets its own', () => {
    expect(withConnectionBounds('postgres://keel@db/keel')).toBe(
      'postgres://keel@db/keel?connect_timeout=5&tcp_user_timeout=10000',
    );
    expect(withConnectionBounds('postgresql:///keel?host=/run/pg&user=k')).toBe(
      'postgresql:///keel?host=/run/pg&user=k&connect_timeout=5&tcp_user_timeout=10000',
    );
    expect(withConnectionBounds('postgres://db/keel?CONNECT_TIMEOUT=30&sslmode=require')).toBe(
      'postgres://db/keel?CONNECT_TIMEOUT=30&sslmode=require&tcp_user_timeout=10000',
    );
    expect(withConnectionBounds('postgres://db/keel?connect_timeout=1&tcp_user_timeout=0')).toBe(
      'postgres://db/keel?connect_timeout=1&tcp_user_timeout=0',
    );
    expect(withConnectionBounds('postgres://db/keel?')).toBe(
      'postgres://db/keel?connect_timeout=5&tcp_user_timeout=10000',
    );
  });
});

describe('loadLibpq', () => {
  it('says how to get the optional package when it did not install', () => {
    const missing = () => {
      throw new Error("Cannot find module 'libpq'");
    };
    expect(() => loadLibpq(missing)).toThrow(
      /--store postgres:\/\/ needs the optional package libpq.*apt-get install libpq-dev && npm install.*Cannot find module/,
    );
  });
});

describe('watch (a session answering a BEGIN or COMMIT without blocking)', () => {
  it('looks at the session when its socket says so and once a second besides, until unwatched', () => {
    vi.useFakeTimers();
    try {
      const listeners = new Set<() => void>();
      const reading: boolean[] = [];
      const pq = {
        on: (_: 'readable', listener: () => void) => void listeners.add(listener),
        removeListener: (_: 'readable', listener: () => void) => void listeners.delete(listener),
        startReader: () => void reading.push(true),
        stopReader: () => void reading.push(false),
      };
      let looks = 0;
      const unwatch = watch(pq, () => looks++);
      expect(reading).toEqual([true]);
      // No event comes (one that was missed): the session is looked at anyway.
      vi.advanceTimersByTime(3000);
      expect(looks).toBe(3);
      for (const listener of listeners) listener();
      expect(looks).toBe(4);
      unwatch();
      expect(reading).toEqual([true, false]);
      expect(listeners.size).toBe(0);
      vi.advanceTimersByTime(5000);
      expect(looks).toBe(4);
    } finally {
      vi.useRealTimers();
    }
  });
});
