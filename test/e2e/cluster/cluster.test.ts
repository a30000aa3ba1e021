import { CreateUserCommand, IAMClient } from '@aws-sdk/client-iam';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { startKeelCluster, type KeelCluster, type Node } from '../../support/cluster.js';
import { eventually } from '../../support/daemon.js';
import { queuedRun, uploadedWorkspace } from '../../support/runs-harness.js';

/**
 * Three real daemons on one PostgreSQL database (issue 17). The daemons keep real time, so the
 * file is ordered: the static role made first is due to rotate a minute later, while the last
 * test has killed the leader.
 */
let c: KeelCluster;
/** The static role's period: the minimum, so its first rotation falls due a minute in. */
const ROTATION_S = 60;

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});

beforeAll(async () => {
  c = await startKeelCluster(3, { KEEL_POLL_INTERVAL_MS: '200' });
  const cloud = c.bootstrap.cloud;
  const iam = new IAMClient({
    region: cloud.region,
    endpoint: cloud.iam_endpoint,
    credentials: { accessKeyId: cloud.access_key_id, secretAccessKey: cloud.secret_access_key },
    maxAttempts: 1,
  });
  await iam.send(new CreateUserCommand({ UserName: 'rotor' }));
  const made = await c.v1(c.nodes[1]!, 'POST', 'aws/static-roles/rotor', {
    username: 'rotor',
    rotation_period: `${ROTATION_S}s`,
  });
  expect(made.status, made.text).toBeLessThan(300);
}, 60_000);
afterAll(async () => c?.stop());

const alive = () => c.nodes.filter((n) => !n.gone);
const healthOf = async (n: Node) => {
  const r = await c.v1(n, 'GET', 'sys/health');
  return { node: n, status: r.status, standby: (r.json as { standby: boolean }).standby };
};
/** The one node reporting active, once exactly one of the living does. */
const active = () =>
  eventually(async () => {
    const all = await Promise.all(alive().map(healthOf));
    const leaders = all.filter((h) => !h.standby);
    return leaders.length === 1 ? { leader: leaders[0]!.node, all } : undefined;
  }, 20_000);

/** A request that may meet a node as it dies: undefined instead of an answer. */
const attempt = async <T>(request: () => Promise<T>): Promise<T | undefined> => {
  try {
    return await request();
  } catch {
    return undefined;
  }
};

const count = (sql: string) => Number(c.query<{ n: number | string }>(sql)[0]?.n ?? 0);
/** Positions run 1..n with no gap, whoever appended them. */
const expectDensePositions = () => {
  const [row] = c.query<{ n: number | string; last: number | string }>(
    'SELECT count(*) AS n, max(position) AS last FROM events',
  );
  expect(Number(row!.n)).toBe(Number(row!.last));
};

describe('three daemons on one PostgreSQL', () => {
  it('act as one Keel: a write on each is read at once on the others; exactly one is active', async () => {
    const { all } = await active();
    for (const h of all) expect(h.status).toBe(h.standby ? 429 : 200);
    for (const n of alive())
      expect((await c.v1(n, 'GET', 'sys/health?standbyok=true')).status).toBe(200);
    for (let round = 0; round < 3; round++) {
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

  it("each node forgets what another node's write changed: a role, a revoked token, a default issuer", async () => {
    const [n0, n1, n2] = c.nodes as [Node, Node, Node];
    const ok = (r: { status: number; text: string }) => expect(r.status, r.text).toBeLessThan(300);
    const issue = (node: Node, name: string) =>
      c.v1(node, 'POST', 'pki/issue/web', { common_name: name, ttl: '1h' });
    const role = (node: Node, domain: string) =>
      c.v1(node, 'POST', 'pki/roles/web', { allowed_domains: domain, allow_subdomains: true });
    const generate = (name: string) =>
      c.v1(n0, 'POST', 'pki/root/generate/internal', {
        common_name: `cluster root ${name}`,
        key_type: 'ec',
        issuer_name: name,
      });
    const root = await generate('first');
    ok(root);
    ok(await role(n0, 'a.example'));
    // Node 1 remembers the role (and the issuer) by using them.
    ok(await issue(n1, 'x.a.example'));
    expect((await issue(n1, 'x.b.example')).status).toBe(400);
    // Node 2 changes the role: node 1 follows at once, in both directions.
    ok(await role(n2, 'b.example'));
    ok(await issue(n1, 'x.b.example'));
    expect((await issue(n1, 'x.a.example')).status).toBe(400);
    // A new default issuer made on node 0 signs node 1's next certificate.
    const second = await generate('second');
    ok(second);
    ok(await c.v1(n0, 'POST', 'pki/config/issuers', { default: 'second' }));
    const after = await issue(n1, 'y.b.example');
    ok(after);
    expect((after.json as { data: { issuing_ca: string } }).data.issuing_ca).toBe(
      (second.json as { data: { certificate: string } }).data.certificate,
    );
    // A token used on node 1, revoked on node 2, is refused on node 1 at once.
    const made = await c.v1(n0, 'POST', 'auth/token/create', { policies: ['default'] });
    ok(made);
    const token = (made.json as { auth: { client_token: string } }).auth.client_token;
    const self = () =>
      httpRequest(n1.daemon.url, 'GET', '/v1/auth/token/lookup-self', {
        token,
        tokenHeader: 'x-vault-token',
        headers: { connection: 'close' },
      });
    expect((await self()).status).toBe(200);
    ok(await c.v1(n2, 'POST', 'auth/token/revoke', { token }));
    expect((await self()).status).toBe(403);
  });

  it('loses no acknowledged command when a node is killed (-9) under load, and the chain verifies', async () => {
    const { all } = await active();
    const victim = all.find((h) => h.standby)!.node;
    const acked: { name: string; policy: string }[] = [];
    const writers = [0, 1, 2].map(async (w) => {
      for (let i = 0; i < 25; i++) {
        const nodes = alive();
        const node = nodes[(w + i) % nodes.length]!;
        const name = `load-${w}-${i}`;
        const policy = `path "load/${w}/${i}" { capabilities = ["read"] }`;
        const r = await attempt(() => c.v1(node, 'PUT', `sys/policies/acl/${name}`, { policy }));
        if (r?.status === 204) acked.push({ name, policy });
      }
    });
    await eventually(async () => (acked.length >= 10 ? true : undefined));
    await c.kill(victim);
    await Promise.all(writers);
    expect(acked.length).toBeGreaterThan(10);
    for (const { name, policy } of acked) {
      for (const n of alive()) {
        const back = await c.v1(n, 'GET', `sys/policies/acl/${name}`);
        expect(back.status, `${name} on ${n.name}`).toBe(200);
        expect((back.json as { data: { policy: string } }).data.policy).toBe(policy);
      }
    }
    expectDensePositions();
    const verified = c.verify();
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  });

  it('keeps the chain valid and positions dense under random commands spread across the nodes at once', async () => {
    let made = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ node: fc.nat(), token: fc.boolean() }), {
          minLength: 4,
          maxLength: 12,
        }),
        async (commands) => {
          const before = count('SELECT count(*) AS n FROM events');
          const nodes = alive();
          const results = await Promise.all(
            commands.map(async ({ node, token }) => {
              const on = nodes[node % nodes.length]!;
              if (token) {
                const r = await c.v1(on, 'POST', 'auth/token/create', { ttl: '1h' });
                return { ok: r.status === 200, policy: null };
              }
              const name = `prop-${++made}`;
              const policy = `path "prop/${made}" { capabilities = ["list"] }`;
              const r = await c.v1(on, 'PUT', `sys/policies/acl/${name}`, { policy });
              return { ok: r.status === 204, policy: { name, policy } };
            }),
          );
          // Every command was acknowledged and appended at least one event.
          expect(results.every((r) => r.ok)).toBe(true);
          expect(count('SELECT count(*) AS n FROM events') - before).toBeGreaterThanOrEqual(
            commands.length,
          );
          expectDensePositions();
          // Each policy is read back as written, on every node.
          for (const r of results) {
            if (r.policy === null) continue;
            for (const n of nodes) {
              const back = await c.v1(n, 'GET', `sys/policies/acl/${r.policy.name}`);
              expect((back.json as { data: { policy: string } }).data.policy).toBe(r.policy.policy);
            }
          }
        },
      ),
      { numRuns: 6 },
    );
    const verified = c.verify();
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  });

  it("gathers PostgreSQL's planner statistics once the log passes 1,000 events (ADR 0113)", async () => {
    const analysed = () =>
      count(
        "SELECT count(*) AS n FROM pg_stat_user_tables WHERE relname = 'events' AND last_analyze IS NOT NULL",
      );
    // Written through the standing-by nodes alone: the leader must learn the log's end from the
    // database, not from its own batches.
    const { leader } = await active();
    let made = 0;
    while (count('SELECT count(*) AS n FROM events') < 1000) {
      const nodes = alive().filter((n) => n !== leader);
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          const k = ++made;
          const policy = `path "stat/${k}" { capabilities = ["read"] }`;
          const r = await c.v1(nodes[k % nodes.length]!, 'PUT', `sys/policies/acl/stat-${k}`, {
            policy,
          });
          expect(r.status, r.text).toBe(204);
        }),
      );
    }
    // `last_analyze` is an ANALYZE asked for, not the server's autovacuum (`last_autoanalyze`).
    await eventually(async () => (analysed() === 1 ? true : undefined), 20_000);
  });

  it('fails over when the leader is killed (-9): timers due meanwhile fire once, queued runs are planned once by another node', async () => {
    const { leader } = await active();
    const survivor = alive().find((n) => n !== leader)!;
    expect(
      (await c.v1(leader, 'POST', 'aws/config/lease', { lease: '3s', lease_max: '3s' })).status,
    ).toBe(204);
    expect(
      (
        await c.v1(leader, 'POST', 'aws/roles/dev', {
          credential_type: 'iam_user',
          policy_document: ALLOW_ALL,
        })
      ).status,
    ).toBe(204);
    // Runs queued through the leader on one workspace: without auto-apply each stops planned,
    // and the next is planned only once the one before is discarded.
    const token = c.bootstrap.runs.user_token;
    const api = (node: Node, method: string, path: string, body?: unknown) =>
      httpRequest(node.daemon.url, method, `/api/v2${path}`, {
        token,
        body,
        headers: { connection: 'close' },
      });
    const wsId = await uploadedWorkspace((m, p, b) => api(leader, m, p, b));

    // Just before the static role's rotation falls due, the leader dies with work in hand.
    // The rotation's due time is the key's expiration, as the API gives it: the real clock has to
    // reach it (a daemon's clock cannot be moved), so the test waits until just before.
    const key = await c.v1(survivor, 'GET', 'aws/static-creds/rotor');
    const due = Date.parse((key.json as { data: { expiration: string } }).data.expiration);
    const wait = due - 3000 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const creds = async (node: Node) => {
      const r = await c.v1(node, 'GET', 'aws/creds/dev');
      expect(r.status, r.text).toBe(200);
    };
    await creds(leader);
    await creds(leader);
    const runs: string[] = [];
    for (let i = 0; i < 3; i++) {
      runs.push(await queuedRun((m, p, b) => api(leader, m, p, b), wsId));
    }
    await c.kill(leader);
    // Issued while no one leads: their expiry (3 s) falls inside the failover too.
    await creds(survivor);
    await creds(survivor);

    const next = (await active()).leader;
    expect(next).not.toBe(leader);

    // Each run planned by the new leader, once, one after another.
    const statusOf = async (id: string) => {
      const r = await api(survivor, 'GET', `/runs/${id}`);
      return r.status === 200
        ? (r.json as { data: { attributes: { status: string } } }).data.attributes.status
        : undefined;
    };
    for (const id of runs) {
      await eventually(async () => ((await statusOf(id)) === 'planned' ? true : undefined), 30_000);
      const discarded = await api(survivor, 'POST', `/runs/${id}/actions/discard`, {});
      expect(discarded.status, discarded.text).toBe(202);
    }
    const repeated = c.query<{ stream: string; type: string; n: number | string }>(
      `SELECT stream, type, count(*) AS n FROM events
        WHERE stream IN (${runs.map((r) => `'${r}'`).join(', ')})
          AND type IN ('RunPlanQueued', 'RunPlanStarted', 'RunPlanFinished')
        GROUP BY stream, type`,
    );
    expect(repeated).toHaveLength(runs.length * 3);
    for (const r of repeated) expect(Number(r.n), `${r.stream} ${r.type}`).toBe(1);

    // Every lease expired and revoked exactly once; the rotation due in the failover happened once.
    const leases = await eventually(async () => {
      const rows = c.query<{ issued: string; requested: string; revoked: string }>(
        `SELECT sum(CASE WHEN type = 'LeaseIssued' THEN 1 ELSE 0 END) AS issued,
                sum(CASE WHEN type = 'LeaseRevocationRequested' THEN 1 ELSE 0 END) AS requested,
                sum(CASE WHEN type = 'LeaseRevoked' THEN 1 ELSE 0 END) AS revoked
           FROM events WHERE stream LIKE 'aws-lease:%' GROUP BY stream`,
      );
      return rows.length === 4 && rows.every((r) => Number(r.revoked) > 0) ? rows : undefined;
    }, 30_000);
    for (const r of leases)
      expect([r.issued, r.requested, r.revoked].map(Number)).toEqual([1, 1, 1]);
    // The rotations of that due time: one period earlier or later is another rotation (on a
    // busy machine this file runs for more than a period, and the one before may fall in it).
    const from = new Date(due).toISOString();
    const until = new Date(due + ROTATION_S * 1000).toISOString();
    const rotations = () =>
      count(
        `SELECT count(*) AS n FROM events WHERE stream LIKE '%rotor%' AND type = 'StaticRoleRotationStarted' AND time >= '${from}' AND time < '${until}'`,
      );
    await eventually(async () => (rotations() > 0 ? true : undefined), 30_000);
    // Should it be otherwise, the role's whole history says which node did what, and when.
    const history = () =>
      JSON.stringify({
        due: new Date(due).toISOString(),
        killed: leader.daemon.url,
        events: c.query(
          `SELECT position, type, time, data FROM events WHERE stream LIKE '%rotor%' ORDER BY position`,
        ),
      });
    expect(rotations(), history()).toBe(1);
    expectDensePositions();
    const verified = c.verify();
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  }, 90_000);
});
