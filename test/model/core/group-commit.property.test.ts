import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openDatabase, type SqliteDb } from '../../../src/core/database.js';
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

// Group commit against its definition on SQLite (test/support/group-commit-ledger.ts; the same
// property runs on PostgreSQL in test/integration/store/group-commit.property.test.ts).

const ledgerIn = (
  dir: string,
  name: string,
  batchBudgetMs?: number,
): Ledger<SqliteDb> & { path: string } => {
  const path = join(dir, `${name}.sqlite`);
  return { ...openLedger(openDatabase(path), batchBudgetMs), path };
};

describe('group commit', () => {
  it('any grouping of concurrent commands into batches equals running them one by one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-group-commit-'));
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(runs, async ([generated, budget]) => {
          run++;
          const oneByOne = ledgerIn(dir, `serial-${run}`);
          const grouped = ledgerIn(dir, `grouped-${run}`, budget);
          try {
            await checkGrouping(scriptOf(generated), oneByOne, grouped);
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
        }),
        { numRuns: 60 },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('undoes every write of a command a later part of it refused, and only those', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-group-commit-'));
    try {
      const ledger = ledgerIn(dir, 'transfer');
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
      const ledger = ledgerIn(dir, 'announce');
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
