import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../../src/core/database.js';
import { PostgresDatabase } from '../../../src/core/store/postgres.js';
import {
  checkGrouping,
  openLedger,
  outcomeOf,
  runs,
  scriptOf,
  snapshot,
  submit,
  type Ledger,
} from '../../support/group-commit-ledger.js';
import { freshDatabase } from '../../support/store.js';

// Runs in the `integration-pg` project only: group commit against its definition on PostgreSQL,
// where a batch's writes go through libpq's pipeline without waiting for their answers (ADR 0106):
// a write refused by a read model's constraint is found at the next read or with the batch's
// COMMIT, and the batch is then written again with every statement answered in turn.

/**
 * A ledger on a database of its own: `fresh` (made and dropped with it), or one `emptied` for it
 * (a property's runs share their databases: creating one per run made the property slow enough
 * to time out on a busy machine).
 */
function ledgerOn(
  batchBudgetMs?: number,
  database: { url: string; drop(): void } = freshDatabase(),
  keep = false,
): Ledger<PostgresDatabase> & { done(): Promise<void> } {
  const db = new PostgresDatabase(database.url);
  if (keep) db.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
  migrate(db);
  const ledger = openLedger(db, batchBudgetMs);
  return {
    ...ledger,
    async done() {
      await ledger.handler.close();
      if (ledger.db.open) ledger.db.close();
      if (!keep) database.drop();
    },
  };
}

describe('group commit on PostgreSQL', () => {
  it('any grouping of concurrent commands into batches equals running them one by one', async () => {
    const databases = [freshDatabase(), freshDatabase()] as const;
    try {
      await fc.assert(
        fc.asyncProperty(runs, async ([generated, budget]) => {
          const oneByOne = ledgerOn(undefined, databases[0], true);
          const grouped = ledgerOn(budget, databases[1], true);
          try {
            await checkGrouping(scriptOf(generated), oneByOne, grouped);
          } finally {
            await oneByOne.done();
            await grouped.done();
          }
        }),
        { numRuns: 25 },
      );
    } finally {
      for (const database of databases) database.drop();
    }
    // 25 runs of up to 80 commands on a real server: a bound on a hang, not a wait.
  }, 180_000);

  it('a constraint a pipelined write breaks refuses that command alone', async () => {
    const ledger = ledgerOn();
    try {
      const answers = [
        submit(ledger.handler, { kind: 'open', account: 0, owner: 0 }),
        submit(ledger.handler, { kind: 'deposit', account: 0, amount: 10 }),
        // The same owner: the read model's UNIQUE constraint refuses it inside the batch.
        submit(ledger.handler, { kind: 'open', account: 1, owner: 0 }),
        submit(ledger.handler, { kind: 'deposit', account: 0, amount: 1 }),
        // Account 1 is not open: the deposit is refused after the withdrawal was written.
        submit(ledger.handler, { kind: 'transfer', from: 0, to: 1, amount: 4 }),
      ].map(outcomeOf);
      const outcomes = await Promise.all(answers);
      expect(outcomes.filter((o) => o === 'ok')).toHaveLength(3);
      expect(outcomes[2]).not.toBe('ok');
      expect(outcomes[4]).toBe('IllegalTransitionError');
      expect(ledger.db.prepare('SELECT id, balance FROM gc_accounts').all()).toEqual([
        { id: 'account-0', balance: 11 },
      ]);
      expect(snapshot(ledger.db).events).toHaveLength(3);
    } finally {
      await ledger.done();
    }
  });

  it("a write refused after the batch's last read is found with its COMMIT, and refuses its command alone", async () => {
    const ledger = ledgerOn();
    try {
      // Nothing reads after the second open: its refused write is answered with the COMMIT,
      // which then commits nothing; the batch is written again, one statement at a time.
      const answers = [
        submit(ledger.handler, { kind: 'open', account: 0, owner: 0 }),
        submit(ledger.handler, { kind: 'open', account: 1, owner: 0 }),
      ].map(outcomeOf);
      const outcomes = await Promise.all(answers);
      expect(outcomes[0]).toBe('ok');
      expect(outcomes[1]).not.toBe('ok');
      expect(ledger.db.prepare('SELECT id, balance FROM gc_accounts').all()).toEqual([
        { id: 'account-0', balance: 0 },
      ]);
      expect(snapshot(ledger.db).events).toHaveLength(1);
      // The next batch begins where the log ends.
      expect(
        await outcomeOf(submit(ledger.handler, { kind: 'deposit', account: 0, amount: 5 })),
      ).toBe('ok');
      expect(snapshot(ledger.db).events).toHaveLength(2);
    } finally {
      await ledger.done();
    }
  });
});
