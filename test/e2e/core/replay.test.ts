import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/core/database.js';
import { httpRequest } from '../../support/app.js';
import { LEDGER_MAIN, keel, startDaemon } from '../../support/daemon.js';

describe('keel replay on the real daemon', () => {
  it('keel replay rebuilds identical read models; --until builds the past into a new file', async () => {
    const d = await startDaemon({ entry: LEDGER_MAIN });
    const token = d.bootstrap().runs.user_token;
    await httpRequest(d.url, 'POST', '/api/v2/ledger/r1', {
      token,
      body: { owner: 'x', pin: '1' },
    });
    await httpRequest(d.url, 'POST', '/api/v2/ledger/r1/deposits', { token, body: { amount: 10 } });
    const db0 = openDatabase(join(d.dataDir, 'keel.sqlite'));
    const cutoff = (db0.prepare('SELECT max(time) AS t FROM events').get() as { t: string }).t;
    db0.close();
    await new Promise((r) => setTimeout(r, 5)); // the next event gets a later timestamp
    await httpRequest(d.url, 'POST', '/api/v2/ledger/r1/deposits', { token, body: { amount: 5 } });
    await d.stop();

    const dump = () => {
      const db = openDatabase(join(d.dataDir, 'keel.sqlite'));
      try {
        return JSON.stringify(
          [
            'ledger_accounts',
            'ledger_entries',
            'users',
            'auth_tokens',
            'secrets_tokens',
            'mounts',
            'schedule',
          ].map((t) => db.prepare(`SELECT * FROM ${t} ORDER BY 1`).all()),
        );
      } finally {
        db.close();
      }
    };
    const before = dump();
    const replay = keel(['replay', '--data', d.dataDir], {}, LEDGER_MAIN);
    expect(replay.status).toBe(0);
    expect(replay.stdout).toMatch(/rebuilt \d+ read models from \d+ events/);
    expect(dump()).toBe(before);

    const past = join(d.dataDir, 'past.sqlite');
    const r = keel(
      ['replay', '--data', d.dataDir, '--until', cutoff, '--into', past],
      {},
      LEDGER_MAIN,
    );
    expect(r.status).toBe(0);
    const pastDb = openDatabase(past);
    try {
      expect(pastDb.prepare(`SELECT count(*) AS n FROM events WHERE time > ?`).get(cutoff)).toEqual(
        { n: 0 },
      );
      expect(pastDb.prepare('SELECT balance FROM ledger_accounts').get()).toEqual({ balance: 10 });
    } finally {
      pastDb.close();
    }
    expect(
      keel(['replay', '--data', d.dataDir, '--until', 'yesterday-ish', '--into', past]).status,
    ).toBe(2);
  });
});
