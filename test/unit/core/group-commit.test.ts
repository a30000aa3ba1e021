import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { CommandHandler } from '../../../src/core/command-handler.js';
import { openDatabase, type Db } from '../../../src/core/database.js';
import { EventStore } from '../../../src/core/event-store.js';
import { systemMetadata, type StoredEvent } from '../../../src/core/events.js';
import {
  SyncFailed,
  UnprotectedWriteFailed,
  type Durability,
} from '../../../src/core/group-commit.js';
import { testChain } from '../../support/chain.js';
import { accountDecider } from '../../support/ledger/context.js';
import type { LedgerEvent } from '../../support/ledger/events.js';
import { Sealer } from '../../../src/core/seal.js';

const meta = systemMetadata('test');
const pin = new Sealer(Buffer.alloc(32, 3)).seal('0000');

/**
 * A handler over an in-memory log whose batches begin and end as `durability` says. A batch is
 * never cut short for the time it takes (on a busy machine one command can outlast the budget),
 * so what is submitted in one turn is one batch.
 */
function setup(durability: (db: Db) => Durability) {
  const db = openDatabase(':memory:');
  const store = new EventStore(db, new ManualClock(), testChain(db));
  const heard: string[] = [];
  store.onAppended((events: readonly StoredEvent[]) => heard.push(...events.map((e) => e.stream)));
  const handler = new CommandHandler(store, new ManualClock(), durability(db), {
    batchBudgetMs: Number.POSITIVE_INFINITY,
  });
  return { store, heard, handler };
}

const open = (handler: CommandHandler, id: string) =>
  handler.handle(
    `account-${id}`,
    accountDecider,
    (): LedgerEvent[] => [{ type: 'AccountOpened', data: { id, owner: id, pin } }],
    meta,
  );

describe('group commit and the disk', () => {
  it('settles no command before its batch is synced: what a client is told survives a power cut', async () => {
    let synced: () => void = () => undefined;
    const { handler, heard } = setup(() => ({
      commit: async (commitNow) => {
        commitNow();
        // The sync in flight (SQLite's fdatasync of the log, PostgreSQL's COMMIT): held here.
        await new Promise<void>((resolve) => (synced = resolve));
      },
    }));
    let settled = false;
    const opened = open(handler, 'a').then(() => (settled = true));
    // Many turns of the event loop: the batch is committed, its sync is not done.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    expect(heard).toEqual([]);
    synced();
    await opened;
    expect(settled).toBe(true);
    expect(heard).toEqual(['account-a']);
  });
});

describe('group commit while a sync runs', () => {
  it('writes the next batch before the last is durable only once as many commands wait as it held', async () => {
    const syncs: (() => void)[] = [];
    const { handler, store } = setup(() => ({
      overlaps: true,
      commit: async (commitNow) => {
        commitNow();
        await new Promise<void>((resolve) => syncs.push(resolve));
      },
    }));
    const turns = async () => {
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    const written = () => store.readAll().map((e) => e.stream);
    // One batch of three, its sync running.
    const first = ['a', 'b', 'c'].map((id) => open(handler, id));
    await turns();
    expect(written()).toEqual(['account-a', 'account-b', 'account-c']);
    expect(syncs).toHaveLength(1);
    // Two commands wait: fewer than the batch held, so they wait for its sync.
    const second = ['d', 'e'].map((id) => open(handler, id));
    await turns();
    expect(written()).toHaveLength(3);
    // A third: as many as the batch held, so the next batch is written while the sync runs.
    second.push(open(handler, 'f'));
    await turns();
    expect(written()).toEqual(['a', 'b', 'c', 'd', 'e', 'f'].map((id) => `account-${id}`));
    expect(syncs).toHaveLength(2);
    // One more waits for that batch's sync (it held three), and is written once it is done.
    const third = open(handler, 'g');
    await turns();
    expect(written()).toHaveLength(6);
    syncs[0]!();
    await Promise.all(first);
    await turns();
    expect(written()).toHaveLength(6);
    syncs[1]!();
    await Promise.all(second);
    await turns();
    expect(written()).toHaveLength(7);
    syncs[2]!();
    await expect(third).resolves.toMatchObject({ version: 1 });
  });

  it('drains while a batch waits for its sync: what was submitted is durable, and nothing more is written', async () => {
    let release: () => void = () => undefined;
    let commits = 0;
    const { handler, store } = setup(() => ({
      overlaps: true,
      commit: async (commitNow) => {
        commitNow();
        commits++;
        // The first batch's sync is held; every later one is over at once.
        if (commits === 1) await new Promise<void>((resolve) => (release = resolve));
      },
    }));
    const opened = ['a', 'b'].map((id) => open(handler, id));
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(commits).toBe(1);
    // Draining (the daemon stopping) while that batch waits for its sync.
    let drained = false;
    const draining = handler.drained().then(() => (drained = true));
    release();
    await Promise.all(opened);
    for (let i = 0; i < 200 && !drained; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(drained).toBe(true);
    await draining;
    // One batch of the two accounts, and at most one more (drain's own empty work).
    expect(commits).toBeLessThanOrEqual(2);
    expect(store.readAll().map((e) => e.stream)).toEqual(['account-a', 'account-b']);
  });
});

describe('group commit when the store fails', () => {
  it('refuses every command once a sync failed: what was committed is not known to be on disk', async () => {
    let fail = false;
    const { handler, heard } = setup(() => ({
      commit: async (commitNow) => {
        commitNow();
        if (fail) throw new SyncFailed('EIO');
      },
    }));
    await open(handler, 'a');
    fail = true;
    await expect(open(handler, 'b')).rejects.toThrow(
      /the log's disk sync failed, so what was committed is not known to be durable; restart the daemon: EIO/,
    );
    fail = false;
    await expect(open(handler, 'c')).rejects.toThrow(/restart the daemon/);
    // Listeners never heard of the batch whose sync failed.
    expect(heard).toEqual(['account-a']);
  });

  it('refuses the commands of a batch whose COMMIT failed, forgets what it wrote, and takes the next', async () => {
    let fail = true;
    const { handler, store, heard } = setup((db) => ({
      commit: async (commitNow) => {
        if (fail) {
          fail = false;
          // As PostgreSQL answers a COMMIT it refuses: the transaction is gone.
          db.prepare('ROLLBACK').run();
          throw new Error('could not serialize access');
        }
        commitNow();
      },
    }));
    await expect(open(handler, 'a')).rejects.toThrow('could not serialize access');
    // The fold the batch left in the cache is forgotten: the stream is decided afresh.
    await open(handler, 'a');
    expect(store.readStream('account-a').map((e) => e.version)).toEqual([1]);
    expect(heard).toEqual(['account-a']);
  });

  it('refuses the commands waiting for a BEGIN that failed, and takes the next', async () => {
    let fail = true;
    const { handler } = setup((db) => ({
      begin: async () => {
        if (fail) {
          fail = false;
          throw new Error('the store is out of reach');
        }
        db.prepare('BEGIN IMMEDIATE').run();
        return undefined;
      },
      commit: async (commitNow) => commitNow(),
    }));
    await expect(open(handler, 'a')).rejects.toThrow('the store is out of reach');
    await expect(open(handler, 'a')).resolves.toMatchObject({ version: 1 });
  });

  it('refuses the commands of a batch written again whose BEGIN failed, and takes the next', async () => {
    // The pipelined batch's commit finds a write that failed (nothing of it committed), so the
    // batch is to be written again in a transaction of its own, whose BEGIN cannot be had.
    const begins: string[] = [];
    let commits = 0;
    const { handler, store, heard } = setup((db) => ({
      begin: async () => {
        begins.push(`begin ${begins.length + 1}`);
        if (begins.length === 2) throw new Error('the store is out of reach');
        db.prepare('BEGIN IMMEDIATE').run();
        return undefined;
      },
      pipeline: { start: () => undefined, abandon: () => undefined },
      commit: async (commitNow) => {
        commits++;
        if (commits === 1) {
          db.prepare('ROLLBACK').run();
          throw new UnprotectedWriteFailed(new Error('duplicate key value'));
        }
        commitNow();
      },
    }));
    await expect(open(handler, 'a')).rejects.toThrow('the store is out of reach');
    expect(begins).toEqual(['begin 1', 'begin 2']);
    expect(store.readStream('account-a')).toEqual([]);
    expect(heard).toEqual([]);
    // Nothing was left half done: the next command opens the account afresh.
    await expect(open(handler, 'a')).resolves.toMatchObject({ version: 1 });
    expect(begins).toHaveLength(3);
    expect(heard).toEqual(['account-a']);
  });
});
