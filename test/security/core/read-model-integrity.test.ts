import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../src/core/database.js';
import { keel, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { raw, tokenWithPolicy } from '../support.js';

/**
 * Issue 24, finding 4: someone who can write `keel.sqlite` but does not hold the seal key (here in
 * KEEL_SEAL_KEY, not in the data directory) edits a read model that authorization or issuance
 * reads while the daemon is stopped. The log still says otherwise, so start-up refuses to serve
 * and `keel audit verify` fails, both naming the row; nothing the edited row says is granted.
 */

const env = { KEEL_SYNC: 'normal', KEEL_SEAL_KEY: '5e'.repeat(32) };
const sqlite = (d: RunningDaemon): Db => openDatabase(join(d.dataDir, 'keel.sqlite'));

const WEAK = 'path "sys/mounts" { capabilities = ["read"] }';
const STRONG = 'path "*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }';

interface Setup {
  d: RunningDaemon;
  root: string;
  weak: string;
}

/** A daemon with a weak token (it cannot list policies), stopped cleanly. */
async function stoppedWithWeakToken(): Promise<Setup> {
  const d = await startDaemon({ env });
  const root = d.bootstrap().secrets.root_token;
  const weak = await tokenWithPolicy(d.url, root, 'weak', WEAK);
  // The strong policy exists only so that its row's shape can be copied, as an attacker would.
  const w = await raw(d.url, 'PUT', '/v1/sys/policies/acl/strong', {
    token: root,
    body: { policy: STRONG },
  });
  expect(w.status).toBe(204);
  expect((await raw(d.url, 'LIST', '/v1/sys/policies/acl', { token: weak })).status).toBe(403);
  expect(await d.stop()).toBe(0);
  return { d, root, weak };
}

/** The stored row of the strong policy: what the attacker copies. */
const strongRow = (db: Db) =>
  db.prepare("SELECT policy, rules FROM acl_policies WHERE name = 'strong'").get() as {
    policy: string;
    rules: string;
  };

/** The attack of finding 4: the weak policy's row given the strong one's text and rules. */
function weakMadeStrong(d: RunningDaemon): void {
  const db = sqlite(d);
  const strong = strongRow(db);
  expect(
    db
      .prepare("UPDATE acl_policies SET policy = ?, rules = ? WHERE name = 'weak'")
      .run(strong.policy, strong.rules).changes,
  ).toBe(1);
  db.close();
}

/**
 * Start-up must refuse, naming the row; and `keel audit verify` must fail, naming it too. Should
 * the daemon serve, what the token (if given) can then do is the answer, so a failure shows it.
 */
async function refused(d: RunningDaemon, row: RegExp, token?: string): Promise<void> {
  const outcome = await startDaemon({ dataDir: d.dataDir, env }).then(
    async (served) => {
      const list =
        token === undefined
          ? null
          : await raw(served.url, 'LIST', '/v1/sys/policies/acl', { token });
      await served.stop();
      return `served; the token listing every policy got ${list?.status ?? 'nothing'}`;
    },
    (err: Error) => err.message,
  );
  expect(outcome).toMatch(row);
  const verify = keel(['audit', 'verify', '--data', d.dataDir], env);
  expect(verify.stderr).toMatch(row);
  expect(verify.status).toBe(1);
}

describe('read models cannot be edited behind the log (issue 24, finding 4)', () => {
  it('a weak policy edited to path "*" with sudo: start-up and audit verify refuse, naming the row', async () => {
    const { d, weak } = await stoppedWithWeakToken();
    weakMadeStrong(d);
    await refused(d, /acl_policies.*"weak"/, weak);
  });

  it('a secrets token row given the root policy is refused', async () => {
    const { d, weak } = await stoppedWithWeakToken();
    const db = sqlite(d);
    const row = db
      .prepare(`SELECT accessor FROM secrets_tokens WHERE policies LIKE '%"weak"%'`)
      .get() as { accessor: string };
    db.prepare('UPDATE secrets_tokens SET policies = ? WHERE accessor = ?').run(
      JSON.stringify(['root']),
      row.accessor,
    );
    db.close();
    await refused(d, new RegExp(`secrets_tokens.*"${row.accessor}"`), weak);
  });

  it('a PKI role flipped to allow_any_name is refused', async () => {
    const d = await startDaemon({ env });
    const root = d.bootstrap().secrets.root_token;
    const made = await raw(d.url, 'POST', '/v1/pki/roles/narrow', {
      token: root,
      body: { allowed_domains: ['example.com'], allow_subdomains: true, key_type: 'ec' },
    });
    expect(made.status).toBe(200);
    expect(await d.stop()).toBe(0);
    const db = sqlite(d);
    const role = db.prepare("SELECT role FROM pki_roles WHERE name = 'narrow'").get() as {
      role: string;
    };
    const parsed = JSON.parse(role.role) as Record<string, unknown>;
    expect(parsed.allow_any_name).toBe(false);
    db.prepare("UPDATE pki_roles SET role = ? WHERE name = 'narrow'").run(
      JSON.stringify({ ...parsed, allow_any_name: true }),
    );
    db.close();
    await refused(d, /pki_roles.*"narrow"/);
  });

  it('a mount row whose lease limit was raised is refused', async () => {
    const { d } = await stoppedWithWeakToken();
    const db = sqlite(d);
    const mount = db.prepare("SELECT config FROM mounts WHERE path = 'pki/'").get() as {
      config: string;
    };
    const config = JSON.parse(mount.config) as Record<string, unknown>;
    db.prepare("UPDATE mounts SET config = ? WHERE path = 'pki/'").run(
      JSON.stringify({ ...config, max_lease_ttl: 10 * 365 * 24 * 3600 }),
    );
    db.close();
    await refused(d, /mounts.*"pki\/"/);
  });

  it('a row the log never wrote (a policy inserted) and a row it did (a policy removed) are refused', async () => {
    const { d } = await stoppedWithWeakToken();
    let db = sqlite(d);
    const strong = strongRow(db);
    db.prepare("INSERT INTO acl_policies (name, policy, rules) VALUES ('added', ?, ?)").run(
      strong.policy,
      strong.rules,
    );
    db.close();
    await refused(d, /acl_policies.*"added".*not in the log/);

    db = sqlite(d);
    db.prepare("DELETE FROM acl_policies WHERE name = 'added'").run();
    db.prepare("DELETE FROM acl_policies WHERE name = 'weak'").run();
    db.close();
    await refused(d, /acl_policies.*"weak".*missing/);
  });

  it('an untouched data directory starts again, and keel replay repairs an edited one', async () => {
    const { d, weak } = await stoppedWithWeakToken();
    const again = await startDaemon({ dataDir: d.dataDir, env });
    // Left as Keel sealed it at its clean stop: no rebuild was needed.
    expect(again.output()).toMatch(/"how":"sealed".*guarded read models match the event log/);
    expect((await raw(again.url, 'LIST', '/v1/sys/policies/acl', { token: weak })).status).toBe(
      403,
    );
    expect(await again.stop()).toBe(0);
    expect(keel(['audit', 'verify', '--data', d.dataDir], env).status).toBe(0);

    const db = sqlite(d);
    db.prepare("UPDATE acl_policies SET policy = 'x', rules = '[]' WHERE name = 'weak'").run();
    db.close();
    await refused(d, /acl_policies.*"weak"/);
    // The log is the truth: the read models rebuilt from it are the ones Keel wrote.
    expect(keel(['replay', '--data', d.dataDir], env).status).toBe(0);
    const repaired = await startDaemon({ dataDir: d.dataDir, env });
    expect((await raw(repaired.url, 'LIST', '/v1/sys/policies/acl', { token: weak })).status).toBe(
      403,
    );
    expect(await repaired.stop()).toBe(0);
  });

  it('a row edited while the daemon runs is not sealed at its stop: the next start refuses it', async () => {
    const { d, weak } = await stoppedWithWeakToken();
    const running = await startDaemon({ dataDir: d.dataDir, env });
    weakMadeStrong(d);
    expect(await running.stop()).toBe(0);
    await refused(d, /acl_policies.*"weak"/, weak);
  });

  it('a seal removed or forged only costs the shortcut: the store is rebuilt, compared and served', async () => {
    const { d } = await stoppedWithWeakToken();
    let db = sqlite(d);
    expect(db.prepare('DELETE FROM read_model_seal').run().changes).toBe(1);
    db.close();
    const again = await startDaemon({ dataDir: d.dataDir, env });
    expect(again.output()).toMatch(/"how":"rebuilt"/);
    expect(await again.stop()).toBe(0);

    db = sqlite(d);
    db.prepare('UPDATE read_model_seal SET signature = ?').run('0'.repeat(64));
    db.prepare("UPDATE acl_policies SET policy = 'x', rules = '[]' WHERE name = 'weak'").run();
    db.close();
    await refused(d, /acl_policies.*"weak"/);
  });
});
