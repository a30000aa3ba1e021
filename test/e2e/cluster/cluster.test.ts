import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKeelCluster, type KeelCluster, type Node } from '../../support/cluster.js';
import { eventually } from '../../support/daemon.js';

let c: KeelCluster;
beforeAll(async () => {
  c = await startKeelCluster(3);
}, 60_000);
afterAll(async () => c?.stop());

const alive = () => c.nodes.filter((n) => !n.gone);
const standbyOf = async (n: Node) => {
  const r = await c.v1(n, 'GET', 'sys/health');
  return { status: r.status, standby: (r.json as { standby: boolean }).standby };
};

describe('three daemons on one PostgreSQL', () => {
  it('act as one Keel: a write on each is read at once on the others; exactly one is active', async () => {
    const health = await eventually(async () => {
      const all = await Promise.all(alive().map(standbyOf));
      return all.filter((h) => !h.standby).length === 1 ? all : undefined;
    });
    for (const h of health) expect(h.status).toBe(h.standby ? 429 : 200);
    for (const n of alive())
      expect((await c.v1(n, 'GET', 'sys/health?standbyok=true')).status).toBe(200);
    for (let round = 0; round < 4; round++) {
      for (const [i, writer] of c.nodes.entries()) {
        const policy = `path "secret/${i}/${round}" { capabilities = ["read"] }`;
        expect((await c.v1(writer, 'PUT', `sys/policies/acl/p${i}`, { policy })).status).toBe(204);
        for (const reader of c.nodes) {
          const back = await c.v1(reader, 'GET', `sys/policies/acl/p${i}`);
          expect(back.status, `${reader.name} reads ${writer.name}'s write`).toBe(200);
          expect((back.json as { data: { policy: string } }).data.policy).toBe(policy);
        }
      }
    }
  });
});
