import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';

/**
 * Random token trees: creations (children with random TTLs, orphans from root), revocations
 * (with or without the children), and clock jumps with the expiry timers run. After every step
 * the daemon's tokens are exactly the ones a plain model of the tree says are alive, so no
 * descendant ever outlives an ancestor.
 */
type Step =
  | { kind: 'create'; parent: number; ttl: number; orphan: boolean }
  | { kind: 'revoke'; node: number }
  | { kind: 'revoke-orphan'; node: number }
  | { kind: 'advance'; seconds: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      // -1 is the root token; other numbers pick a node made earlier in the run.
      parent: fc.integer({ min: -1, max: 30 }),
      ttl: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 200 })),
      orphan: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('revoke' as const), node: fc.nat(30) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('revoke-orphan' as const), node: fc.nat(30) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      seconds: fc.integer({ min: 1, max: 150 }),
    }),
  },
);

/** The model: a plain tree with absolute expiry seconds. */
interface Node {
  token: string;
  accessor: string;
  /** The parent's index, or null for a child of the root token and for an orphan. */
  parent: number | null;
  orphan: boolean;
  expiresAt: number | null;
  alive: boolean;
}

class Model {
  readonly nodes: Node[] = [];
  now = 0;

  kill(i: number, orphanChildren = false): void {
    this.nodes[i]!.alive = false;
    this.nodes.forEach((n, j) => {
      if (n.parent !== i || !n.alive) return;
      if (orphanChildren) {
        n.parent = null;
        n.orphan = true;
      } else this.kill(j);
    });
  }

  /** The TTL a new child gets, or null when the daemon must refuse it. */
  childTtl(parent: number | null, ttl: number): number | null {
    const p = parent === null ? undefined : this.nodes[parent];
    if (p === undefined || p.expiresAt === null) return ttl;
    const left = p.expiresAt - this.now;
    if (left < 1) return null;
    return ttl > 0 && ttl <= left ? ttl : left;
  }

  advance(seconds: number): void {
    this.now += seconds;
    this.nodes.forEach((n, i) => {
      if (n.alive && n.expiresAt !== null && n.expiresAt <= this.now) this.kill(i);
    });
  }
}

let t: TestApp;
let root: string;
beforeAll(async () => {
  t = await startTestApp();
  root = t.tokens.secrets.root_token;
});
afterAll(() => t.close());

const post = (token: string, path: string, body: unknown) =>
  t.request('POST', `/v1/auth/token/${path}`, { token, tokenHeader: 'x-vault-token', body });

async function apply(m: Model, s: Step): Promise<void> {
  switch (s.kind) {
    case 'create': {
      const parentIndex = s.parent >= 0 && s.parent < m.nodes.length ? s.parent : null;
      const parent = parentIndex === null ? undefined : m.nodes[parentIndex];
      if (parent !== undefined && !parent.alive) {
        // A dead token creates nothing.
        expect((await post(parent.token, 'create', { ttl: s.ttl })).status).toBe(403);
        return;
      }
      const orphan = parent === undefined && s.orphan;
      const ttl = orphan ? s.ttl : m.childTtl(parentIndex, s.ttl);
      const r = await post(parent?.token ?? root, 'create', {
        ttl: s.ttl,
        ...(orphan ? { no_parent: true } : {}),
      });
      if (ttl === null) {
        expect(r.status).toBe(400);
        return;
      }
      expect(r.status).toBe(200);
      const auth = (r.json as { auth: { client_token: string; accessor: string } }).auth;
      m.nodes.push({
        token: auth.client_token,
        accessor: auth.accessor,
        parent: orphan ? null : parentIndex,
        orphan,
        expiresAt: ttl === 0 ? null : m.now + ttl,
        alive: true,
      });
      return;
    }
    case 'revoke':
    case 'revoke-orphan': {
      const n = m.nodes[s.node];
      if (n === undefined) return;
      const r = await post(root, s.kind, { token: n.token });
      expect(r.status).toBe(204);
      if (n.alive) m.kill(s.node, s.kind === 'revoke-orphan');
      return;
    }
    case 'advance':
      t.clock.advance(s.seconds * 1000);
      await t.settle();
      m.advance(s.seconds);
      return;
  }
}

async function check(m: Model): Promise<void> {
  for (const n of m.nodes) {
    const self = await t.request('GET', '/v1/auth/token/lookup-self', {
      token: n.token,
      tokenHeader: 'x-vault-token',
    });
    // Revoked, not merely refused: the token's row is gone once the model says it is dead.
    const row = await post(root, 'lookup-accessor', { accessor: n.accessor });
    expect({ accessor: n.accessor, self: self.status, row: row.status }).toEqual({
      accessor: n.accessor,
      self: n.alive ? 200 : 403,
      row: n.alive ? 200 : 400,
    });
    if (n.alive) {
      const orphan = (row.json as { data: { orphan: boolean } }).data.orphan;
      expect(orphan).toBe(n.orphan);
    }
  }
  // The invariant itself, on the model the daemon was just shown to match.
  for (const n of m.nodes) {
    if (!n.alive) continue;
    for (let p = n.parent; p !== null; p = m.nodes[p]!.parent) {
      const ancestor = m.nodes[p]!;
      expect(ancestor.alive).toBe(true);
      if (ancestor.expiresAt !== null) {
        expect(n.expiresAt).not.toBeNull();
        expect(n.expiresAt!).toBeLessThanOrEqual(ancestor.expiresAt);
      }
    }
  }
}

describe('token trees', () => {
  it('no descendant outlives an ancestor, whatever is created, revoked or expires', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const m = new Model();
        for (const s of steps) {
          await apply(m, s);
          await check(m);
        }
      }),
      { numRuns: 25 },
    );
  });
});
