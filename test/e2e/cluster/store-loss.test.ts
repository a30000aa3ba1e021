import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKeelCluster, type KeelCluster } from '../../support/cluster.js';
import { eventually } from '../../support/daemon.js';

/**
 * What Keel does when its PostgreSQL server goes away (a failover, a restart): each node's one
 * connection is cut, and the node exits with status 1 rather than serve from a store it cannot
 * reach; a supervisor starts it again, and once the database is back it serves the same log.
 */
let c: KeelCluster;
beforeAll(async () => {
  c = await startKeelCluster(2, { KEEL_POLL_INTERVAL_MS: '200' });
}, 60_000);
afterAll(async () => c?.stop());

describe('a cluster whose database goes away', () => {
  it('exits on every node, and serves the same log when started again once it is back', async () => {
    const policy = 'path "kept/*" { capabilities = ["read"] }';
    expect((await c.v1(c.nodes[0]!, 'PUT', 'sys/policies/acl/kept', { policy })).status).toBe(204);
    const before = Number(c.query<{ n: string }>('SELECT count(*) AS n FROM events')[0]!.n);

    c.database('stop');
    const codes = await Promise.all(
      c.nodes.map(
        (n) =>
          new Promise<number | null>((done) => {
            if (n.daemon.child.exitCode !== null) done(n.daemon.child.exitCode);
            else n.daemon.child.once('exit', (code) => done(code));
          }),
      ),
    );
    expect(codes).toEqual([1, 1]);
    for (const n of c.nodes) {
      n.gone = true;
      expect(n.daemon.output()).toMatch(/server closed the connection|terminating connection/);
    }

    // Started while the database is still away, a node refuses to serve and says why.
    await expect(c.restart(c.nodes[0]!)).rejects.toThrow(/cannot connect to/);
    c.database('start');
    const nodes = [];
    for (const n of [...c.nodes]) nodes.push(await c.restart(n));
    for (const n of nodes) {
      const back = await eventually(async () => {
        const r = await c.v1(n, 'GET', 'sys/policies/acl/kept');
        return r.status === 200 ? r : undefined;
      });
      expect((back.json as { data: { policy: string } }).data.policy).toBe(policy);
    }
    // Nothing acknowledged was lost, and the chain verifies.
    expect(
      Number(c.query<{ n: string }>('SELECT count(*) AS n FROM events')[0]!.n),
    ).toBeGreaterThanOrEqual(before);
    const verified = c.verify();
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  }, 60_000);
});
