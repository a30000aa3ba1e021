import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { legacyLink, type EventRow } from '../../../src/core/chain.js';
import { openDatabase, type Db } from '../../../src/core/database.js';
import { httpRequest } from '../../support/app.js';
import {
  LEDGER_MAIN,
  eventually,
  keel,
  startDaemon,
  type RunningDaemon,
} from '../../support/daemon.js';
import { LARGE_DEPOSIT } from '../../support/ledger/events.js';

/**
 * The attacks of issue 14 on the audit chain, played against the real daemon's data directory:
 * the SQLite file is changed directly, as someone with the file (but not the keyring) would.
 */

const sqlite = (d: RunningDaemon) => openDatabase(join(d.dataDir, 'keel.sqlite'));
const lastPosition = (db: Db) =>
  (db.prepare('SELECT max(position) AS p FROM events').get() as { p: number }).p;

/** A daemon that wrote `tokens` token events (policy `default`) and was stopped. */
async function loggedDaemon(tokens: number): Promise<RunningDaemon> {
  // The attacks do not depend on the sync mode; normal keeps the test quick.
  const d = await startDaemon({ env: { KEEL_SYNC: 'normal' } });
  const root = d.bootstrap().secrets.root_token;
  for (let i = 0; i < tokens; i++) {
    const r = await httpRequest(d.url, 'POST', '/v1/auth/token/create', {
      token: root,
      tokenHeader: 'x-vault-token',
      body: { policies: ['default'], display_name: `t${i}` },
    });
    expect(r.status).toBe(200);
  }
  expect(await d.stop()).toBe(0);
  return d;
}

/** What an attacker without the key can do: recompute the unkeyed SHA-256 chain from `from` on. */
function recomputeUnkeyed(db: Db, from: number): void {
  const rows = db.prepare('SELECT * FROM events WHERE position >= ? ORDER BY position').all(from);
  let prev =
    (db.prepare('SELECT hash FROM events WHERE position = ?').get(from - 1) as { hash: string })
      ?.hash ?? '0'.repeat(64);
  const update = db.prepare('UPDATE events SET hash = ? WHERE position = ?');
  for (const row of rows as EventRow[]) {
    prev = legacyLink(prev, row);
    update.run(prev, row.position);
  }
}

/** Remove every anchor kept beside the log (the table and the head file). */
function dropAnchors(d: RunningDaemon, db: Db): void {
  db.prepare('DELETE FROM audit_anchors').run();
  rmSync(join(d.dataDir, 'audit'), { recursive: true, force: true });
}

describe('the audit chain cannot be silently rewritten', () => {
  it('cutting events off the end fails keel audit verify and start-up, naming the position', async () => {
    const d = await loggedDaemon(30);
    const db = sqlite(d);
    const end = lastPosition(db);
    db.prepare('DELETE FROM events WHERE position > ?').run(end - 25);
    db.close();

    const verify = keel(['audit', 'verify', '--data', d.dataDir]);
    expect(verify.status).toBe(1);
    expect(verify.stderr).toContain(`chain broken at position ${end - 24}`);
    expect(verify.stderr).toContain('were removed');

    const serve = keel(['serve', '--data', d.dataDir, '--listen', '127.0.0.1:0']);
    expect(serve.status).toBe(2);
    expect(serve.stderr).toContain(
      `the event log ends at position ${end - 25} but it was anchored at position ${end}`,
    );
  });

  it('an edited event (default → root) with the unkeyed chain recomputed fails verify at that position', async () => {
    const d = await loggedDaemon(5);
    const db = sqlite(d);
    const target = db
      .prepare(
        `SELECT position, data FROM events WHERE data LIKE '%"policies":["default"]%' ORDER BY position DESC LIMIT 1`,
      )
      .get() as { position: number; data: string };
    db.prepare('UPDATE events SET data = ? WHERE position = ?').run(
      target.data.replace('"policies":["default"]', '"policies":["root"]'),
      target.position,
    );
    recomputeUnkeyed(db, target.position);
    // Even with every anchor gone, the keyed links do not match.
    dropAnchors(d, db);
    db.close();

    const verify = keel(['audit', 'verify', '--data', d.dataDir]);
    expect(verify.status).toBe(1);
    expect(verify.stderr).toContain(`chain broken at position ${target.position}`);
  });

  it('start-up refuses a log that ends before a reactor checkpoint, naming the reactor', async () => {
    // The ledger's flagging reactor acts on large deposits, as the runs reactors act on new runs.
    const d = await startDaemon({ entry: LEDGER_MAIN });
    const token = d.bootstrap().runs.user_token;
    expect(
      (
        await httpRequest(d.url, 'POST', '/api/v2/ledger/k1', {
          token,
          body: { owner: 'k1', pin: '0000' },
        })
      ).status,
    ).toBe(201);
    for (let i = 0; i < 3; i++) {
      const r = await httpRequest(d.url, 'POST', '/api/v2/ledger/k1/deposits', {
        token,
        body: { amount: LARGE_DEPOSIT + i },
      });
      expect(r.status).toBe(201);
    }
    await eventually(async () => {
      const db = sqlite(d);
      const n = (
        db.prepare(`SELECT count(*) AS n FROM events WHERE type = 'LargeDepositFlagged'`).get() as {
          n: number;
        }
      ).n;
      db.close();
      return n === 3 ? true : undefined;
    });
    expect(await d.stop()).toBe(0);
    const db = sqlite(d);
    const furthest = db
      .prepare('SELECT name, position FROM checkpoints ORDER BY position DESC LIMIT 1')
      .get() as { name: string; position: number } | undefined;
    expect(furthest?.position).toBeGreaterThan(1);
    db.prepare('DELETE FROM events WHERE position >= ?').run(furthest!.position);
    dropAnchors(d, db);
    db.close();

    const started = startDaemon({ dataDir: d.dataDir, entry: LEDGER_MAIN });
    await expect(started).rejects.toThrow(/reactor checkpoints are past it/);
    await expect(started).rejects.toThrow(new RegExp(`${furthest!.name} at ${furthest!.position}`));
  });

  it('a head kept by a witness catches a truncation that also removed every anchor', async () => {
    const d = await loggedDaemon(10);
    const head = keel(['audit', 'head', '--data', d.dataDir]);
    expect(head.status).toBe(0);
    const witness = join(mkdtempSync(join(tmpdir(), 'keel-witness-')), 'head.json');
    writeFileSync(witness, head.stdout);
    const signed = JSON.parse(head.stdout) as { position: number; signature: string };
    expect(signed.signature).toMatch(/^[0-9a-f]{64}$/);

    const db = sqlite(d);
    db.prepare('DELETE FROM events WHERE position > ?').run(signed.position - 5);
    db.prepare('DELETE FROM checkpoints').run();
    dropAnchors(d, db);
    db.close();
    expect(existsSync(join(d.dataDir, 'audit', 'head.json'))).toBe(false);
    // The tokens the cut events made are still in the read models, which no longer match the log.
    const leftOver = keel(['audit', 'verify', '--data', d.dataDir]);
    expect(leftOver.status).toBe(1);
    expect(leftOver.stderr).toMatch(/secrets_tokens .* is not in the log/);
    // An attacker who also removes those rows leaves nothing on the machine to notice.
    const again = sqlite(d);
    again
      .prepare(
        `DELETE FROM secrets_tokens WHERE accessor NOT IN
          (SELECT json_extract(data, '$.accessor') FROM events WHERE type = 'SecretsTokenCreated')`,
      )
      .run();
    again.close();

    expect(keel(['audit', 'verify', '--data', d.dataDir]).status).toBe(0);
    const checked = keel(['audit', 'verify', '--data', d.dataDir, '--witness', witness]);
    expect(checked.status).toBe(1);
    expect(checked.stderr).toContain(`chain broken at position ${signed.position - 4}`);
  });
});
