import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { startKeelCluster, type KeelCluster, type Node } from '../../support/cluster.js';
import { eventually } from '../../support/daemon.js';

/**
 * What Keel does when its PostgreSQL server goes away (a failover, a restart): the nodes stay up,
 * requests that need the store answer 503 while it is away, and once it is back every node
 * reconnects and serves the same log — no restart needed.
 */
let c: KeelCluster;
beforeAll(async () => {
  c = await startKeelCluster(2, { KEEL_POLL_INTERVAL_MS: '200' });
}, 60_000);
afterAll(async () => c?.stop());

const read = (n: Node) => c.v1(n, 'GET', 'sys/policies/acl/kept');

describe('a cluster whose database goes away', () => {
  it('answers 503 while it is away, and serves the same log again once it is back', async () => {
    const policy = 'path "kept/*" { capabilities = ["read"] }';
    expect((await c.v1(c.nodes[0]!, 'PUT', 'sys/policies/acl/kept', { policy })).status).toBe(204);

    c.database('stop');
    for (const n of c.nodes) {
      const down = await read(n);
      expect(down.status, down.text).toBe(503);
      expect(down.json).toEqual({ errors: ['the store is out of reach; try again shortly'] });
      expect(down.headers.get('retry-after')).toBe('1');
    }
    // Health tells the load balancer that no node can serve, even with standbyok.
    for (const n of c.nodes) {
      expect((await c.v1(n, 'GET', 'sys/health?standbyok=true')).status).toBe(503);
    }
    const runs = await httpRequest(c.nodes[0]!.daemon.url, 'GET', '/api/v2/organizations', {
      token: c.bootstrap.runs.user_token,
      headers: { connection: 'close' },
    });
    expect(runs.status, runs.text).toBe(503);
    expect(runs.json).toEqual({
      errors: [
        {
          status: '503',
          title: 'service unavailable',
          detail: 'the store is out of reach; try again shortly',
        },
      ],
    });
    // A node started while the database is away refuses to start, and says why.
    const starting = c.nodes[1]!;
    await c.kill(starting);
    await expect(c.restart(starting)).rejects.toThrow(/cannot connect to/);

    c.database('start');
    const nodes = [c.nodes[0]!, await c.restart(c.nodes[1]!)];
    for (const n of nodes) {
      const back = await eventually(async () => {
        const r = await read(n);
        return r.status === 200 ? r : undefined;
      });
      expect((back.json as { data: { policy: string } }).data.policy).toBe(policy);
    }
    expect(c.nodes[0]!.daemon.child.exitCode).toBe(null);
    const health = await Promise.all(nodes.map((n) => c.v1(n, 'GET', 'sys/health?standbyok=true')));
    expect(health.map((r) => r.status)).toEqual([200, 200]);
    const after = 'path "after/*" { capabilities = ["read"] }';
    expect((await c.v1(nodes[0]!, 'PUT', 'sys/policies/acl/after', { policy: after })).status).toBe(
      204,
    );
    const verified = c.verify();
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  }, 60_000);
});
