import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { CommandHandler } from '../../../src/core/command-handler.js';
import { testChain } from '../../support/chain.js';
import { openDatabase } from '../../../src/core/database.js';
import { IllegalTransitionError } from '../../../src/core/errors.js';
import { EventStore } from '../../../src/core/event-store.js';
import { systemMetadata } from '../../../src/core/events.js';
import { ReadMemo } from '../../../src/core/read-memo.js';
import { Sealer } from '../../../src/core/seal.js';
import { accountDecider } from '../../support/ledger/context.js';
import type { LedgerEvent } from '../../support/ledger/events.js';

const meta = systemMetadata('test');
const sealer = new Sealer(Buffer.alloc(32, 3));

function setup() {
  const db = openDatabase(':memory:');
  const store = new EventStore(db, new ManualClock(), testChain(db));
  return { store, handler: new CommandHandler(store, new ManualClock()) };
}

const opened = () => ({
  type: 'AccountOpened' as const,
  data: { id: 'a', owner: 'o', pin: sealer.seal('1234') },
});

/** A decision to withdraw `amount` that notes the balance it was decided on. */
const withdrawSeeing =
  (seen: number[], amount: number) => (state: { context: { balance: number } }) => {
    seen.push(state.context.balance);
    return [{ type: 'FundsWithdrawn' as const, data: { amount } }];
  };

describe('machine decider + command handler', () => {
  it('folds a stream through the machine', () => {
    const { handler } = setup();
    handler.handleSync('account-a', accountDecider, () => [opened()], meta);
    const r = handler.handleSync(
      'account-a',
      accountDecider,
      () => [{ type: 'FundsDeposited' as const, data: { amount: 5 } }],
      meta,
    );
    expect(r.state.value).toBe('open');
    expect(r.state.context.balance).toBe(5);
    expect(r.version).toBe(2);
  });

  it('refuses an event the machine does not allow, naming the state, and appends nothing', () => {
    const { handler, store } = setup();
    expect(() =>
      handler.handleSync(
        'account-a',
        accountDecider,
        () => [{ type: 'FundsDeposited' as const, data: { amount: 5 } }],
        meta,
      ),
    ).toThrow(new IllegalTransitionError('account-a', 'none', 'FundsDeposited'));
    handler.handleSync('account-a', accountDecider, () => [opened()], meta);
    expect(() =>
      handler.handleSync(
        'account-a',
        accountDecider,
        () => [{ type: 'FundsWithdrawn' as const, data: { amount: 1 } }],
        meta,
      ),
    ).toThrow(IllegalTransitionError);
    expect(store.lastPosition()).toBe(1);
  });

  it('checks every proposed event against the state the earlier ones lead to', () => {
    const { handler, store } = setup();
    handler.handleSync('account-a', accountDecider, () => [opened()], meta);
    const ok = handler.handleSync(
      'account-a',
      accountDecider,
      (): LedgerEvent[] => [
        { type: 'FundsDeposited' as const, data: { amount: 5 } },
        { type: 'FundsWithdrawn' as const, data: { amount: 5 } },
        { type: 'AccountClosed' as const, data: {} },
      ],
      meta,
    );
    expect(ok.state.value).toBe('closed');
    expect(() =>
      handler.handleSync(
        'account-a',
        accountDecider,
        () => [{ type: 'FundsDeposited' as const, data: { amount: 1 } }],
        meta,
      ),
    ).toThrow(/is closed/);
    expect(store.lastPosition()).toBe(4);
  });

  it('refolds when another writer moved the stream (the cache is not the truth)', () => {
    const { handler, store } = setup();
    handler.handleSync('account-a', accountDecider, () => [opened()], meta);
    store.append('account-a', [{ type: 'FundsDeposited', data: { amount: 7 } }], {
      expectedVersion: 1,
      metadata: meta,
    });
    expect(handler.load('account-a', accountDecider).state.context.balance).toBe(7);
  });

  it('decides again on a fresh fold when another writer moved the stream after it was cached', () => {
    const { handler, store } = setup();
    handler.handleSync('account-a', accountDecider, () => [opened()], meta);
    handler.handleSync(
      'account-a',
      accountDecider,
      () => [{ type: 'FundsDeposited' as const, data: { amount: 3 } }],
      meta,
    );
    store.append('account-a', [{ type: 'FundsDeposited', data: { amount: 4 } }], {
      expectedVersion: 2,
      metadata: meta,
    });
    const seen: number[] = [];
    const r = handler.handleSync('account-a', accountDecider, withdrawSeeing(seen, 7), meta);
    expect(seen).toEqual([3, 7]);
    expect(r.state.context.balance).toBe(0);
    expect(r.version).toBe(4);
  });

  it("carries a remembered fold forward by another process's appends as its next batch begins, without reading the stream", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'keel-folds-')), 'k.sqlite');
    const [a, b] = [openDatabase(file), openDatabase(file)];
    const key = Buffer.alloc(32, 9);
    const other = new EventStore(a, new ManualClock(), testChain(a, key));
    const store = new EventStore(b, new ManualClock(), testChain(b, key));
    const handler = new CommandHandler(store, new ManualClock());
    try {
      await handler.handle('account-a', accountDecider, () => [opened()], meta);
      const deposit = (amount: number) => ({ type: 'FundsDeposited' as const, data: { amount } });
      other.append('account-a', [deposit(3), deposit(4)], { expectedVersion: 1, metadata: meta });
      let reads = 0;
      const readStream = store.readStream.bind(store);
      store.readStream = (stream) => {
        reads++;
        return readStream(stream);
      };
      const seen: number[] = [];
      const r = await handler.handle('account-a', accountDecider, withdrawSeeing(seen, 7), meta);
      expect(seen).toEqual([7]);
      expect(reads).toBe(0);
      expect(r.version).toBe(4);
      expect(handler.load('account-a', accountDecider).state.context.balance).toBe(0);
    } finally {
      await handler.close();
      a.close();
      b.close();
    }
  });

  it('keeps what a batch reads before it forgets anything, though the batch before forgot and nothing was read outside one since', async () => {
    const { store, handler } = setup();
    const db = store.db;
    db.exec(
      "CREATE TABLE config (k TEXT PRIMARY KEY, v TEXT); INSERT INTO config VALUES ('c', 'x')",
    );
    const memo = new ReadMemo(db);
    let reads = 0;
    const config = () =>
      memo.get('c', () => {
        reads += 1;
        return db.prepare<[], { v: string }>("SELECT v FROM config WHERE k = 'c'").get()!.v;
      });
    // A batch that changes a row before it reads: what it reads may be its own write, not kept.
    await handler.atomically(() => {
      memo.forget('row-0');
      config();
    });
    expect(reads).toBe(1);
    // Then each command reads the configuration and changes another row (as a role write does):
    // one batch after another, every read inside one.
    const command = (n: number) =>
      handler.atomically(() => {
        config();
        memo.forget(`row-${n}`);
      });
    await command(1);
    await command(2);
    await command(3);
    expect(reads).toBe(2);
    await handler.close();
  });

  it('folds from a seed a read model holds, reading only the events after it', () => {
    const { store, handler } = setup();
    handler.handleSync('account-a', accountDecider, () => [opened()], meta);
    for (const amount of [5, 7])
      handler.handleSync(
        'account-a',
        accountDecider,
        () => [{ type: 'FundsDeposited' as const, data: { amount } }],
        meta,
      );
    // The fold at version 2, as a read model kept in the same transactions would hold it.
    let atTwo = accountDecider.initialState();
    for (const e of store.readStream('account-a').slice(0, 2))
      atTwo = accountDecider.evolve(atTwo, e as Parameters<typeof accountDecider.evolve>[1]);
    const full = new CommandHandler(store, new ManualClock()).load('account-a', accountDecider);
    const cold = new CommandHandler(store, new ManualClock());
    const whole = vi.spyOn(store, 'readStream');
    const after = vi.spyOn(store, 'readStreamAfter');
    const loaded = cold.load('account-a', accountDecider, { state: atTwo, version: 2 });
    expect(whole).not.toHaveBeenCalled();
    expect(after).toHaveBeenCalledWith('account-a', 2);
    expect(loaded.version).toBe(3);
    expect(loaded.state.context.balance).toBe(12);
    expect(loaded).toEqual(full);
    // A decision on a cold fold uses the seed the same way.
    const seen: number[] = [];
    const decided = new CommandHandler(store, new ManualClock()).handleSync(
      'account-a',
      accountDecider,
      withdrawSeeing(seen, 2),
      meta,
      { seed: { state: atTwo, version: 2 } },
    );
    expect(seen).toEqual([12]);
    expect(decided.version).toBe(4);
    expect(whole).not.toHaveBeenCalled();
  });

  it('reads the stream whole when a seed is past its end', () => {
    const { store, handler } = setup();
    handler.handleSync('account-a', accountDecider, () => [opened()], meta);
    const cold = new CommandHandler(store, new ManualClock());
    const whole = vi.spyOn(store, 'readStream');
    const loaded = cold.load('account-a', accountDecider, {
      state: accountDecider.initialState(),
      version: 9,
    });
    expect(whole).toHaveBeenCalledWith('account-a');
    expect(loaded.version).toBe(1);
    expect(loaded.state.value).toBe('open');
  });

  it('takes a new stream to be empty without reading it', () => {
    const { handler, store } = setup();
    let reads = 0;
    const readStream = store.readStream.bind(store);
    store.readStream = (stream) => {
      reads += 1;
      return readStream(stream);
    };
    const r = handler.handleSync('account-a', accountDecider, () => [opened()], meta, {
      newStream: true,
    });
    expect(reads).toBe(0);
    expect(r.version).toBe(1);
    expect(r.state.value).toBe('open');
  });

  it('decides on the stored stream when one said to be new exists, and appends nothing it refuses', () => {
    const { handler, store } = setup();
    new CommandHandler(store, new ManualClock()).handleSync(
      'account-a',
      accountDecider,
      () => [opened()],
      meta,
    );
    const seen: string[] = [];
    const open = () =>
      handler.handleSync(
        'account-a',
        accountDecider,
        (state) => {
          seen.push(String(state.value));
          return [opened()];
        },
        meta,
        { newStream: true },
      );
    expect(open).toThrow(new IllegalTransitionError('account-a', 'open', 'AccountOpened'));
    expect(seen).toEqual(['none', 'open']);
    expect(store.lastPosition()).toBe(1);
  });

  it('hands no events to the store when the decision is empty', () => {
    const { handler, store } = setup();
    const r = handler.handleSync('account-a', accountDecider, () => [], meta);
    expect(r.events).toEqual([]);
    expect(store.lastPosition()).toBe(0);
  });
});
