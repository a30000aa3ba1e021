import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { openDatabase } from '../../../src/core/database.js';
import { EventStore } from '../../../src/core/event-store.js';
import { systemMetadata } from '../../../src/core/events.js';
import { silentLogger } from '../../../src/core/logger.js';
import { Reactors, type Reactor } from '../../../src/core/reactors.js';
import { AppendWatch } from '../../../src/ui/audit-routes.js';
import { Leadership } from '../../../src/core/leadership.js';
import { LogWatch, logVersion } from '../../../src/core/log-watch.js';
import { ReadMemo, anotherProcessCommitted } from '../../../src/core/read-memo.js';
import { testChain } from '../../support/chain.js';

/** One keyring for both connections: they write one chain. */
const CHAIN_KEY = Buffer.alloc(32, 7);

const meta = systemMetadata('test');

/** Two connections to one file, as two worker processes have. */
const twoConnections = () => {
  const path = join(mkdtempSync(join(tmpdir(), 'keel-lead-')), 'keel.sqlite');
  return [openDatabase(path), openDatabase(path)] as const;
};

/** Two processes' leaderships over one file, on one fake clock, with a 5 s lease. */
const contenders = () => {
  const [a, b] = twoConnections();
  const clock = new ManualClock();
  return {
    clock,
    one: new Leadership(a, clock, { holder: 'one', ttlMs: 5000 }),
    two: new Leadership(b, clock, { holder: 'two', ttlMs: 5000 }),
  };
};

describe('Leadership', () => {
  it('one holder at a time; another takes over only once the lease runs out unrenewed', () => {
    const { clock, one, two } = contenders();
    expect(one.tryLead()).toBe(true);
    expect(two.tryLead()).toBe(false);
    clock.advance(4000);
    // Renewed before it ran out: still one's.
    expect(one.tryLead()).toBe(true);
    clock.advance(4000);
    expect(two.tryLead()).toBe(false);
    expect(one.leading).toBe(true);
    // One stops renewing (killed): at the expiry it no longer believes it leads, and two takes it.
    clock.advance(1000);
    expect(one.leading).toBe(false);
    expect(two.tryLead()).toBe(true);
    expect(one.tryLead()).toBe(false);
    expect(two.current()?.holder).toBe('two');
  });

  it('a released lease is taken at once', () => {
    const { one, two } = contenders();
    expect(one.tryLead()).toBe(true);
    one.release();
    expect(one.leading).toBe(false);
    expect(two.tryLead()).toBe(true);
  });
});

describe('LogWatch', () => {
  it("notices another connection's commit, not its own, and clears the memos of its database", () => {
    const [a, b] = twoConnections();
    a.exec('CREATE TABLE t (v TEXT)');
    a.exec("INSERT INTO t VALUES ('old')");
    const watch = new LogWatch(logVersion(a, a));
    const memo = new ReadMemo(a);
    const read = () => a.prepare<[], { v: string }>('SELECT v FROM t').get()!.v;
    expect(memo.get('t', read)).toBe('old');
    let told = 0;
    watch.onForeignCommit(() => {
      told += 1;
      anotherProcessCommitted(a);
    });
    a.exec("UPDATE t SET v = 'mine'");
    expect(watch.check()).toBe(false);
    b.exec("UPDATE t SET v = 'theirs'");
    // Remembered until the check; the check clears it.
    expect(memo.get('t', read)).toBe('old');
    expect(watch.check()).toBe(true);
    expect(told).toBe(1);
    expect(memo.get('t', read)).toBe('theirs');
    expect(watch.check()).toBe(false);
  });
});

describe('ReadMemo', () => {
  it('keeps at most its limit, dropping the row read least recently', () => {
    const [a] = twoConnections();
    const memo = new ReadMemo(a, { limit: 2 });
    let reads = 0;
    const read = (v: string) => () => {
      reads += 1;
      return v;
    };
    memo.get('x', read('x'));
    memo.get('y', read('y'));
    memo.get('x', read('x')); // remembered, and now the most recent
    memo.get('z', read('z')); // y goes
    expect(reads).toBe(3);
    memo.get('x', read('x'));
    expect(reads).toBe(3);
    memo.get('y', read('y'));
    expect(reads).toBe(4);
  });
});

describe("ReadMemo and another process's commit", () => {
  const counted = (memo: ReadMemo) => {
    let reads = 0;
    const get = () =>
      memo.get('k', () => {
        reads += 1;
        return reads;
      });
    return { get, reads: () => reads };
  };

  it('forgets only for event types its projection applies, or when what changed is unknown', () => {
    const [a] = twoConnections();
    const memo = counted(new ReadMemo(a, { events: ['TokenRevoked', 'Pki*'] }));
    memo.get();
    const change = (...types: string[]) => ({
      types: new Set(types),
      streams: new Set(['some/stream']),
    });
    anotherProcessCommitted(a, change('RoleWritten', 'CertificateIssued'));
    memo.get();
    expect(memo.reads()).toBe(1);
    anotherProcessCommitted(a, change('RoleWritten', 'TokenRevoked'));
    memo.get();
    expect(memo.reads()).toBe(2);
    // A prefix pattern matches the types that begin with it.
    anotherProcessCommitted(a, change('PkiRoleWritten'));
    memo.get();
    expect(memo.reads()).toBe(3);
    anotherProcessCommitted(a, 'unknown');
    memo.get();
    expect(memo.reads()).toBe(4);
    // A memo that names no types forgets on every commit; one that names none at all, only when
    // what changed is unknown.
    const any = counted(new ReadMemo(a));
    const none = counted(new ReadMemo(a, { events: [] }));
    any.get();
    none.get();
    anotherProcessCommitted(a, change('Anything'));
    any.get();
    none.get();
    expect([any.reads(), none.reads()]).toEqual([2, 1]);
    anotherProcessCommitted(a, 'unknown');
    none.get();
    expect(none.reads()).toBe(2);
  });

  it('is told what changed by the LogWatch, unknown where the store cannot say', () => {
    const [a, b] = twoConnections();
    a.exec('CREATE TABLE t (v TEXT)');
    const heard: unknown[] = [];
    const watch = new LogWatch(logVersion(a, a));
    watch.onForeignCommit((change) => heard.push(change));
    b.exec("INSERT INTO t VALUES ('x')");
    expect(watch.check()).toBe(true);
    expect(heard).toEqual(['unknown']);
  });
});

describe('ReadMemo inside a transaction', () => {
  it('keeps what it reads while nothing was forgotten, and nothing the transaction wrote', () => {
    const [a] = twoConnections();
    a.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)');
    a.exec("INSERT INTO t VALUES ('x', 'committed'), ('y', 'committed')");
    const memo = new ReadMemo(a);
    let reads = 0;
    const read = (k: string) => () => {
      reads += 1;
      return a.prepare<[string], { v: string }>('SELECT v FROM t WHERE k = ?').get(k)!.v;
    };
    expect(() =>
      a.transaction(() => {
        // Nothing changed yet: what is read is committed, and kept.
        expect(memo.get('x', read('x'))).toBe('committed');
        expect(memo.get('x', read('x'))).toBe('committed');
        expect(reads).toBe(1);
        // The transaction writes y and says so: from here nothing read is kept.
        a.exec("UPDATE t SET v = 'uncommitted' WHERE k = 'y'");
        memo.forget('y');
        expect(memo.get('y', read('y'))).toBe('uncommitted');
        expect(memo.get('y', read('y'))).toBe('uncommitted');
        expect(reads).toBe(3);
        throw new Error('roll back');
      })(),
    ).toThrow('roll back');
    // Rolled back: y is read afresh, and kept again outside a transaction.
    expect(memo.get('y', read('y'))).toBe('committed');
    expect(memo.get('y', read('y'))).toBe('committed');
    expect(reads).toBe(4);
  });
});

describe('Reactors.resume', () => {
  it('a process that leads again starts from the checkpoint the other leader saved', async () => {
    const [a, b] = twoConnections();
    const clock = new ManualClock();
    const store = new EventStore(a, clock, testChain(a, CHAIN_KEY));
    const seen = { a: [] as number[], b: [] as number[] };
    const reactorOf = (who: 'a' | 'b'): Reactor => ({
      name: 'r',
      async react(event) {
        seen[who].push(event.position);
      },
    });
    const inA = new Reactors(a, store, silentLogger(), [reactorOf('a')]);
    const inB = new Reactors(b, new EventStore(b, clock, testChain(b, CHAIN_KEY)), silentLogger(), [
      reactorOf('b'),
    ]);
    const append = (n: number) => {
      for (let i = 0; i < n; i++) {
        store.append(`s${i}`, [{ type: 'T', data: {} }], {
          expectedVersion: 'any',
          metadata: meta,
        });
      }
    };
    append(3);
    await inA.settle();
    // b leads meanwhile and handles what was appended since.
    append(2);
    await inB.settle();
    expect(seen.b).toEqual([4, 5]);
    // a leads again: it resumes from b's checkpoint, not from its own memory of position 3.
    append(1);
    inA.resume();
    await inA.settle();
    expect(seen.a).toEqual([1, 2, 3, 6]);
  });
});

describe('AppendWatch', () => {
  it("wakes a long poll on another process's append, which its own store is not told of", async () => {
    const [a, b] = twoConnections();
    const clock = new ManualClock();
    const mine = new EventStore(a, clock, testChain(a, CHAIN_KEY));
    const theirs = new EventStore(b, clock, testChain(b, CHAIN_KEY));
    const watch = new AppendWatch(mine);
    const waiting = watch.wait(0, 60_000);
    theirs.append('s', [{ type: 'T', data: {} }], { expectedVersion: 0, metadata: meta });
    expect(watch.waiting).toBe(1);
    // What the LogWatch of this process does when it notices the commit.
    anotherProcessCommitted(a);
    await expect(waiting).resolves.toBe(1);
    watch.close();
  });
});
