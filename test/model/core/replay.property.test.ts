import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.js';
import { testConfig } from '../../../src/config.js';
import { ManualClock } from '../../../src/core/clock.js';
import { IllegalTransitionError } from '../../../src/core/errors.js';
import { systemMetadata } from '../../../src/core/events.js';
import { sequentialIds } from '../../../src/core/ids.js';
import { silentLogger } from '../../../src/core/logger.js';
import { TEST_SEAL_KEY } from '../../support/app.js';
import { ledgerCommands, ledgerContext } from '../../support/ledger/context.js';
import { STATEMENT_PERIOD_MS } from '../../support/ledger/events.js';

type Step =
  | { kind: 'open'; account: number }
  | { kind: 'deposit'; account: number; amount: number }
  | { kind: 'withdraw'; account: number; amount: number }
  | { kind: 'close'; account: number }
  | { kind: 'wait'; ms: number };

const account = fc.integer({ min: 0, max: 3 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('open' as const), account }),
  fc.record({
    kind: fc.constant('deposit' as const),
    account,
    amount: fc.integer({ min: 1, max: 200 }),
  }),
  fc.record({
    kind: fc.constant('withdraw' as const),
    account,
    amount: fc.integer({ min: 1, max: 200 }),
  }),
  fc.record({ kind: fc.constant('close' as const), account }),
  fc.record({
    kind: fc.constant('wait' as const),
    ms: fc.integer({ min: 0, max: 2 * STATEMENT_PERIOD_MS }),
  }),
);

/** What the machine allows, written independently of it. */
interface Model {
  status: 'none' | 'open' | 'closed';
  balance: number;
}

const DAY = 24 * 3600 * 1000;
const always: Step[] = [
  { kind: 'open', account: 0 },
  { kind: 'deposit', account: 0, amount: 150 },
  { kind: 'wait', ms: 31 * DAY },
  { kind: 'deposit', account: 0, amount: 20 },
  { kind: 'withdraw', account: 0, amount: 500 },
  { kind: 'withdraw', account: 0, amount: 170 },
  { kind: 'close', account: 0 },
  { kind: 'open', account: 1 },
  { kind: 'deposit', account: 1, amount: 120 },
  { kind: 'deposit', account: 2, amount: 120 },
];

describe('replay reproduces the read models', () => {
  const seen = { flags: 0, statements: 0, schedule: 0 };
  it('random command sequences: each succeeds iff allowed; rebuild gives byte-identical read models, twice', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 40 }), async (steps) => {
        const clock = new ManualClock('2026-01-01T00:00:00.000Z');
        const app = createApp(testConfig('/tmp'), {
          clock,
          ids: sequentialIds(),
          logger: silentLogger(),
          sealKey: TEST_SEAL_KEY,
          databasePath: ':memory:',
          extraContexts: (core) => [ledgerContext(core)],
        });
        const commands = ledgerCommands(app.core);
        const meta = systemMetadata('property');
        const model = new Map<number, Model>();
        try {
          for (const s of steps) {
            if (s.kind === 'wait') {
              clock.advance(s.ms);
              await app.settle();
              continue;
            }
            const m = model.get(s.account) ?? { status: 'none', balance: 0 };
            const id = `acct${s.account}`;
            const allowed =
              s.kind === 'open'
                ? m.status === 'none'
                : s.kind === 'deposit'
                  ? m.status === 'open'
                  : s.kind === 'withdraw'
                    ? m.status === 'open' && s.amount <= m.balance
                    : m.status === 'open' && m.balance === 0;
            const before = app.core.store.lastPosition();
            const run = () => {
              switch (s.kind) {
                case 'open':
                  return commands.open(id, `owner${s.account}`, `pin-${s.account}`, meta);
                case 'deposit':
                  return commands.deposit(id, s.amount, meta);
                case 'withdraw':
                  return commands.withdraw(id, s.amount, meta);
                case 'close':
                  return commands.close(id, meta);
              }
            };
            if (allowed) {
              await run();
              if (s.kind === 'open') m.status = 'open';
              if (s.kind === 'deposit') m.balance += s.amount;
              if (s.kind === 'withdraw') m.balance -= s.amount;
              if (s.kind === 'close') m.status = 'closed';
            } else {
              await expect(run()).rejects.toThrow(IllegalTransitionError);
              expect(app.core.store.lastPosition()).toBe(before);
            }
            model.set(s.account, m);
            await app.settle();
          }
          const dump = app.projections.dump();
          seen.flags += dump.ledger_flags?.length ?? 0;
          seen.schedule += dump.schedule?.length ?? 0;
          seen.statements += (dump.ledger_accounts ?? []).reduce(
            (n: number, r) => n + (r as { statements: number }).statements,
            0,
          );
          const live = JSON.stringify(dump);
          app.projections.rebuildAll((after, limit) => app.core.store.readAll(after, limit));
          const once = JSON.stringify(app.projections.dump());
          app.projections.rebuildAll((after, limit) => app.core.store.readAll(after, limit));
          const twice = JSON.stringify(app.projections.dump());
          expect(once).toBe(live);
          expect(twice).toBe(live);
          for (const [n, m] of model) {
            const row = app.core.db
              .prepare('SELECT balance, status FROM ledger_accounts WHERE id = ?')
              .get(`acct${n}`);
            if (m.status === 'none') expect(row).toBeUndefined();
            else expect(row).toEqual({ balance: m.balance, status: m.status });
          }
        } finally {
          await app.close();
        }
      }),
      // The first example always runs: it surely exercises the reactor, a timer and the schedule.
      { numRuns: 60, examples: [[always]] },
    );
    // The sequences really exercised the reactor, the timers and the schedule read model.
    expect(seen.flags).toBeGreaterThan(0);
    expect(seen.statements).toBeGreaterThan(0);
    expect(seen.schedule).toBeGreaterThan(0);
  });
});
