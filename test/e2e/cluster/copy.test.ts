import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { SEAL_KEY, startKeelCluster, type KeelCluster } from '../../support/cluster.js';
import { keel, startDaemon } from '../../support/daemon.js';

/**
 * From one machine to a cluster: a daemon's SQLite log copied into an empty PostgreSQL database
 * with `keel copy`, then served by two nodes — the first on the old data directory.
 */
let c: KeelCluster;
beforeAll(async () => {
  c = await startKeelCluster(0);
}, 60_000);
afterAll(async () => c?.stop());

describe('keel copy from a data directory to a cluster', () => {
  it('serves the copied log on every node: read models rebuilt, tokens valid, chain verified', async () => {
    const single = await startDaemon({ env: { KEEL_SEAL_KEY: SEAL_KEY } });
    const root = single.bootstrap().secrets.root_token;
    const policies = Array.from({ length: 5 }, (_, i) => ({
      name: `moved-${i}`,
      policy: `path "moved/${i}/*" { capabilities = ["read"] }`,
    }));
    for (const { name, policy } of policies) {
      const r = await httpRequest(single.url, 'PUT', `/v1/sys/policies/acl/${name}`, {
        token: root,
        tokenHeader: 'x-vault-token',
        body: { policy },
      });
      expect(r.status, r.text).toBe(204);
    }
    expect(await single.stop()).toBe(0);

    const copied = keel(
      ['copy', '--from', single.dataDir, '--to', c.url, '--data', single.dataDir],
      {
        KEEL_SEAL_KEY: SEAL_KEY,
      },
    );
    expect(copied.stderr).toBe('');
    expect(copied.status).toBe(0);
    expect(copied.stdout).toMatch(/^copied \d+ events/);

    // The first node keeps the old directory (its bootstrap.json, its head); the second is new.
    const first = await c.join(single.dataDir);
    const second = await c.join();
    for (const n of [first, second]) {
      for (const { name, policy } of policies) {
        const back = await c.v1(n, 'GET', `sys/policies/acl/${name}`);
        expect(back.status, `${name} on ${n.name}`).toBe(200);
        expect((back.json as { data: { policy: string } }).data.policy).toBe(policy);
      }
    }
    const verified = c.verify();
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  }, 60_000);
});
