import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { CommandHandler } from '../../../src/core/command-handler.js';
import { batchDurability, openDatabase, type SqliteDb } from '../../../src/core/database.js';
import { EventStore } from '../../../src/core/event-store.js';
import { systemMetadata, type StoredEvent } from '../../../src/core/events.js';
import { Projections, type Projection } from '../../../src/core/projections.js';
import { Sealer } from '../../../src/core/seal.js';
import { testChain } from '../../support/chain.js';
import { accountDecider } from '../../support/ledger/context.js';
import type { LedgerEvent } from '../../support/ledger/events.js';

/**
 * Group commit against its definition: commands submitted together, in any grouping into
 * batches, leave the same log, the same read models and the same answers as the same commands run
 * one at a time, each awaited before the next is sent. Refusals by the machine, refusals by a read
 * model's constraint (at write time, inside the batch) and all-or-nothing transfers across two
 * streams are among them.
 */

type Command =
  | { kind: 'open'; account: number; owner: number }
  | { kind: 'deposit'; account: number; amount: number }
  | { kind: 'withdraw'; account: number; amount: number }
  | { kind: 'close'; account: number }
  | { kind: 'transfer'; from: number; to: number; amount: number };

const account = fc.integer({ min: 0, max: 3 });
const amount = fc.integer({ min: 1, max: 100 });
const command: fc.Arbitrary<Command> = fc.oneof(
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
const accounts: Projection = {
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

interface Ledger {
  db: SqliteDb;
  handler: CommandHandler;
  store: EventStore;
  path: string;
}

function openLedger(dir: string, name: string, batchBudgetMs?: number): Ledger {
  const path = join(dir, `${name}.sqlite`);
  const db = openDatabase(path);
  const clock = new ManualClock();
  const projections = new Projections(db, [accounts]);
  projections.open(() => []);
  const store = new EventStore(db, clock, testChain(db, CHAIN_KEY), (e) => projections.apply(e));
  return {
    db,
    store,
    path,
    handler: new CommandHandler(store, clock, batchDurability(db), { batchBudgetMs }),
  };
}

const stream = (n: number) => `account-${n}`;

/** What one command does through the asynchronous path. */
function submit(handler: CommandHandler, c: Command): Promise<unknown> {
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
type Outcome = string;

/**
 * The ledger's rules written out plainly, an oracle independent of machines, savepoints and
 * batches: which commands succeed, and the accounts they leave.
 */
function model(script: readonly Command[]): {
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

const outcomeOf = (p: Promise<unknown>): Promise<Outcome> =>
  p.then(
    () => 'ok',
    (err: unknown) => (err as Error).constructor.name,
  );

/** Everything that must agree: the log (every column) and the read model. */
function snapshot(db: SqliteDb) {
  return {
    events: db.prepare('SELECT * FROM events ORDER BY position').all(),
    accounts: db.prepare('SELECT * FROM gc_accounts ORDER BY id').all(),
  };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('group commit', () => {
  it('any grouping of concurrent commands into batches equals running them one by one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-group-commit-'));
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(command, fc.boolean()), { minLength: 1, maxLength: 40 }),
          // A batch past its time budget leaves the rest to the next: 0 splits after every command.
          fc.constantFrom(undefined, 0),
          async (generated, budget) => {
            // Three accounts open with money first, so most commands have something to act on;
            // the owners are then all taken, so account 3 can never open (a constraint refusal)
            // and a transfer to it is refused after its withdrawal was written.
            const script: [Command, boolean][] = [
              [{ kind: 'open', account: 0, owner: 0 }, false],
              [{ kind: 'open', account: 1, owner: 1 }, false],
              [{ kind: 'open', account: 2, owner: 2 }, false],
              [{ kind: 'deposit', account: 0, amount: 150 }, false],
              [{ kind: 'deposit', account: 1, amount: 150 }, false],
              ...generated,
            ];
            run++;
            const oneByOne = openLedger(dir, `serial-${run}`);
            const grouped = openLedger(dir, `grouped-${run}`, budget);
            try {
              const expected: Outcome[] = [];
              for (const [c] of script) expected.push(await outcomeOf(submit(oneByOne.handler, c)));

              // Sent without waiting for answers; `true` lets a turn of the event loop pass first,
              // so the commands fall into batches of every size.
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

              // And the same on disk, read by a connection of its own.
              await grouped.handler.close();
              grouped.db.close();
              const reopened = openDatabase(grouped.path);
              try {
                expect(snapshot(reopened)).toEqual(snapshot(oneByOne.db));
              } finally {
                reopened.close();
              }
            } finally {
              await oneByOne.handler.close();
              oneByOne.db.close();
              if (grouped.db.open) grouped.db.close();
            }
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('undoes every write of a command a later part of it refused, and only those', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-group-commit-'));
    try {
      const ledger = openLedger(dir, 'transfer');
      const answers = [
        submit(ledger.handler, { kind: 'open', account: 0, owner: 0 }),
        submit(ledger.handler, { kind: 'deposit', account: 0, amount: 10 }),
        // Account 1 is not open: the deposit is refused after the withdrawal was written.
        submit(ledger.handler, { kind: 'transfer', from: 0, to: 1, amount: 4 }),
        submit(ledger.handler, { kind: 'deposit', account: 0, amount: 1 }),
      ].map(outcomeOf);
      expect(await Promise.all(answers)).toEqual(['ok', 'ok', 'IllegalTransitionError', 'ok']);
      expect(ledger.db.prepare('SELECT id, balance FROM gc_accounts').all()).toEqual([
        { id: 'account-0', balance: 11 },
      ]);
      expect(ledger.store.lastPosition()).toBe(3);
      await ledger.handler.close();
      ledger.db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('announces a batch to listeners only once it is durable, and nothing a savepoint undid', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-group-commit-'));
    try {
      const ledger = openLedger(dir, 'announce');
      const seen: string[] = [];
      ledger.store.onAppended((events) => seen.push(...events.map((e) => `${e.stream}:${e.type}`)));
      const a = submit(ledger.handler, { kind: 'open', account: 0, owner: 0 });
      // The same owner again: the read model's constraint refuses it inside the batch.
      const b = outcomeOf(submit(ledger.handler, { kind: 'open', account: 1, owner: 0 }));
      const c = submit(ledger.handler, { kind: 'deposit', account: 0, amount: 5 });
      expect(seen).toEqual([]);
      await a;
      expect(await b).not.toBe('ok');
      await c;
      expect(seen).toEqual(['account-0:AccountOpened', 'account-0:FundsDeposited']);
      await ledger.handler.close();
      ledger.db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
