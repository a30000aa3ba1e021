import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import type { RunningDaemon } from '../../support/daemon.js';
import { keel, startDaemon } from '../../support/daemon.js';
import { startCluster, type Cluster } from '../../support/postgres.js';
import { freshDatabase } from '../../support/store.js';

const SEAL_KEY = 'ab'.repeat(32);
/** libpq sends it only if the server asks (the test cluster trusts its socket); never printed. */
const PASSWORD = 'pg-s3cret-in-url';

let cluster: Cluster;
const started: RunningDaemon[] = [];
beforeAll(() => {
  cluster = startCluster();
});
afterAll(async () => {
  await Promise.all(started.map((d) => d.stop()));
  cluster.stop();
});

describe('keel serve --store postgres://…', () => {
  it('two daemons on one database act as one Keel: a write on one is read at once on the other, one leads', async () => {
    const database = freshDatabase(cluster.socketDir);
    const store = database.url.replace('user=postgres', `user=postgres&password=${PASSWORD}`);
    const env = { KEEL_SEAL_KEY: SEAL_KEY, KEEL_POLL_INTERVAL_MS: '100' };
    const a = await startDaemon({ args: ['--store', store], env });
    started.push(a);
    const b = await startDaemon({ args: ['--store', store], env });
    started.push(b);
    // Only the first found the log empty and bootstrapped; its root token works on both.
    const token = a.bootstrap().secrets.root_token;
    const v1 = (d: RunningDaemon, method: string, path: string, body?: unknown) =>
      httpRequest(d.url, method, `/v1/${path}`, { token, tokenHeader: 'x-vault-token', body });

    const health = [await v1(a, 'GET', 'sys/health'), await v1(b, 'GET', 'sys/health')];
    expect(health.map((r) => r.status)).toEqual([200, 429]);
    expect(health.map((r) => (r.json as { standby: boolean }).standby)).toEqual([false, true]);

    // Policies are remembered between requests: each rewrite must be read at once on the other.
    for (let i = 0; i < 10; i++) {
      const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a];
      const policy = `path "secret/${i}" { capabilities = ["read"] }`;
      expect((await v1(writer, 'PUT', 'sys/policies/acl/shared', { policy })).status).toBe(204);
      const back = await v1(reader, 'GET', 'sys/policies/acl/shared');
      expect((back.json as { data: { policy: string } }).data.policy).toBe(policy);
    }

    // A CA made through one node issues through the other, and the certificate reads back there.
    const mount = await v1(b, 'POST', 'sys/mounts/ca', { type: 'pki' });
    expect(mount.status).toBe(204);
    const root = await v1(a, 'POST', 'ca/root/generate/internal', {
      common_name: 'pg.example',
      ttl: '24h',
    });
    expect(root.status).toBe(200);
    const role = await v1(b, 'POST', 'ca/roles/web', { allow_any_name: true, ttl: '1h' });
    expect(role.status).toBe(200);
    const issued = await v1(a, 'POST', 'ca/issue/web', { common_name: 'www.pg.example' });
    expect(issued.status).toBe(200);
    const serial = (issued.json as { data: { serial_number: string } }).data.serial_number;
    const read = await v1(b, 'GET', `ca/cert/${serial}`);
    expect(read.status).toBe(200);

    await a.stop();
    await b.stop();
    const output = a.output() + b.output();
    expect(output).not.toContain(PASSWORD);
    expect(output).toContain(`"store":"postgresql:///`);
    // The CLI opens the same store: the chain written by both nodes verifies.
    const verify = keel(['audit', 'verify', '--data', a.dataDir, '--store', store], env);
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout + verify.stderr).not.toContain(PASSWORD);
    const events = keel(['events', '--store', store, '--limit', '3'], env);
    expect(events.status, events.stderr).toBe(0);
    const lines = events.stdout.trim().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { position: number }).position)).toEqual([1, 2, 3]);
    const all = keel(['events', '--store', store, '--type', 'AclPolicyWritten'], env);
    expect(all.status, all.stderr).toBe(0);
    expect(all.stdout.trim().split('\n').length).toBeGreaterThanOrEqual(10);
    const replay = keel(['replay', '--data', b.dataDir, '--store', store], env);
    expect(replay.status, replay.stderr).toBe(0);
    expect(replay.stdout).toMatch(/^rebuilt \d+ read models from \d+ events/);
    database.drop();
  }, 90_000);

  it('refuses a database it cannot reach with a clear message that hides the password', () => {
    const r = keel(
      ['audit', 'verify', '--store', `postgresql://keel:${PASSWORD}@127.0.0.1:1/none`],
      { KEEL_SEAL_KEY: SEAL_KEY },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/cannot connect to postgresql:\/\/keel:\*\*\*@127\.0\.0\.1:1\/none/);
    expect(r.stdout + r.stderr).not.toContain(PASSWORD);
  });
});
