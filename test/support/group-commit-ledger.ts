import fc from 'fast-check';
import { expect } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { CommandHandler } from '../../src/core/command-handler.js';
import { batchDurability, type Db } from '../../src/core/database.js';
import { EventStore } from '../../src/core/event-store.js';
import { systemMetadata, type StoredEvent } from '../../src/core/events.js';
import { Projections, type Projection } from '../../src/core/projections.js';
import { Sealer } from '../../src/core/seal.js';
import { testChain } from './chain.js';
import { accountDecider } from './ledger/context.js';
import type { LedgerEvent } from './ledger/events.js';

/**
 * Group commit against its definition (the model test on SQLite, the integration test on
 * PostgreSQL): commands submitted together, in any grouping into batches, leave the same log, the
 * same read models and the same answers as the same commands run one at a time, each awaited
 * before the next is sent. Refusals by the machine, refusals by a read model's constraint (at
 * write time, inside the batch) and all-or-nothing transfers across two streams are among them.
 */

export type Command =
  | { kind: 'open'; account: number; owner: number }
  | { kind: 'deposit'; account: number; amount: number }
  | { kind: 'withdraw'; account: number; amount: number }
  | { kind: 'close'; account: number }
  | { kind: 'transfer'; from: number; to: number; amount: number };

export const account = fc.integer({ min: 0, max: 3 });
export const amount = fc.integer({ min: 1, max: 100 });
export const command: fc.Arbitrary<Command> = fc.oneof(
  // Owners are few: a second account for one owner breaks the read model's UNIQUE constraint.
  fc.record({ kind: fc.constant('open' as const), account, owner: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('deposit' as const), account, amount }),
  fc.record({ kind: fc.constant('withdraw' as const), account, amount }),
  fc.record({ kind: fc.constant('close' as const), account }),
  fc.record({ kind: fc.constant('transfer' as const), from: account, to: account, amount }),
  fc.record({ kind: fc.constant('transfer' as const), from: account, to: account, amount }),
);

const sealer = new Sealer(Buffer.alloc(32, 5));
const pin = sealer.seal('0000');
const meta = systemMetadata('property');
const CHAIN_KEY = Buffer.alloc(32, 9);

/** The read model: balances, and one account per owner (a constraint only the database checks). */
export const accounts: Projection = {
  name: 'gc-accounts',
  version: 1,
  tables: ['gc_accounts'],
  events: [
    'AccountOpened',
    'FundsDeposited',
    'FundsWithdrawn',
    'AccountClosed',
  ] satisfies LedgerEvent['type'][],
  setup(db) {
    db.exec(
      'CREATE TABLE IF NOT EXISTS gc_accounts (id TEXT PRIMARY KEY, owner TEXT NOT NULL UNIQUE, balance INTEGER NOT NULL, status TEXT NOT NULL)',
    );
    const open = db.prepare("INSERT INTO gc_accounts VALUES (?, ?, 0, 'open')");
    const move = db.prepare('UPDATE gc_accounts SET balance = balance + ? WHERE id = ?');
    const close = db.prepare("UPDATE gc_accounts SET status = 'closed' WHERE id = ?");
    return (event: StoredEvent) => {
      const e = event as StoredEvent<LedgerEvent>;
      switch (e.type) {
        case 'AccountOpened':
          open.run(e.stream, e.data.owner);
          return;
        case 'FundsDeposited':
          move.run(e.data.amount, e.stream);
          return;
        case 'FundsWithdrawn':
          move.run(-e.data.amount, e.stream);
          return;
        case 'AccountClosed':
          close.run(e.stream);
          return;
        case 'StatementIssued':
        case 'LargeDepositFlagged':
          return;
      }
    };
  },
};

export interface Ledger<D extends Db = Db> {
  db: D;
  handler: CommandHandler;
  store: EventStore;
}

/** The ledger on `db`: the event store, the read model and a command handler with group commit. */
export function openLedger<D extends Db>(db: D, batchBudgetMs?: number): Ledger<D> {
  const clock = new ManualClock();
  const projections = new Projections(db, [accounts]);
  projections.open(() => []);
  const store = new EventStore(db, clock, testChain(db, CHAIN_KEY), (e) => projections.apply(e));
  return {
    db,
    store,
    handler: new CommandHandler(store, clock, batchDurability(db), { batchBudgetMs }),
  };
}

export const stream = (n: number) => `account-${n}`;

/** What one command does through the asynchronous path. */
export function submit(handler: CommandHandler, c: Command): Promise<unknown> {
  switch (c.kind) {
    case 'open':
      return handler.handle(
        stream(c.account),
        accountDecider,
        (): LedgerEvent[] => [
          { type: 'AccountOpened', data: { id: stream(c.account), owner: `o${c.owner}`, pin } },
        ],
        meta,
      );
    case 'deposit':
      return handler.handle(
        stream(c.account),
        accountDecider,
        (): LedgerEvent[] => [{ type: 'FundsDeposited', data: { amount: c.amount } }],
        meta,
      );
    case 'withdraw':
      return handler.handle(
        stream(c.account),
        accountDecider,
        (): LedgerEvent[] => [{ type: 'FundsWithdrawn', data: { amount: c.amount } }],
        meta,
      );
    case 'close':
      return handler.handle(
        stream(c.account),
        accountDecider,
        (): LedgerEvent[] => [{ type: 'AccountClosed', data: {} }],
        meta,
      );
    case 'transfer':
      // Two streams, all or nothing: a refused deposit undoes the withdrawal.
      return handler.atomically(() => {
        handler.handleSync(
          stream(c.from),
          accountDecider,
          (): LedgerEvent[] => [{ type: 'FundsWithdrawn', data: { amount: c.amount } }],
          meta,
        );
        handler.handleSync(
          stream(c.to),
          accountDecider,
          (): LedgerEvent[] => [{ type: 'FundsDeposited', data: { amount: c.amount } }],
          meta,
        );
      });
    default: {
      const never: never = c;
      throw new Error(`unknown command ${JSON.stringify(never)}`);
    }
  }
}

/** 'ok', or the name of the error's class. */
export type Outcome = string;

/**
 * The ledger's rules written out plainly, an oracle independent of machines, savepoints and
 * batches: which commands succeed, and the accounts they leave.
 */
export function model(script: readonly Command[]): {
  outcomes: boolean[];
  accounts: { id: string; owner: string; balance: number; status: string }[];
} {
  const acc = new Map<number, { owner: string; balance: number; status: string }>();
  const open = (n: number) => acc.get(n)?.status === 'open';
  const outcomes = script.map((c) => {
    switch (c.kind) {
      case 'open':
        if (acc.has(c.account) || [...acc.values()].some((a) => a.owner === `o${c.owner}`))
          return false;
        acc.set(c.account, { owner: `o${c.owner}`, balance: 0, status: 'open' });
        return true;
      case 'deposit':
        if (!open(c.account)) return false;
        acc.get(c.account)!.balance += c.amount;
        return true;
      case 'withdraw':
        if (!open(c.account) || acc.get(c.account)!.balance < c.amount) return false;
        acc.get(c.account)!.balance -= c.amount;
        return true;
      case 'close':
        if (!open(c.account) || acc.get(c.account)!.balance !== 0) return false;
        acc.get(c.account)!.status = 'closed';
        return true;
      case 'transfer':
        if (!open(c.from) || !open(c.to) || acc.get(c.from)!.balance < c.amount) return false;
        acc.get(c.from)!.balance -= c.amount;
        acc.get(c.to)!.balance += c.amount;
        return true;
      default: {
        const never: never = c;
        throw new Error(`unknown command ${JSON.stringify(never)}`);
      }
    }
  });
  return {
    outcomes,
    accounts: [...acc.entries()]
      .map(([n, a]) => ({ id: stream(n), ...a }))
      .sort((x, y) => (x.id < y.id ? -1 : 1)),
  };
}

export const outcomeOf = (p: Promise<unknown>): Promise<Outcome> =>
  p.then(
    () => 'ok',
    (err: unknown) => (err as Error).constructor.name,
  );

/** Everything that must agree: the log (every column) and the read model. */
export function snapshot(db: Db) {
  return {
    events: db.prepare('SELECT * FROM events ORDER BY position').all(),
    accounts: db.prepare('SELECT * FROM gc_accounts ORDER BY id').all(),
  };
}

export const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The commands of one run of the property: accounts opened and funded first, then `generated`. */
export function scriptOf(generated: readonly [Command, boolean][]): [Command, boolean][] {
  // Three accounts open with money first, so most commands have something to act on; the owners
  // are then all taken, so account 3 can never open (a constraint refusal) and a transfer to it
  // is refused after its withdrawal was written.
  return [
    [{ kind: 'open', account: 0, owner: 0 }, false],
    [{ kind: 'open', account: 1, owner: 1 }, false],
    [{ kind: 'open', account: 2, owner: 2 }, false],
    [{ kind: 'deposit', account: 0, amount: 150 }, false],
    [{ kind: 'deposit', account: 1, amount: 150 }, false],
    ...generated,
  ];
}

/** The generated part of a run, and a batch budget (0 splits after every command). */
export const runs = fc.tuple(
  fc.array(fc.tuple(command, fc.boolean()), { minLength: 1, maxLength: 40 }),
  fc.constantFrom(undefined, 0),
);

/**
 * One run of the property: the script one by one on `oneByOne`, then all at once (a turn of the
 * event loop where it says so) on `grouped`; answers, the oracle's outcomes and balances, and the
 * two stores' snapshots must agree.
 */
export async function checkGrouping(
  script: readonly [Command, boolean][],
  oneByOne: Ledger,
  grouped: Ledger,
): Promise<void> {
  const expected: Outcome[] = [];
  for (const [c] of script) expected.push(await outcomeOf(submit(oneByOne.handler, c)));
  // Sent without waiting for answers; `true` lets a turn of the event loop pass first, so the
  // commands fall into batches of every size.
  const answers: Promise<Outcome>[] = [];
  for (const [c, pause] of script) {
    if (pause) await turn();
    answers.push(outcomeOf(submit(grouped.handler, c)));
  }
  expect(await Promise.all(answers)).toEqual(expected);
  const oracle = model(script.map(([c]) => c));
  expect(expected.map((o) => o === 'ok')).toEqual(oracle.outcomes);
  expect(grouped.db.prepare('SELECT * FROM gc_accounts ORDER BY id').all()).toEqual(
    oracle.accounts,
  );
  await grouped.handler.drained();
  expect(snapshot(grouped.db)).toEqual(snapshot(oneByOne.db));
}
