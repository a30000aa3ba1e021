import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';

let t: TestApp;
let root: string;
beforeAll(async () => {
  t = await startTestApp({ config: { bodyLimitBytes: 2048 } });
  root = t.tokens.secrets.root_token;
});
afterAll(() => t.close());

const errors = (r: { json: unknown }) => (r.json as { errors: string[] }).errors;

describe('/v1 kernel', () => {
  it('answers sys/health without a token', async () => {
    const r = await t.request('GET', '/v1/sys/health');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ initialized: true, sealed: false });
  });

  it('sys/health: one process always leads (200, standby false); activecode is honoured', async () => {
    const r = await t.request('GET', '/v1/sys/health?standbycode=299');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ standby: false, performance_standby: false });
    expect((await t.request('GET', '/v1/sys/health?activecode=204')).status).toBe(204);
    expect((await t.request('HEAD', '/v1/sys/health?activecode=299')).status).toBe(299);
    const bad = await t.request('GET', '/v1/sys/health?activecode=banana');
    expect(bad.status).toBe(400);
    expect(errors(bad)[0]).toContain('activecode');
  });

  it('403 permission denied without a token; invalid token spelled like the reference', async () => {
    const none = await t.request('GET', '/v1/sys/mounts');
    expect(none.status).toBe(403);
    expect(none.json).toEqual({ errors: ['permission denied'] });
    expect(none.headers.get('content-type')).toBe('application/json');
    const bad = await t.request('GET', '/v1/sys/mounts', {
      token: 'hvs.nope',
      tokenHeader: 'x-vault-token',
    });
    expect(bad.status).toBe(403);
    expect(errors(bad)).toEqual([
      '2 errors occurred:\n\t* permission denied\n\t* invalid token\n\n',
    ]);
  });

  it.each(['bearer', 'x-vault-token', 'x-secrets-token'] as const)(
    'accepts the token as %s',
    async (tokenHeader) => {
      const r = await t.request('GET', '/v1/auth/token/lookup-self', { token: root, tokenHeader });
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ data: { policies: ['root'], id: root } });
    },
  );

  it('refuses response wrapping (X-Vault-Wrap-TTL), which it does not do, before anything is written', async () => {
    const before = t.app.core.store.lastPosition();
    for (const [method, path, body] of [
      ['POST', '/v1/auth/token/create', { policies: ['default'] }],
      ['GET', '/v1/auth/token/lookup-self', undefined],
    ] as const) {
      const r = await t.request(method, path, {
        token: root,
        tokenHeader: 'x-vault-token',
        headers: { 'x-vault-wrap-ttl': '60s' },
        ...(body === undefined ? {} : { body }),
      });
      expect(r.status, r.text).toBe(400);
      expect(errors(r)).toEqual([
        'response wrapping (X-Vault-Wrap-TTL) is not supported by Keel: the response would not be wrapped',
      ]);
    }
    expect(t.app.core.store.lastPosition()).toBe(before);
    // An empty header asks for nothing.
    const plain = await t.request('GET', '/v1/auth/token/lookup-self', {
      token: root,
      tokenHeader: 'x-vault-token',
      headers: { 'x-vault-wrap-ttl': '' },
    });
    expect(plain.status).toBe(200);
    // Nor are the wrapping endpoints served.
    const unwrap = await t.request('POST', '/v1/sys/wrapping/unwrap', {
      token: root,
      tokenHeader: 'x-vault-token',
      body: {},
    });
    expect(unwrap.status).toBe(404);
  });

  it('answers X-Vault-Namespace as Vault Community Edition does: from the root, the header unread', async () => {
    const plain = await t.request('GET', '/v1/auth/token/lookup-self', {
      token: root,
      tokenHeader: 'x-vault-token',
    });
    const namespaced = await t.request('GET', '/v1/auth/token/lookup-self', {
      token: root,
      tokenHeader: 'x-vault-token',
      headers: { 'x-vault-namespace': 'team-a/' },
    });
    expect(namespaced.status, namespaced.text).toBe(200);
    expect((namespaced.json as { data: unknown }).data).toEqual(
      (plain.json as { data: unknown }).data,
    );
  });

  it('400 error parsing JSON, 413 oversized, and nothing written', async () => {
    const before = t.app.core.store.lastPosition();
    const bad = await t.request('PUT', '/v1/sys/policies/acl/p', {
      token: root,
      rawBody: '{"policy":',
    });
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ errors: ['error parsing JSON'] });
    const big = await t.request('PUT', '/v1/sys/policies/acl/p', {
      token: root,
      body: { policy: 'x'.repeat(5000) },
    });
    expect(big.status).toBe(413);
    expect(t.app.core.store.lastPosition()).toBe(before);
  });

  it('reads JSON sent with a form content type, as the reference does, and forms too', async () => {
    const json = await t.request('PUT', '/v1/sys/policies/acl/formjson', {
      token: root,
      rawBody: '{"policy": "path \\"a/*\\" { capabilities = [\\"read\\"] }"}',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(json.status).toBe(204);
    const form = await t.request('PUT', '/v1/sys/policies/acl/form', {
      token: root,
      rawBody: `policy=${encodeURIComponent('path "b/*" { capabilities = ["read"] }')}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(204);
  });

  it('404 for a path no engine is mounted at, 405 for an unsupported operation', async () => {
    const r = await t.request('GET', '/v1/nowhere/x', { token: root });
    expect(r.status).toBe(404);
    expect(r.json).toEqual({
      errors: ['no handler for route "nowhere/x". route entry not found.'],
    });
    const m = await t.request('PATCH', '/v1/sys/mounts', { token: root });
    expect(m.status).toBe(405);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(errors(m)).toEqual(['1 error occurred:\n\t* unsupported operation\n\n']);
    const sysUnknown = await t.request('GET', '/v1/sys/nothing', { token: root });
    expect(sysUnknown.status).toBe(404);
  });

  it('LIST works as a method and as ?list=true (Go bool forms); a bad list value is 400', async () => {
    const viaMethod = await t.request('LIST', '/v1/sys/policies/acl', { token: root });
    const viaQuery = await t.request('GET', '/v1/sys/policies/acl?list=TRUE', { token: root });
    expect(viaMethod.status).toBe(200);
    expect((viaMethod.json as { data: unknown }).data).toEqual(
      (viaQuery.json as { data: unknown }).data,
    );
    const bad = await t.request('GET', '/v1/sys/policies/acl?list=yes', { token: root });
    expect(bad.status).toBe(400);
  });
});

describe('ACL policies, tokens and mounts', () => {
  it('a token only reaches what its policies allow', async () => {
    const policy =
      'path "sys/policies/acl/*" { capabilities = ["read", "list"] }\npath "sys/policies/acl/locked" { capabilities = ["deny"] }';
    expect(
      (await t.request('PUT', '/v1/sys/policies/acl/reader', { token: root, body: { policy } }))
        .status,
    ).toBe(204);
    const created = await t.request('POST', '/v1/auth/token/create', {
      token: root,
      body: { policies: ['reader'], display_name: 'ci', ttl: '1h' },
    });
    expect(created.status).toBe(200);
    const auth = (
      created.json as { auth: { client_token: string; policies: string[]; lease_duration: number } }
    ).auth;
    expect(auth.policies).toEqual(['default', 'reader']);
    expect(auth.lease_duration).toBe(3600);
    const token = auth.client_token;
    expect((await t.request('GET', '/v1/sys/policies/acl/reader', { token })).status).toBe(200);
    expect((await t.request('LIST', '/v1/sys/policies/acl', { token })).status).toBe(200);
    expect((await t.request('GET', '/v1/sys/policies/acl/locked', { token })).status).toBe(403);
    expect(
      (await t.request('PUT', '/v1/sys/policies/acl/reader', { token, body: { policy } })).status,
    ).toBe(403);
    expect((await t.request('GET', '/v1/sys/mounts', { token })).status).toBe(403);
    const self = await t.request('GET', '/v1/auth/token/lookup-self', { token });
    expect(self.json).toMatchObject({
      data: { display_name: 'token-ci', policies: ['default', 'reader'], ttl: 3600 },
    });
    // Child tokens cannot gain policies their parent lacks.
    const escalate = await t.request('POST', '/v1/auth/token/create', {
      token,
      body: { policies: ['root'] },
    });
    expect(escalate.status).toBe(403);
  });

  it('a token stops working when its TTL passes (fake clock) and when revoked', async () => {
    const created = await t.request('POST', '/v1/auth/token/create', {
      token: root,
      body: { ttl: '10m' },
    });
    const token = (created.json as { auth: { client_token: string } }).auth.client_token;
    expect((await t.request('GET', '/v1/auth/token/lookup-self', { token })).status).toBe(200);
    t.clock.advance(10 * 60 * 1000);
    expect((await t.request('GET', '/v1/auth/token/lookup-self', { token })).status).toBe(403);
    const other = await t.request('POST', '/v1/auth/token/create', { token: root, body: {} });
    const second = (other.json as { auth: { client_token: string } }).auth.client_token;
    expect(
      (await t.request('POST', '/v1/auth/token/revoke', { token: root, body: { token: second } }))
        .status,
    ).toBe(204);
    expect((await t.request('GET', '/v1/auth/token/lookup-self', { token: second })).status).toBe(
      403,
    );
  });

  it('a changed policy, mount or token counts from the next request on', async () => {
    // Each is read (and remembered) first, then changed: the next request sees the change.
    const write = (policy: string) =>
      t.request('PUT', '/v1/sys/policies/acl/mover', { token: root, body: { policy } });
    expect((await write('path "sys/mounts" { capabilities = ["deny"] }')).status).toBe(204);
    const created = await t.request('POST', '/v1/auth/token/create', {
      token: root,
      body: { policies: ['mover'] },
    });
    const token = (created.json as { auth: { client_token: string } }).auth.client_token;
    expect((await t.request('GET', '/v1/sys/mounts', { token })).status).toBe(403);
    expect((await write('path "sys/mounts" { capabilities = ["read"] }')).status).toBe(204);
    expect((await t.request('GET', '/v1/sys/mounts', { token })).status).toBe(200);
    await t.request('DELETE', '/v1/sys/policies/acl/mover', { token: root });
    expect((await t.request('GET', '/v1/sys/mounts', { token })).status).toBe(403);

    expect((await t.request('GET', '/v1/later/roles', { token: root })).status).toBe(404);
    const mounted = await t.request('POST', '/v1/sys/mounts/later', {
      token: root,
      body: { type: 'pki' },
    });
    expect(mounted.status).toBe(204);
    expect((await t.request('LIST', '/v1/later/roles', { token: root })).status).toBe(404);
    expect(errors(await t.request('LIST', '/v1/later/roles', { token: root }))).toEqual([]);
    await t.request('DELETE', '/v1/sys/mounts/later', { token: root });
    expect(errors(await t.request('LIST', '/v1/later/roles', { token: root }))).toEqual([
      'no handler for route "later/roles". route entry not found.',
    ]);

    await t.request('POST', '/v1/auth/token/revoke-self', { token });
    expect((await t.request('GET', '/v1/auth/token/lookup-self', { token })).status).toBe(403);
  });

  it('policy parse errors are 400 with the diagnostic; root cannot be changed', async () => {
    const r = await t.request('PUT', '/v1/sys/policies/acl/broken', {
      token: root,
      body: { policy: 'path "x" {' },
    });
    expect(r.status).toBe(400);
    expect(errors(r)[0]).toMatch(/^failed to parse policy: /);
    const rootWrite = await t.request('PUT', '/v1/sys/policies/acl/root', {
      token: root,
      body: { policy: '' },
    });
    expect(rootWrite.status).toBe(400);
    expect((await t.request('GET', '/v1/sys/policies/acl/absent', { token: root })).json).toEqual({
      errors: [],
    });
  });

  it('mounts: unknown types, reserved and overlapping paths are refused', async () => {
    const unknown = await t.request('POST', '/v1/sys/mounts/kv', {
      token: root,
      body: { type: 'kv' },
    });
    expect(unknown.status).toBe(400);
    expect(errors(unknown)).toEqual(['plugin not found in the catalog: kv']);
    const missing = await t.request('POST', '/v1/sys/mounts/x', { token: root, body: {} });
    expect(errors(missing)).toEqual(['missing required field "type"']);
    const list = await t.request('GET', '/v1/sys/mounts', { token: root });
    expect(list.status).toBe(200);
  });
});
