import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { verifyChain } from '../../../src/core/anchors.js';
import { ManualClock } from '../../../src/core/clock.js';
import { migrate } from '../../../src/core/database.js';
import { EventStore, type LogEntry } from '../../../src/core/event-store.js';
import { systemMetadata, type StoredEvent } from '../../../src/core/events.js';
import { ConcurrencyError } from '../../../src/core/errors.js';
import { UnprotectedWriteFailed } from '../../../src/core/group-commit.js';
import { STORE_UNAVAILABLE } from '../../../src/core/store/port.js';
import { PostgresDatabase } from '../../../src/core/store/postgres.js';
import { runProjection } from '../../../src/runs/run/projection.js';
import { testChain } from '../../support/chain.js';
import { clusterUrl } from '../../support/postgres.js';
import { pgProxy } from '../../support/pg-proxy.js';
import { freshDatabase } from '../../support/store.js';

// Runs in the `integration-pg` project only: it needs the run's PostgreSQL cluster.

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function database(): { url: string; db: PostgresDatabase } {
  const fresh = freshDatabase();
  const db = new PostgresDatabase(fresh.url);
  cleanups.push(() => fresh.drop());
  cleanups.push(() => db.close());
  return { url: fresh.url, db };
}

/** A fresh database, and a session on it through a proxy that can drop or refuse connections. */
async function throughProxy() {
  const fresh = freshDatabase();
  cleanups.push(() => fresh.drop());
  const proxy = await pgProxy(inject('keelPgSocket'));
  cleanups.push(() => void proxy.close());
  const db = new PostgresDatabase(
    clusterUrl(proxy.socketDir, new URL(fresh.url).pathname.slice(1)),
  );
  cleanups.push(() => db.close());
  return { url: fresh.url, proxy, db };
}

/** Two sessions on one migrated database, an event store on each, writing one chain. */
function twoStores() {
  const { url, db } = database();
  migrate(db);
  const other = new PostgresDatabase(url);
  cleanups.push(() => other.close());
  const clock = new ManualClock('2026-01-01T00:00:00.000Z');
  const key = randomBytes(32);
  const a = new EventStore(db, clock, testChain(db, key));
  const b = new EventStore(other, clock, testChain(other, key));
  return { db, other, key, a, b, meta: systemMetadata('test') };
}

/**
 * The plan the server keeps for the statement whose text matches `like`, as it would run it with
 * `args`. The statement ran in transactions, so it was prepared on the writer's session, where
 * this asks. After five runs PostgreSQL may keep one plan for every parameter, made for the table
 * as it was then.
 */
function keptPlan(db: PostgresDatabase, like: string, args: string): string {
  return db.transaction(() => {
    const name = db
      .prepare<[string], string>('SELECT name FROM pg_prepared_statements WHERE statement LIKE ?')
      .pluck()
      .get(like);
    expect(name).toBeDefined();
    return db.prepare<[], string>(`EXPLAIN EXECUTE ${name!}${args}`).pluck().all().join('\n');
  })();
}

/** A run's creation in workspace `ws-1`, at position `n`. */
const runCreated = (n: number): StoredEvent => ({
  position: n,
  stream: `run:run-${n}`,
  version: 1,
  type: 'RunCreated',
  time: '2026-01-01T00:00:00.000Z',
  data: {
    ...{
      id: `run-${n}`,
      workspaceId: 'ws-1',
      organization: 'org',
      configurationVersionId: 'cv',
    },
    ...{ createdBy: null, source: 'tfe-api', triggerReason: 'manual', message: '' },
    ...{ refresh: true, replaceAddrs: null, targetAddrs: null, variables: [] },
    ...{ planOnly: false, savePlan: false, autoApply: false, allowEmptyApply: false },
    ...{ isDestroy: false, refreshOnly: false, allowConfigGeneration: false },
    ...{ debuggingMode: false, engineVersion: null },
  },
  metadata: systemMetadata('test'),
  hash: 'h',
});

describe('PostgresDatabase (the store port on PostgreSQL)', () => {
  it('answers as better-sqlite3 does: numbers, Buffers, 1/0, undefined for no row, changes', () => {
    const { db } = database();
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, r REAL, b BLOB)');
    const insert = db.prepare<[number, string | null, number, Buffer]>(
      'INSERT INTO t (id, name, r, b) VALUES (?, ?, ?, ?)',
    );
    expect(insert.run(2 ** 40, 'big', 1.5, Buffer.from([0, 255]))).toEqual({ changes: 1 });
    insert.run(7, null, 0.25, Buffer.alloc(0));
    const row = db
      .prepare<[number], Record<string, unknown>>('SELECT * FROM t WHERE id = ?')
      .get(2 ** 40);
    expect(row).toEqual({ id: 2 ** 40, name: 'big', r: 1.5, b: Buffer.from([0, 255]) });
    expect(db.prepare('SELECT * FROM t WHERE id = ?').get(1)).toBeUndefined();
    expect(db.prepare<[], number>('SELECT count(*) FROM t').pluck().get()).toBe(2);
    expect(db.prepare<[], unknown[]>('SELECT id, name FROM t ORDER BY id').raw().all()).toEqual([
      [7, null],
      [2 ** 40, 'big'],
    ]);
    expect(db.prepare<[], number>('SELECT id = 7 FROM t ORDER BY id').pluck().all()).toEqual([
      1, 0,
    ]);
    expect(db.prepare('UPDATE t SET name = ? WHERE r < ?').run('x', 10)).toEqual({ changes: 2 });
    expect([...db.prepare<[], { id: number }>('SELECT id FROM t ORDER BY id').iterate()]).toEqual([
      { id: 7 },
      { id: 2 ** 40 },
    ]);
    expect(() => db.prepare('SELECT ?').get(true)).toThrow(/can only bind/);
  });

  it('binds named parameters and upserts through INSERT OR REPLACE / OR IGNORE', () => {
    const { db } = database();
    db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL, n INTEGER)');
    const put = db.prepare<[string, string, number]>(
      'INSERT OR REPLACE INTO kv (k, v, n) VALUES (?, ?, ?)',
    );
    put.run('a', 'one', 1);
    put.run('a', 'two', 2);
    db.prepare('INSERT OR IGNORE INTO kv (k, v, n) VALUES (?, ?, ?)').run('a', 'three', 3);
    db.prepare<{ k: string; v: string }>('UPDATE kv SET v = @v || @v WHERE k = @k').run({
      k: 'a',
      v: 'x',
    });
    expect(db.prepare('SELECT v, n FROM kv').all()).toEqual([{ v: 'xx', n: 2 }]);
    expect(() => db.prepare('UPDATE kv SET v = @v WHERE k = @k').run({ v: 'y' })).toThrow(
      /Missing named parameter "k"/,
    );
  });

  it('nests transactions as savepoints and undoes exactly what threw', () => {
    const { db } = database();
    db.exec('CREATE TABLE t (v TEXT)');
    const add = db.prepare<[string]>('INSERT INTO t (v) VALUES (?)');
    db.transaction(() => {
      add.run('outer');
      expect(() =>
        db.transaction(() => {
          add.run('inner');
          throw new Error('undo inner');
        })(),
      ).toThrow('undo inner');
      add.run('after');
    }).immediate();
    expect(() =>
      db.transaction(() => {
        add.run('lost');
        throw new Error('undo all');
      })(),
    ).toThrow('undo all');
    expect(db.inTransaction).toBe(false);
    expect(db.prepare<[], string>('SELECT v FROM t ORDER BY v').pluck().all()).toEqual([
      'after',
      'outer',
    ]);
  });

  it("runs SQLite's JSON functions, COLLATE NOCASE and instr", () => {
    const { db } = database();
    db.exec(`CREATE TABLE d (name TEXT PRIMARY KEY COLLATE NOCASE, doc TEXT NOT NULL)`);
    db.prepare('INSERT INTO d (name, doc) VALUES (?, ?)').run(
      'Alice',
      '{"a":{"b":"x"},"tags":["p","q"]}',
    );
    expect(
      db.prepare<[string], string>('SELECT name FROM d WHERE name = ?').pluck().get('ALICE'),
    ).toBe('Alice');
    expect(() => db.prepare('INSERT INTO d (name, doc) VALUES (?, ?)').run('alice', '{}')).toThrow(
      expect.objectContaining({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' }) as Error,
    );
    expect(db.prepare<[], string>("SELECT json_extract(doc, '$.a.b') FROM d").pluck().get()).toBe(
      'x',
    );
    expect(
      db
        .prepare<[string], number>(
          "SELECT count(*) FROM d, json_each(d.doc, '$.tags') e WHERE e.value = ?",
        )
        .pluck()
        .get('q'),
    ).toBe(1);
    db.prepare(`UPDATE d SET doc = json_set(doc, '$.' || ?, ?)`).run('"at-x"', 'now');
    expect(JSON.parse(db.prepare<[], string>('SELECT doc FROM d').pluck().get()!)).toMatchObject({
      'at-x': 'now',
    });
    // (Not on a NOCASE column: PostgreSQL searches no substring under a nondeterministic collation.)
    expect(db.prepare<[string], number>('SELECT instr(doc, ?) FROM d').pluck().get('"a"')).toBe(2);
  });

  it('tells a taken primary key from another unique constraint, as SQLite does', () => {
    const { db } = database();
    db.exec('CREATE TABLE u (id INTEGER PRIMARY KEY, s TEXT, v INTEGER, UNIQUE (s, v))');
    db.prepare('INSERT INTO u VALUES (?, ?, ?)').run(1, 'a', 1);
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return (err as { code: string }).code;
      }
      return 'none';
    };
    expect(code(() => db.prepare('INSERT INTO u VALUES (?, ?, ?)').run(1, 'b', 1))).toBe(
      'SQLITE_CONSTRAINT_PRIMARYKEY',
    );
    expect(code(() => db.prepare('INSERT INTO u VALUES (?, ?, ?)').run(2, 'a', 1))).toBe(
      'SQLITE_CONSTRAINT_UNIQUE',
    );
  });

  it('fails the call that meets a lost connection, then reconnects and prepares again', () => {
    const { url, db } = database();
    db.exec('CREATE TABLE t (v INTEGER)');
    const count = db.prepare<[], number>('SELECT count(*) FROM t').pluck();
    expect(count.get()).toBe(0);
    const pid = db.prepare<[], number>('SELECT pg_backend_pid()').pluck().get()!;
    const admin = new PostgresDatabase(url);
    cleanups.push(() => admin.close());
    expect(admin.prepare<[number], number>('SELECT pg_terminate_backend(?)').pluck().get(pid)).toBe(
      1,
    );
    expect(() => count.get()).toThrow(
      expect.objectContaining({ code: STORE_UNAVAILABLE }) as Error,
    );
    expect(db.inTransaction).toBe(false);
    db.prepare('INSERT INTO t (v) VALUES (?)').run(1);
    expect(count.get()).toBe(1);
    expect(db.prepare<[], number>('SELECT pg_backend_pid()').pluck().get()).not.toBe(pid);
  });

  it('gives up on a server that accepts a connection and never answers, instead of waiting without end', async () => {
    const silent = await pgProxy(null);
    cleanups.push(() => void silent.close());
    // libpq's own default is to wait forever, holding the event loop: Keel bounds it (5 s).
    expect(() => new PostgresDatabase(clusterUrl(silent.socketDir))).toThrow(
      expect.objectContaining({
        code: STORE_UNAVAILABLE,
        message: expect.stringMatching(/cannot connect to .*timeout expired/) as string,
      }) as Error,
    );
  }, 60_000);

  it('keeps one dense, verifiable chain when two connections append in turn with stale ends', () => {
    const { db, key, a, b, meta } = twoStores();
    for (let i = 0; i < 20; i++) {
      const store = i % 3 === 0 ? b : a;
      store.append(`s-${i % 4}`, [{ type: 'Happened', data: { i } }], {
        expectedVersion: 'any',
        metadata: meta,
      });
    }
    // A stale version hint is a concurrency conflict, and the transaction stays usable.
    expect(() =>
      a.append('s-0', [{ type: 'Happened', data: {} }], { expectedVersion: 1, metadata: meta }),
    ).toThrow(ConcurrencyError);
    const positions = db
      .prepare<[], number>('SELECT position FROM events ORDER BY position')
      .pluck()
      .all();
    expect(positions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(verifyChain(db, testChain(db, key)).ok).toBe(true);
  });

  it('hears every commit another session finished before heardUpTo was called, and shares the round trip', async () => {
    const { url, db: a } = database();
    const b = new PostgresDatabase(url);
    cleanups.push(() => b.close());
    a.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    const before = b.foreignCommits(); // starts listening
    await b.heardUpTo();
    a.transaction(() => a.prepare('INSERT INTO t (id) VALUES (?)').run(1))();
    // The notification travels on its own: nothing has read it yet (no turn of the event loop),
    // which is what a request arriving on another node right after the acknowledgement meets.
    expect(b.foreignCommits()).toBe(before);
    await b.heardUpTo();
    expect(b.foreignCommits()).toBe(before + 1);
    // Callers while a round trip is in flight share the next one, which starts after it.
    a.transaction(() => a.prepare('INSERT INTO t (id) VALUES (?)').run(2))();
    const first = b.heardUpTo();
    a.transaction(() => a.prepare('INSERT INTO t (id) VALUES (?)').run(3))();
    const second = b.heardUpTo();
    const third = b.heardUpTo();
    expect(third).toBe(second);
    await Promise.all([first, second]);
    expect(b.foreignCommits()).toBe(before + 3);
    // Its own commits are not counted.
    b.transaction(() => b.prepare('INSERT INTO t (id) VALUES (?)').run(4))();
    await b.heardUpTo();
    expect(b.foreignCommits()).toBe(before + 3);
  });

  it('tells other stores what a batch appended: its types and streams; else it is unknown', async () => {
    const { url, db: a } = database();
    const b = new PostgresDatabase(url);
    cleanups.push(() => b.close());
    a.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    b.foreignCommits(); // starts listening
    await b.heardUpTo();
    b.foreignChanges();
    const batch = async (id: number, appended?: { types: string[]; streams: string[] }) => {
      const durability = a.durability;
      await durability.begin!();
      a.prepare('INSERT INTO t (id) VALUES (?)').run(id);
      await durability.commit(() => undefined, appended);
    };
    const heard = async () => {
      await b.heardUpTo();
      return b.foreignChanges();
    };
    // Two batches before the check: what both appended, each once. A quote survives the SQL.
    await batch(1, { types: ['Happened'], streams: ["s-'1"] });
    await batch(2, { types: ['Happened', 'Other'], streams: ['s-2', "s-'1"] });
    expect(await heard()).toEqual({
      types: new Set(['Happened', 'Other']),
      streams: new Set(["s-'1", 's-2']),
    });
    // Asked again with nothing new: nothing.
    expect(b.foreignChanges()).toEqual({ types: new Set(), streams: new Set() });
    // A commit that does not say (a plain transaction), or says too much to carry: unknown.
    a.transaction(() => a.prepare('INSERT INTO t (id) VALUES (?)').run(3))();
    expect(await heard()).toBe('unknown');
    const many = Array.from({ length: 400 }, (_, i) => `a-long-stream-name/${i}`);
    await batch(4, { types: ['Happened'], streams: many });
    expect(await heard()).toBe('unknown');
    // Its own commits say nothing to itself.
    await b.durability.begin!();
    b.prepare('INSERT INTO t (id) VALUES (?)').run(5);
    await b.durability.commit(() => undefined, { types: ['Mine'], streams: ['s-b'] });
    expect(await heard()).toEqual({ types: new Set(), streams: new Set() });
  });

  it('carries any stream name in a notification, whatever the server says of backslashes', async () => {
    const { url, db: admin } = database();
    const name = admin.prepare<[], string>('SELECT current_database()').pluck().get()!;
    // The old default: a backslash escapes the quote after it, unless the session says otherwise.
    admin.exec(`ALTER DATABASE ${name} SET standard_conforming_strings = off`);
    const a = new PostgresDatabase(url);
    const b = new PostgresDatabase(url);
    cleanups.push(() => a.close());
    cleanups.push(() => b.close());
    a.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    b.foreignCommits();
    await b.heardUpTo();
    b.foreignChanges();
    const streams = ["pki/m/role/a\\'; DROP TABLE t; --", 'x\\', "'", 'é\u0000'];
    await a.durability.begin!();
    a.prepare('INSERT INTO t (id) VALUES (?)').run(1);
    await a.durability.commit(() => undefined, { types: ['Happened'], streams });
    await b.heardUpTo();
    expect(b.foreignChanges()).toEqual({ types: new Set(['Happened']), streams: new Set(streams) });
    expect(b.prepare<[], number>('SELECT count(*) FROM t').pluck().get()).toBe(1);
  });

  it("begins a batch knowing the log's end and the streams another store appended to since its own", async () => {
    const { db, other, key, a, b, meta } = twoStores();
    const append = (store: EventStore, stream: string, n = 1) =>
      store.append(
        stream,
        Array.from({ length: n }, (_, i) => ({ type: 'Happened', data: { i } })),
        { expectedVersion: 'any', metadata: meta },
      );
    append(b, 'mine');
    append(a, 'x');
    append(a, 'y');
    append(a, 'x');
    // B still takes its own append for the end of the log.
    expect(b.knownEnd()).toBe(1);
    const told: LogEntry[][] = [];
    b.onForeignAppended((entries) => told.push([...entries]));
    const begin = async () => {
      const opened = await other.durability.begin!(b.batch.opening());
      return b.batch.begin(opened);
    };
    const end = async () => {
      b.batch.end();
      await other.durability.commit(() => undefined);
    };
    const foreign = await begin();
    if (foreign === 'all') throw new Error('every append since its end was read');
    expect(new Set(foreign.streams)).toEqual(new Set(['x', 'y']));
    expect(foreign.events('x').map((e) => [e.version, e.data])).toEqual([
      [1, { i: 0 }],
      [2, { i: 0 }],
    ]);
    expect(b.knownEnd()).toBe(4);
    // Every position since, in order, with its type: B's reactors are told of them.
    expect(told).toEqual([[2, 3, 4].map((position) => ({ position, type: 'Happened' }))]);
    // Its append inside the batch goes where the log ends, and the chain holds.
    append(b, 'x');
    await end();
    // Nothing since: nothing changed.
    expect(await begin()).toMatchObject({ streams: [] });
    await end();
    // More than it reads at the start of a batch: every remembered version is forgotten.
    append(a, 'z', 1001);
    expect(await begin()).toBe('all');
    // Not all of them read: none told (B's next append is then told after a gap).
    expect(told).toHaveLength(1);
    expect(b.knownEnd()).toBe(1006);
    append(b, 'x');
    await end();
    const positions = db
      .prepare<[], number>('SELECT position FROM events ORDER BY position')
      .pluck()
      .all();
    expect(positions).toEqual(Array.from({ length: 1007 }, (_, i) => i + 1));
    expect(verifyChain(db, testChain(db, key)).ok).toBe(true);
  });

  it("reads a reactor's events through the log's key, whatever plan the server kept from when the log was empty", () => {
    const { db } = database();
    migrate(db);
    const store = new EventStore(db, new ManualClock('2026-01-01T00:00:00.000Z'), testChain(db));
    const read = store.readerOf(['RunQueued', 'Run*']);
    db.transaction(() => {
      for (let i = 0; i < 8; i++) expect(read(i, 100)).toEqual([]);
    })();
    db.exec(`INSERT INTO events (position, stream, version, type, time, data, metadata, hash)
      SELECT g, 's' || g, 1, CASE WHEN g % 1000 = 0 THEN 'RunQueued' ELSE 'Other' END,
        '2026-01-01T00:00:00.000Z', '{}', '{}', 'h' FROM generate_series(1, 5000) AS g`);
    expect(db.transaction(() => read(3500, 100).map((e) => e.position))()).toEqual([4000, 5000]);
    const plan = keptPlan(db, 'SELECT position, %type = $2%', "(3500, 'RunQueued', 'Run', 100)");
    // The log grows without bound: a pass that reads the whole of it costs more with every event.
    expect(plan).toMatch(/Index Cond: \(\("position" > \$1\)/);
    expect(plan).not.toMatch(/Seq Scan/);
  });

  it("numbers a workspace's runs through its index, whatever plan the server kept from when it had one run", () => {
    const { db } = database();
    const apply = runProjection.setup(db);
    for (let n = 1; n <= 8; n++) db.transaction(() => apply(runCreated(n)))();
    db.exec(`INSERT INTO runs_runs
      SELECT 'old-' || g, 100 + g, 'ws-1', 'org', 8 + g, 'applied', 'plan_and_apply', 'tfe-api', 0, 0,
        0, 0, 0, 0, NULL, NULL, '', '2026-01-01T00:00:00.000Z', NULL, '{}', '{}', '{}', '{}'
      FROM generate_series(1, 3000) AS g`);
    db.transaction(() => apply(runCreated(5000)))();
    const listed = db
      .prepare<[], number>("SELECT listed_seq FROM runs_runs WHERE id = 'run-5000'")
      .pluck()
      .get();
    expect(listed).toBe(3009);
    const plan = keptPlan(
      db,
      'SELECT %listed_seq%FROM runs_runs WHERE workspace_id = $1%',
      "('ws-1')",
    );
    // A workspace's runs grow without bound: one more run must not read every one before it.
    expect(plan).toMatch(/Index Only Scan Backward using runs_runs_ws_listed/);
    expect(plan).not.toMatch(/Aggregate|Seq Scan/);
  });

  it('gathers the statistics on a session of its own, after which a plan kept from a small table is made again', async () => {
    const { db } = database();
    const apply = runProjection.setup(db);
    // The server's own autovacuum must not analyse the table first: this shows Keel's ANALYZE.
    db.exec('ALTER TABLE runs_runs SET (autovacuum_enabled = false)');
    const next = db
      .prepare<[string], number>(
        'SELECT COALESCE(MAX(listed_seq), 0) + 1 FROM runs_runs WHERE workspace_id = ?',
      )
      .pluck();
    // Asked as each run was created, as the projection once asked.
    for (let n = 1; n <= 8; n++) {
      db.transaction(() => {
        next.get('ws-1');
        apply(runCreated(n));
      })();
    }
    db.exec(`INSERT INTO runs_runs
      SELECT 'old-' || g, 100 + g, 'ws-1', 'org', 8 + g, 'applied', 'plan_and_apply', 'tfe-api', 0, 0,
        0, 0, 0, 0, NULL, NULL, '', '2026-01-01T00:00:00.000Z', NULL, '{}', '{}', '{}', '{}'
      FROM generate_series(1, 3000) AS g`);
    const kept = () => keptPlan(db, 'SELECT COALESCE(MAX(listed_seq)%', "('ws-1')");
    // Kept from when the workspace had a few runs: every run of it is read for the maximum.
    expect(kept()).toMatch(/Aggregate[\s\S]*Index Scan using runs_runs_queue/);
    await db.analyze();
    db.transaction(() => {
      for (let i = 0; i < 8; i++) expect(next.get('ws-1')).toBe(3009);
    })();
    expect(kept()).toMatch(/Index Only Scan Backward using runs_runs_ws_listed/);
  });

  it('says the store is out of reach when it cannot connect to gather the statistics', async () => {
    const { proxy, db } = await throughProxy();
    await proxy.down();
    await expect(db.analyze()).rejects.toMatchObject({ code: STORE_UNAVAILABLE });
    await proxy.up();
    await expect(db.analyze()).resolves.toBeUndefined();
  });

  it("asks the server whether a batch's COMMIT happened when its session is lost before the answer, and says the store is out of reach when it cannot ask", async () => {
    const { url, proxy, db } = await throughProxy();
    migrate(db);
    const admin = new PostgresDatabase(url);
    cleanups.push(() => admin.close());
    const key = randomBytes(32);
    const store = new EventStore(db, new ManualClock(), testChain(db, key));
    const meta = systemMetadata('test');
    const events = () =>
      admin.prepare<[], string>('SELECT stream FROM events ORDER BY position').pluck().all();
    const durability = db.durability;
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    /** A batch of one append; `before` and `after` its COMMIT is sent. */
    const batch = async (
      stream: string,
      {
        before,
        after,
        pipelined = true,
      }: { before?: () => Promise<void>; after?: () => Promise<void>; pipelined?: boolean } = {},
    ) => {
      store.batch.begin(await durability.begin!(store.batch.opening()));
      // Not pipelined: as a batch is written again, each statement answered in turn.
      if (pipelined) durability.pipeline!.start();
      store.append(stream, [{ type: 'Happened', data: {} }], {
        expectedVersion: 0,
        metadata: meta,
      });
      const kept = store.batch.end();
      await before?.();
      const committed = durability
        .commit(() => undefined, { types: ['Happened'], streams: [stream] })
        .then(
          () => store.batch.committed(kept.events),
          (err: unknown) => {
            store.batch.failed(kept);
            throw err;
          },
        );
      // It may settle while `after` runs: its rejection is the caller's to see, once awaited.
      committed.catch(() => undefined);
      await after?.();
      return committed;
    };

    // The server runs the writes and the COMMIT; the answer is lost on the way back.
    await batch('answered-not', {
      before: () => proxy.holdReplies(),
      after: async () => {
        await until(() => events().includes('answered-not'));
        await proxy.cut();
      },
    });
    expect(events()).toEqual(['answered-not']);

    // The writer's server session ends before the COMMIT: nothing of the batch happened, and the
    // batch is to be written again (`UnprotectedWriteFailed`), not taken as of unknown durability.
    const sessions = (pid: number) =>
      admin
        .prepare<[number], number>('SELECT count(*) FROM pg_stat_activity WHERE pid = ?')
        .pluck()
        .get(pid);
    const endWriter = async (): Promise<number> => {
      const writer = admin
        .prepare<[], number>(
          'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()',
        )
        .pluck()
        .get()!;
      admin.prepare('SELECT pg_terminate_backend(?)').get(writer);
      await until(() => sessions(writer) === 0);
      return writer;
    };
    let writer = 0;
    await expect(
      batch('never', {
        before: async () => {
          writer = await endWriter();
        },
      }),
    ).rejects.toBeInstanceOf(UnprotectedWriteFailed);
    expect(writer).toBeGreaterThan(0);
    expect(events()).toEqual(['answered-not']);

    // The next batch begins on a new session, at the end of the log.
    await batch('again');
    expect(events()).toEqual(['answered-not', 'again']);

    // The answer is lost and the server cannot be asked: the batch's callers are told the store
    // is out of reach (they ask again), and the node forgets what it remembered.
    const heard = db.foreignCommits();
    await expect(
      batch('unknown', {
        before: () => proxy.holdReplies(),
        after: async () => {
          await until(() => events().includes('unknown'));
          await proxy.down();
        },
      }),
    ).rejects.toMatchObject({ code: STORE_UNAVAILABLE });
    await proxy.up();
    expect(db.foreignCommits()).toBeGreaterThan(heard);
    expect(db.foreignChanges()).toBe('unknown');
    // It did happen; the next batch begins after it.
    await batch('after');
    expect(events()).toEqual(['answered-not', 'again', 'unknown', 'after']);

    // A batch written again (no pipeline) loses its session before its COMMIT reached the server,
    // which ended the transaction: asked, the server says it was aborted. The callers are told
    // the store is unavailable (they ask again), not that the outcome is unknown.
    let lost = 0;
    const lostCommit = batch('lost', {
      pipelined: false,
      before: async () => {
        // Neither the COMMIT nor the server's word that it ended the session gets through.
        await proxy.holdRequests();
        await proxy.holdReplies();
        lost = await endWriter();
      },
      after: () => proxy.cut(),
    });
    await expect(lostCommit).rejects.toMatchObject({ code: STORE_UNAVAILABLE });
    await expect(lostCommit).rejects.not.toThrow(/could not be asked/);
    expect(lost).toBeGreaterThan(0);
    expect(events()).toEqual(['answered-not', 'again', 'unknown', 'after']);
    await batch('after-lost');
    expect(events()).toEqual(['answered-not', 'again', 'unknown', 'after', 'after-lost']);
    expect(verifyChain(admin, testChain(admin, key)).ok).toBe(true);
  });
});
