import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningDaemon } from '../../support/daemon.js';
import { eventually, startDaemon } from '../../support/daemon.js';
import { daemonWithRoot, errorsOf, raw, tokenWithPolicy } from '../support.js';

// Issue 14, finding 2 and the meta part of 7: tokens are bound to their parents.
let d: RunningDaemon;
let root: string;
let worker: string;
const WORKER = `path "auth/token/*" { capabilities = ["create", "update", "read"] }
path "aws/*" { capabilities = ["read", "update"] }
path "sys/leases/*" { capabilities = ["update"] }`;

beforeAll(async () => {
  ({ d, root } = await daemonWithRoot());
  worker = await tokenWithPolicy(d.url, root, 'worker', WORKER);
});
afterAll(async () => {
  await d.stop();
});

interface Auth {
  client_token: string;
  accessor: string;
  lease_duration: number;
  orphan: boolean;
}
const create = async (token: string, body: Record<string, unknown>, path = 'create') => {
  const r = await raw(d.url, 'POST', `/v1/auth/token/${path}`, { token, body });
  return { r, auth: (r.json as { auth?: Auth } | undefined)?.auth };
};
const alive = async (token: string) =>
  (await raw(d.url, 'GET', '/v1/auth/token/lookup-self', { token })).status === 200;
const lookupAccessor = (accessor: string) =>
  raw(d.url, 'POST', '/v1/auth/token/lookup-accessor', { token: root, body: { accessor } });

describe('a child never outlives its parent', () => {
  it('a child TTL is capped by the parent remaining TTL, with a warning', async () => {
    const parent = (await create(worker, { ttl: '5s', policies: ['worker'] })).auth!;
    const child = await create(parent.client_token, { ttl: '8760h', policies: ['worker'] });
    expect(child.r.status).toBe(200);
    expect(child.auth!.lease_duration).toBeGreaterThan(0);
    expect(child.auth!.lease_duration).toBeLessThanOrEqual(5);
    expect((child.r.json as { warnings: string[] }).warnings[0]).toMatch(/capped/);
    // Asking for no TTL under a parent that has one is capped too.
    const forever = await create(parent.client_token, { policies: ['worker'] });
    expect(forever.auth!.lease_duration).toBeLessThanOrEqual(5);
  });

  it('revoking a parent revokes its children and grandchildren', async () => {
    const parent = (await create(worker, { policies: ['worker'] })).auth!;
    const child = (await create(parent.client_token, { policies: ['worker'] })).auth!;
    const grandchild = (await create(child.client_token, { policies: ['worker'] })).auth!;
    expect(await alive(grandchild.client_token)).toBe(true);
    const r = await raw(d.url, 'POST', '/v1/auth/token/revoke-self', {
      token: parent.client_token,
      body: {},
    });
    expect(r.status).toBe(204);
    expect(await alive(child.client_token)).toBe(false);
    expect(await alive(grandchild.client_token)).toBe(false);
    expect((await lookupAccessor(grandchild.accessor)).status).toBe(400);
  });

  it('an expiring parent takes its descendants with it: the expiry timer revokes them', async () => {
    const parent = (await create(worker, { ttl: '2s', policies: ['worker'] })).auth!;
    const child = (await create(parent.client_token, { policies: ['worker'] })).auth!;
    // Not only refused on use: the rows are gone, so the timer ran.
    await eventually(async () =>
      (await lookupAccessor(parent.accessor)).status === 400 &&
      (await lookupAccessor(child.accessor)).status === 400
        ? true
        : undefined,
    );
    expect(await alive(child.client_token)).toBe(false);
  });

  it('revoke-orphan (sudo) keeps the children, now orphans', async () => {
    const parent = (await create(worker, { policies: ['worker'] })).auth!;
    const child = (await create(parent.client_token, { policies: ['worker'] })).auth!;
    const denied = await raw(d.url, 'POST', '/v1/auth/token/revoke-orphan', {
      token: worker,
      body: { token: parent.client_token },
    });
    expect(denied.status).toBe(403);
    const r = await raw(d.url, 'POST', '/v1/auth/token/revoke-orphan', {
      token: root,
      body: { token: parent.client_token },
    });
    expect(r.status).toBe(204);
    expect(await alive(parent.client_token)).toBe(false);
    const seen = await lookupAccessor(child.accessor);
    expect((seen.json as { data: { orphan: boolean } }).data.orphan).toBe(true);
  });
});

describe('orphans need root or sudo', () => {
  it('no_parent without sudo is refused; with sudo on auth/token/create it is an orphan', async () => {
    const refused = await create(worker, { no_parent: true, policies: ['worker'] });
    expect(refused.r.status).toBe(400);
    expect(errorsOf(refused.r)).toEqual([
      'root or sudo privileges required to create orphan token',
    ]);
    expect((await create(worker, {}, 'create-orphan')).r.status).toBe(403);
    const sudoer = await tokenWithPolicy(
      d.url,
      root,
      'sudoer',
      'path "auth/token/create" { capabilities = ["update", "sudo"] }',
    );
    const orphan = await create(sudoer, { no_parent: true, policies: ['sudoer'] });
    expect(orphan.auth!.orphan).toBe(true);
    expect((await create(root, {}, 'create-orphan')).auth!.orphan).toBe(true);
  });
});

describe('meta is a small map of strings', () => {
  it.each([
    [{ a: 1 }, /expected a map of strings/],
    [['x'], /'meta' expected a map, got unconvertible type 'slice'/],
    [{ a: 'x'.repeat(513) }, /longer than 512 bytes/],
    [{ ['k'.repeat(129)]: 'v' }, /longer than 128 bytes/],
    [Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])), /at most 64/],
    [{ a: 'line\nbreak' }, /control character/],
  ])('meta case %# is refused', async (meta, message) => {
    const r = await create(root, { meta });
    expect(r.r.status).toBe(400);
    expect(errorsOf(r.r).join()).toMatch(message);
  });
});

describe('leases go with the token that obtained them', () => {
  it('revoking a token revokes the leases it and its children obtained', async () => {
    const allow = JSON.stringify({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
    });
    const role = await raw(d.url, 'POST', '/v1/aws/roles/dev', {
      token: root,
      body: { credential_type: 'iam_user', policy_document: allow },
    });
    expect(role.status).toBe(204);
    const parent = (await create(worker, { policies: ['worker'] })).auth!;
    const child = (await create(parent.client_token, { policies: ['worker'] })).auth!;
    const leases: string[] = [];
    for (const t of [parent, child]) {
      const creds = await raw(d.url, 'GET', '/v1/aws/creds/dev', { token: t.client_token });
      expect(creds.status).toBe(200);
      leases.push((creds.json as { lease_id: string }).lease_id);
    }
    const lookup = (id: string) =>
      raw(d.url, 'PUT', '/v1/sys/leases/lookup', { token: root, body: { lease_id: id } });
    for (const id of leases) expect((await lookup(id)).status).toBe(200);
    await raw(d.url, 'POST', '/v1/auth/token/revoke', {
      token: root,
      body: { token: parent.client_token },
    });
    for (const id of leases)
      await eventually(async () => ((await lookup(id)).status === 400 ? true : undefined));
  });
});

describe('expiry timers are schedule rows', () => {
  it('a token that expires while the daemon is down is revoked after the restart', async () => {
    const own = await startDaemon();
    const ownRoot = own.bootstrap().secrets.root_token;
    const c = await raw(own.url, 'POST', '/v1/auth/token/create', {
      token: ownRoot,
      body: { ttl: '1s' },
    });
    const accessor = (c.json as { auth: Auth }).auth.accessor;
    expect(await own.stop()).toBe(0);
    await new Promise((r) => setTimeout(r, 1100));
    const again = await startDaemon({ dataDir: own.dataDir });
    try {
      await eventually(async () =>
        (
          await raw(again.url, 'POST', '/v1/auth/token/lookup-accessor', {
            token: ownRoot,
            body: { accessor },
          })
        ).status === 400
          ? true
          : undefined,
      );
    } finally {
      await again.stop();
    }
  });
});
