import Router from '@koa/router';
import type { Decider } from '../../../src/core/command-handler.js';
import { NotFoundError, ValidationError } from '../../../src/core/errors.js';
import type { AuditMetadata, StoredEvent } from '../../../src/core/events.js';
import { systemMetadata } from '../../../src/core/events.js';
import { machineDecider } from '../../../src/core/machine-decider.js';
import type { Projection } from '../../../src/core/projections.js';
import type { Reactor } from '../../../src/core/reactors.js';
import type { Timer } from '../../../src/core/schedule.js';
import { scheduleRows } from '../../../src/core/schedule.js';
import { statements } from '../../../src/core/sql.js';
import type { ContextModule, Core } from '../../../src/context.js';
import { runsMetadata } from '../../../src/runs/identity/index.js';
import type { LedgerEvent } from './events.js';
import { LARGE_DEPOSIT, STATEMENT_PERIOD_MS, accountStream, flagStream } from './events.js';
import { accountMachine } from './machine.js';

export const accountDecider = machineDecider(accountMachine);

const flagDecider: Decider<null, LedgerEvent> = { initialState: () => null, evolve: () => null };

const projection: Projection = {
  name: 'test-ledger',
  version: 1,
  tables: ['ledger_accounts', 'ledger_entries', 'ledger_flags'],
  events: [
    'AccountOpened',
    'FundsDeposited',
    'FundsWithdrawn',
    'StatementIssued',
    'AccountClosed',
    'LargeDepositFlagged',
  ] satisfies LedgerEvent['type'][],
  setup(db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ledger_accounts (id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL,
        balance INTEGER NOT NULL, statements INTEGER NOT NULL, pin_hmac TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ledger_entries (position INTEGER PRIMARY KEY, account TEXT NOT NULL,
        amount INTEGER NOT NULL, time TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ledger_flags (position INTEGER PRIMARY KEY, account TEXT NOT NULL, amount INTEGER NOT NULL);
    `);
    const schedule = scheduleRows(db, 'test-ledger');
    const open = db.prepare("INSERT INTO ledger_accounts VALUES (?, ?, 'open', 0, 0, ?)");
    const move = db.prepare('UPDATE ledger_accounts SET balance = balance + ? WHERE id = ?');
    const entry = db.prepare('INSERT INTO ledger_entries VALUES (?, ?, ?, ?)');
    const statement = db.prepare(
      'UPDATE ledger_accounts SET statements = statements + 1 WHERE id = ?',
    );
    const close = db.prepare("UPDATE ledger_accounts SET status = 'closed' WHERE id = ?");
    const flag = db.prepare('INSERT INTO ledger_flags VALUES (?, ?, ?)');
    const due = (id: string, from: string, period: number) =>
      schedule.put({
        key: `statement:${id}`,
        kind: 'ledger-statement',
        dueAt: new Date(Date.parse(from) + STATEMENT_PERIOD_MS).toISOString(),
        data: { id, period },
      });
    return (event) => {
      const e = event as StoredEvent<LedgerEvent>;
      const id = e.stream.slice('account-'.length);
      switch (e.type) {
        case 'AccountOpened':
          open.run(e.data.id, e.data.owner, e.data.pin.$hmac);
          due(id, e.time, 1);
          return;
        case 'FundsDeposited':
          move.run(e.data.amount, id);
          entry.run(e.position, id, e.data.amount, e.time);
          return;
        case 'FundsWithdrawn':
          move.run(-e.data.amount, id);
          entry.run(e.position, id, -e.data.amount, e.time);
          return;
        case 'StatementIssued':
          statement.run(id);
          due(id, e.time, e.data.period + 1);
          return;
        case 'AccountClosed':
          close.run(id);
          schedule.remove(`statement:${id}`);
          return;
        case 'LargeDepositFlagged':
          flag.run(e.data.position, e.data.account, e.data.amount);
          return;
        default:
          return;
      }
    };
  },
};

/** Commands of the test ledger, as a context would expose them. */
export function ledgerCommands(core: Core) {
  return {
    open: (id: string, owner: string, pin: string, meta: AuditMetadata) =>
      core.handler.handle(
        accountStream(id),
        accountDecider,
        () => [{ type: 'AccountOpened' as const, data: { id, owner, pin: core.sealer.seal(pin) } }],
        meta,
      ),
    deposit: (id: string, amount: number, meta: AuditMetadata) =>
      core.handler.handle(
        accountStream(id),
        accountDecider,
        () => [{ type: 'FundsDeposited' as const, data: { amount } }],
        meta,
      ),
    withdraw: (id: string, amount: number, meta: AuditMetadata) =>
      core.handler.handle(
        accountStream(id),
        accountDecider,
        () => [{ type: 'FundsWithdrawn' as const, data: { amount } }],
        meta,
      ),
    /** Two streams, all or nothing: a refused deposit undoes the withdrawal. */
    transfer: (from: string, to: string, amount: number, meta: AuditMetadata) =>
      core.handler.atomically(() => {
        core.handler.handleSync(
          accountStream(from),
          accountDecider,
          () => [{ type: 'FundsWithdrawn' as const, data: { amount } }],
          meta,
        );
        core.handler.handleSync(
          accountStream(to),
          accountDecider,
          () => [{ type: 'FundsDeposited' as const, data: { amount } }],
          meta,
        );
      }),
    close: (id: string, meta: AuditMetadata) =>
      core.handler.handle(
        accountStream(id),
        accountDecider,
        () => [{ type: 'AccountClosed' as const, data: {} }],
        meta,
      ),
  };
}

/**
 * The test ledger as a context: a projection, a reactor that flags large deposits, a timer that
 * issues statements, and routes under /api/v2/ledger for HTTP-level tests.
 */
export function ledgerContext(core: Core): ContextModule {
  const commands = ledgerCommands(core);
  const sql = statements(core.db);

  const flagger: Reactor = {
    name: 'ledger-flagger',
    types: ['FundsDeposited'],
    async react(event) {
      const e = event as StoredEvent<LedgerEvent>;
      if (e.type !== 'FundsDeposited' || e.data.amount < LARGE_DEPOSIT) return;
      const account = e.stream.slice('account-'.length);
      // At-least-once delivery: the flag stream remembers which positions it has seen.
      const seen = core.store
        .readStream(flagStream(account))
        .some((f) => (f.data as { position: number }).position === e.position);
      if (seen) return;
      await core.handler.handle(
        flagStream(account),
        flagDecider,
        () => [
          {
            type: 'LargeDepositFlagged' as const,
            data: { account, position: e.position, amount: e.data.amount },
          },
        ],
        systemMetadata('ledger-flagger'),
      );
    },
  };

  const statementTimer: Timer = {
    kind: 'ledger-statement',
    async fire(entry) {
      const { id, period } = entry.data as { id: string; period: number };
      await core.handler.handle(
        accountStream(id),
        accountDecider,
        () => [{ type: 'StatementIssued' as const, data: { period } }],
        systemMetadata('ledger-statements'),
      );
    },
  };

  const routes = new Router();
  const amountOf = (body: unknown): number => {
    const amount = (body as { amount?: unknown } | undefined)?.amount;
    if (typeof amount !== 'number' || !Number.isInteger(amount) || amount <= 0) {
      throw new ValidationError('amount must be a positive integer');
    }
    return amount;
  };
  routes.post('/ledger/:id', async (ctx) => {
    const body = ctx.request.body as { owner?: unknown; pin?: unknown } | undefined;
    if (typeof body?.owner !== 'string' || typeof body.pin !== 'string')
      throw new ValidationError('owner and pin are required');
    await commands.open(ctx.params.id!, body.owner, body.pin, runsMetadata(ctx));
    ctx.status = 201;
    ctx.body = { data: { id: ctx.params.id } };
  });
  routes.post('/ledger/:id/deposits', async (ctx) => {
    const { version } = await commands.deposit(
      ctx.params.id!,
      amountOf(ctx.request.body),
      runsMetadata(ctx),
    );
    ctx.status = 201;
    ctx.body = { data: { version } };
  });
  routes.post('/ledger/:id/withdrawals', async (ctx) => {
    const { version } = await commands.withdraw(
      ctx.params.id!,
      amountOf(ctx.request.body),
      runsMetadata(ctx),
    );
    ctx.status = 201;
    ctx.body = { data: { version } };
  });
  routes.post('/ledger/:id/transfers', async (ctx) => {
    const body = ctx.request.body as { to?: unknown } | undefined;
    if (typeof body?.to !== 'string') throw new ValidationError('to is required');
    await commands.transfer(ctx.params.id!, body.to, amountOf(body), runsMetadata(ctx));
    ctx.status = 201;
    ctx.body = { data: {} };
  });
  routes.get('/ledger/:id', (ctx) => {
    const row = sql<[string], Record<string, unknown>>(
      'SELECT * FROM ledger_accounts WHERE id = ?',
    ).get(ctx.params.id!);
    if (row === undefined) throw new NotFoundError(`account ${ctx.params.id} not found`);
    ctx.body = { data: row };
  });

  return {
    name: 'test-ledger',
    projections: [projection],
    reactors: [flagger],
    timers: [statementTimer],
    runsRoutes: routes,
  };
}
