import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';

let t: TestApp;
let root: string;
beforeAll(async () => {
  t = await startTestApp();
  root = t.tokens.secrets.root_token;
});
afterAll(() => t.close());

const HOUR = 3600;
interface Auth {
  client_token: string;
  accessor: string;
  lease_duration: number;
  renewable: boolean;
  policies: string[];
  orphan: boolean;
}
const v1 = async (method: string, path: string, body?: unknown, token = root) => {
  const res = await t.request(method, `/v1/${path}`, {
    token,
    ...(body === undefined ? {} : { body }),
  });
  const json = res.json as {
    data?: Record<string, unknown>;
    auth?: Auth;
    warnings?: string[] | null;
    errors?: string[];
  };
  return { ...res, data: json?.data ?? {}, auth: json?.auth, warnings: json?.warnings ?? null };
};
const create = async (body: Record<string, unknown>, path = 'auth/token/create') => {
  const res = await v1('POST', path, body);
  expect(res.status, res.text).toBe(200);
  return { ...res, auth: res.auth! };
};
const lookup = async (token: string) => (await v1('POST', 'auth/token/lookup', { token })).data;
const advance = (seconds: number) => t.clock.advance(seconds * 1000);

describe('token TTLs as the reference sets them', () => {
  it('a non-root token without ttl gets the default 768h; a root token never expires', async () => {
    const plain = await create({ policies: ['default'] });
    expect(plain.auth).toMatchObject({ lease_duration: 768 * HOUR, renewable: true });
    expect(await lookup(plain.auth.client_token)).toMatchObject({
      creation_ttl: 768 * HOUR,
      ttl: 768 * HOUR,
      renewable: true,
    });
    const rooted = await create({});
    expect(rooted.auth).toMatchObject({ lease_duration: 0, renewable: false });
    expect(await lookup(rooted.auth.client_token)).toMatchObject({ ttl: 0, renewable: false });
  });

  it('a root child made without a ttl under a parent that expires expires with it, orphaned or not', async () => {
    const parent = await create({ ttl: '10s' });
    const child = await v1('POST', 'auth/token/create', {}, parent.auth.client_token);
    expect(child.status, child.text).toBe(200);
    expect((await lookup(child.auth!.client_token)).ttl).toBe(10);
    // Made an orphan, it keeps its own end: the parent's.
    expect(
      (await v1('POST', 'auth/token/revoke-orphan', { token: parent.auth.client_token })).status,
    ).toBe(204);
    advance(10);
    await t.settle();
    expect(
      (await v1('POST', 'auth/token/lookup-accessor', { accessor: child.auth!.accessor })).status,
    ).toBe(400);
  });

  it('renewable is the same in the create answer and the lookup', async () => {
    const fixed = await create({ ttl: '1h', renewable: false, policies: ['default'] });
    expect(fixed.auth.renewable).toBe(false);
    expect((await lookup(fixed.auth.client_token)).renewable).toBe(false);
    const renew = await v1('POST', 'auth/token/renew', { token: fixed.auth.client_token });
    expect(renew.status).toBe(400);
    expect(renew.json).toEqual({ errors: ['lease is not renewable'] });
  });

  it('explicit_max_ttl caps the TTL at creation and every renewal after it', async () => {
    const capped = await create({ ttl: '30m', explicit_max_ttl: '5m', policies: ['default'] });
    expect(capped.auth.lease_duration).toBe(300);
    expect(capped.warnings?.[0]).toContain('exceeded the effective max_ttl of "5m0s"');
    const token = (await create({ ttl: '1h', explicit_max_ttl: '3h', policies: ['default'] })).auth
      .client_token;
    expect(await lookup(token)).toMatchObject({ explicit_max_ttl: 3 * HOUR, creation_ttl: HOUR });
    advance(50 * 60);
    // Renewed past its original hour...
    const longer = await v1('POST', 'auth/token/renew', { token, increment: '2h' });
    expect(longer.auth).toMatchObject({ client_token: token, lease_duration: 2 * HOUR });
    advance(110 * 60);
    expect((await lookup(token)).ttl).toBe(10 * 60);
    // ...but never past three hours from its creation (2h40m have gone by).
    const last = await v1('POST', 'auth/token/renew', { token, increment: '2h' });
    expect(last.auth!.lease_duration).toBe(20 * 60);
    expect(last.warnings?.[0]).toContain('TTL value is capped');
    expect((await lookup(token)).last_renewal).toBe(t.clock.now().toISOString());
    advance(20 * 60);
    await t.app.scheduler.tick();
    expect((await v1('POST', 'auth/token/lookup', { token })).status).toBe(403);
    expect((await v1('POST', 'auth/token/renew', { token })).status).toBe(400);
  });

  it('a periodic token gets its period at creation and at each renewal, past the system maximum', async () => {
    const periodic = await create({ period: '30m', policies: ['default'] });
    expect(periodic.auth.lease_duration).toBe(1800);
    const token = periodic.auth.client_token;
    expect(await lookup(token)).toMatchObject({ period: 1800, ttl: 1800 });
    for (let i = 0; i < 40; i++) {
      advance(24 * 60);
      await t.app.scheduler.tick();
      const r = await v1('POST', 'auth/token/renew', { token, increment: '10h' });
      expect(r.auth!.lease_duration).toBe(1800);
    }
    // 40 renewals 24 minutes apart: 16 hours, still alive (no 768h cap is near, but none applies).
    expect((await lookup(token)).ttl).toBe(1800);
  });

  it('renew-self and renew-accessor renew the same token; the accessor answer hides the token', async () => {
    const { client_token: token, accessor } = (await create({ ttl: '1h', policies: ['default'] }))
      .auth;
    const self = await v1('POST', 'auth/token/renew-self', { increment: '2h' }, token);
    expect(self.status, self.text).toBe(200);
    expect(self.auth).toMatchObject({ client_token: token, lease_duration: 2 * HOUR });
    const byAccessor = await v1('POST', 'auth/token/renew-accessor', { accessor });
    expect(byAccessor.auth).toMatchObject({ client_token: '', accessor, lease_duration: HOUR });
    const looked = await v1('POST', 'auth/token/lookup-accessor', { accessor });
    expect(looked.data).toMatchObject({ id: '', accessor });
  });

  it('negative num_uses and batch tokens are refused, naming them', async () => {
    const uses = await v1('POST', 'auth/token/create', { num_uses: -1 });
    expect(uses.json).toEqual({ errors: ['number of uses cannot be negative'] });
    const batch = await v1('POST', 'auth/token/create', { type: 'batch' });
    expect(batch.json).toEqual({ errors: ['token type "batch" is not supported by Keel'] });
  });

  it("a token role's token_num_uses caps its tokens' uses and its token_bound_cidrs bind them", async () => {
    const w = await v1('POST', 'auth/token/roles/bound', {
      token_bound_cidrs: '10.0.0.0/8',
      token_num_uses: 3,
    });
    expect(w.status, w.text).toBe(204);
    expect((await v1('GET', 'auth/token/roles/bound')).data).toMatchObject({
      token_bound_cidrs: ['10.0.0.0/8'],
      token_num_uses: 3,
    });
    const far = await create({ num_uses: 5 }, 'auth/token/create/bound');
    expect((await lookup(far.auth.client_token)).num_uses).toBe(3);
    // Bound elsewhere than the test client: the token is refused as invalid.
    expect(
      (await v1('GET', 'auth/token/lookup-self', undefined, far.auth.client_token)).status,
    ).toBe(403);
    await v1('POST', 'auth/token/roles/near', {
      token_bound_cidrs: '127.0.0.0/8,::1/128',
      token_num_uses: 3,
    });
    const fewer = await create({ num_uses: 2 }, 'auth/token/create/near');
    expect((await lookup(fewer.auth.client_token)).num_uses).toBe(2);
    const near = await v1('GET', 'auth/token/lookup-self', undefined, fewer.auth.client_token);
    expect(near.status).toBe(200);
    expect(near.data.bound_cidrs).toEqual(['127.0.0.0/8', '::1/128']);
    expect((await v1('POST', 'auth/token/roles/near', { token_num_uses: -1 })).json).toEqual({
      errors: ['token_num_uses cannot be negative'],
    });
    for (const role of ['bound', 'near']) await v1('DELETE', `auth/token/roles/${role}`);
  });
});

describe('token roles', () => {
  it('governs the policies, orphan flag, renewability and period of its tokens', async () => {
    expect((await v1('GET', 'auth/token/roles?list=true')).status).toBe(404);
    await v1('POST', 'sys/policies/acl/ops', {
      policy: 'path "aws/*" { capabilities = ["read"] }',
    });
    const w = await v1('POST', 'auth/token/roles/OPS', {
      allowed_policies: 'ops',
      orphan: true,
      renewable: false,
      token_period: '1h',
      path_suffix: 'ci',
    });
    expect(w.status, w.text).toBe(204);
    expect((await v1('GET', 'auth/token/roles?list=true')).data).toEqual({ keys: ['ops'] });
    expect((await v1('GET', 'auth/token/roles/ops')).data).toMatchObject({
      allowed_policies: ['ops'],
      orphan: true,
      renewable: false,
      token_period: 3600,
    });
    const made = await create({}, 'auth/token/create/ops');
    expect(made.auth).toMatchObject({
      policies: ['default', 'ops'],
      orphan: true,
      renewable: false,
      lease_duration: 3600,
    });
    expect(await lookup(made.auth.client_token)).toMatchObject({
      role: 'ops',
      path: 'auth/token/create/ops/ci',
      period: 3600,
    });
    const outside = await v1('POST', 'auth/token/create', { role_name: 'ops', policies: ['root'] });
    expect(outside.status).toBe(400);
    expect(outside.text).toContain("must be subset of the role's allowed policies");
    // A write changes only what it names.
    await v1('POST', 'auth/token/roles/ops', { renewable: true });
    expect((await v1('GET', 'auth/token/roles/ops')).data).toMatchObject({
      allowed_policies: ['ops'],
      renewable: true,
    });
    expect((await v1('DELETE', 'auth/token/roles/ops')).status).toBe(204);
    expect((await v1('POST', 'auth/token/create', { role_name: 'ops' })).text).toContain(
      'unknown role ops',
    );
  });

  it('tidy is accepted, with nothing left to clean', async () => {
    const r = await v1('POST', 'auth/token/tidy', {});
    expect(r.status).toBe(202);
    expect(r.warnings?.[0]).toContain('Tidy operation successfully started');
  });
});

describe('renewal survives a replay of the log', () => {
  it('the renewed expiry and its timer are rebuilt from the log', async () => {
    const { client_token: token } = (await create({ ttl: '1h', policies: ['default'] })).auth;
    await v1('POST', 'auth/token/renew', { token, increment: '5h' });
    const before = await lookup(token);
    t.app.projections.rebuildAll((after, limit) => t.app.core.store.readAll(after, limit));
    expect(await lookup(token)).toEqual(before);
    advance(2 * HOUR);
    await t.app.scheduler.tick();
    expect((await lookup(token)).ttl).toBe(3 * HOUR);
  });
});
