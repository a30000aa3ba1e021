import { describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { LEDGER_MAIN, eventually, keel, openLog, startDaemon } from '../../support/daemon.js';
import { LARGE_DEPOSIT } from '../../support/ledger/events.js';

const json = <T>(v: unknown) => v as T;

/**
 * `kill -9` ends the process, not the machine: the operating system's page cache survives it, so
 * these tests show that a crash of Keel loses no acknowledged command and leaves no batch half
 * written, whatever the sync level. What survives a power cut besides is the sync before the
 * answer (`--sync full`, the default): `test/unit/core/group-commit.test.ts` checks that no command
 * settles before its batch's sync, and `test/unit/core/unsynced.test.ts` the level each write runs
 * at.
 */
describe('durability, audit and sealing on the real daemon', () => {
  it('kill -9 while commands stream in: every acknowledged command survives, no batch is half written, the chain verifies, reactors resume', async () => {
    // Rate limits off: five writers on one token would spend their rounds on 429s, not writes.
    const d = await startDaemon({ entry: LEDGER_MAIN, args: ['--rate-limit', 'false'] });
    const token = d.bootstrap().runs.user_token;
    const acknowledged: { account: string; amount: number }[] = [];
    const accounts = ['k1', 'k2', 'k3', 'k4'];
    for (const a of accounts) {
      expect(
        (
          await httpRequest(d.url, 'POST', `/api/v2/ledger/${a}`, {
            token,
            body: { owner: a, pin: '0000' },
          })
        ).status,
      ).toBe(201);
    }
    // Four writers stream deposits; the daemon is killed while they run.
    let killed = false;
    const writer = async (account: string) => {
      for (let i = 0; !killed && i < 400; i++) {
        const amount = i % 3 === 0 ? LARGE_DEPOSIT + i : 1 + i;
        try {
          const r = await httpRequest(d.url, 'POST', `/api/v2/ledger/${account}/deposits`, {
            token,
            body: { amount },
          });
          if (r.status === 201) acknowledged.push({ account, amount });
        } catch {
          return; // connection refused or reset: the daemon is gone
        }
      }
    };
    // A fifth moves money between two accounts of its own, two streams in one command each.
    const FUNDS = 1_000_000;
    for (const a of ['src', 'dst']) {
      await httpRequest(d.url, 'POST', `/api/v2/ledger/${a}`, {
        token,
        body: { owner: a, pin: '0000' },
      });
    }
    await httpRequest(d.url, 'POST', '/api/v2/ledger/src/deposits', {
      token,
      body: { amount: FUNDS },
    });
    const transferred: number[] = [];
    const mover = async () => {
      for (let i = 1; !killed && i < 400; i++) {
        try {
          const r = await httpRequest(d.url, 'POST', '/api/v2/ledger/src/transfers', {
            token,
            body: { to: 'dst', amount: i },
          });
          if (r.status === 201) transferred.push(i);
        } catch {
          return;
        }
      }
    };
    const writers = [...accounts.map(writer), mover()];
    await eventually(async () => (acknowledged.length >= 60 ? true : undefined));
    await d.stop('SIGKILL');
    killed = true;
    await Promise.all(writers);

    // The stale lock of the killed process does not stop the restart.
    const again = await startDaemon({ dataDir: d.dataDir, entry: LEDGER_MAIN });
    try {
      for (const a of accounts) {
        const mine = acknowledged.filter((x) => x.account === a).map((x) => x.amount);
        const r = await httpRequest(again.url, 'GET', `/api/v2/ledger/${a}`, { token });
        const balance = json<{ data: { balance: number } }>(r.json).data.balance;
        // Every acknowledged deposit is there (at most one unacknowledged one more may be too).
        expect(balance).toBeGreaterThanOrEqual(mine.reduce((s, x) => s + x, 0));
      }
      // No transfer is half there: each withdrawal from src has its deposit into dst, written
      // by the same request; every acknowledged transfer is among them.
      const { db: log } = openLog(again.dataDir);
      try {
        const legs = log
          .prepare(
            `SELECT stream, type, CAST(json_extract(data, '$.amount') AS INTEGER) AS amount,
                    json_extract(metadata, '$.requestId') AS request
               FROM events WHERE stream IN ('account-src', 'account-dst')
                AND type IN ('FundsWithdrawn', 'FundsDeposited') ORDER BY position`,
          )
          .all() as { stream: string; type: string; amount: number; request: string }[];
        const out = legs.filter((l) => l.stream === 'account-src' && l.type === 'FundsWithdrawn');
        const into = legs.filter((l) => l.stream === 'account-dst');
        expect(legs.every((l) => typeof l.request === 'string')).toBe(true);
        expect(into.map((l) => [l.amount, l.request])).toEqual(
          out.map((l) => [l.amount, l.request]),
        );
        const moved = new Set(out.map((l) => l.amount));
        expect(transferred.filter((a) => !moved.has(a))).toEqual([]);
        expect(transferred.length).toBeGreaterThan(0);
        const balance = async (a: string) =>
          json<{ data: { balance: number } }>(
            (await httpRequest(again.url, 'GET', `/api/v2/ledger/${a}`, { token })).json,
          ).data.balance;
        expect((await balance('src')) + (await balance('dst'))).toBe(FUNDS);
      } finally {
        log.close();
      }
      // The flagging reactor catches up from its checkpoint: every large deposit flagged exactly once.
      const { db } = openLog(again.dataDir);
      try {
        const large = () =>
          (
            db
              .prepare(
                `SELECT count(*) AS n FROM events WHERE type = 'FundsDeposited' AND CAST(json_extract(data, '$.amount') AS INTEGER) >= ?`,
              )
              .get(LARGE_DEPOSIT) as { n: number }
          ).n;
        const flags = () =>
          (
            db
              .prepare(`SELECT count(*) AS n FROM events WHERE type = 'LargeDepositFlagged'`)
              .get() as { n: number }
          ).n;
        await eventually(async () => (flags() === large() ? true : undefined));
        const dupes = db
          .prepare(
            `SELECT json_extract(data, '$.position') AS p, count(*) AS n FROM events WHERE type = 'LargeDepositFlagged' GROUP BY p HAVING count(*) > 1`,
          )
          .all();
        expect(dupes).toEqual([]);
        const checkpoint = db
          .prepare(`SELECT position FROM checkpoints WHERE name = 'ledger-flagger'`)
          .get() as { position: number };
        expect(checkpoint.position).toBeGreaterThan(0);
      } finally {
        db.close();
      }
    } finally {
      await again.stop();
    }
    const verify = keel(['audit', 'verify', '--data', d.dataDir]);
    expect(verify.status).toBe(0);
    expect(verify.stdout).toMatch(/chain verified: \d+ events/);
  });

  it('a flipped byte in a stored event makes keel audit verify fail at that position', async () => {
    const d = await startDaemon({ entry: LEDGER_MAIN });
    const token = d.bootstrap().runs.user_token;
    await httpRequest(d.url, 'POST', '/api/v2/ledger/t1', {
      token,
      body: { owner: 'x', pin: '1' },
    });
    for (let i = 1; i <= 5; i++)
      await httpRequest(d.url, 'POST', '/api/v2/ledger/t1/deposits', {
        token,
        body: { amount: i },
      });
    await d.stop();
    expect(keel(['audit', 'verify', '--data', d.dataDir]).status).toBe(0);
    const { db, sqlite } = openLog(d.dataDir);
    const target = db
      .prepare(
        `SELECT position, data FROM events WHERE type = 'FundsDeposited' ORDER BY position LIMIT 1 OFFSET 2`,
      )
      .get() as {
      position: number;
      data: string;
    };
    const flipped = target.data.replace(/\d/, (c) => String((Number(c) + 1) % 10));
    db.prepare('UPDATE events SET data = ? WHERE position = ?').run(flipped, target.position);
    sqlite?.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const verify = keel(['audit', 'verify', '--data', d.dataDir]);
    expect(verify.status).toBe(1);
    expect(verify.stderr).toContain(`chain broken at position ${target.position}`);
  });
});
