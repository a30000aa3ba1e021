import { describe, expect, it } from 'vitest';
import { errorsOf, raw, sharedDaemon } from '../support.js';

// Issue 14, finding 7 (part): policy names and mount paths follow the reference's rules.
const s = sharedDaemon();

const POLICY = { policy: 'path "a/*" { capabilities = ["read"] }' };
const policyNames = async () =>
  (
    (await raw(s.d.url, 'LIST', '/v1/sys/policies/acl', { token: s.root })).json as {
      data: { keys: string[] };
    }
  ).data.keys;
const mountPaths = async () =>
  Object.keys(
    ((await raw(s.d.url, 'GET', '/v1/sys/mounts', { token: s.root })).json as { data: object })
      .data,
  );

describe('policy names', () => {
  it.each(['%00', '..%2F..%2Fx', '%2E%2E', 'a%0Ab'])(
    '%s is not a name Keel stores',
    async (name) => {
      const r = await raw(s.d.url, 'PUT', `/v1/sys/policies/acl/${name}`, {
        token: s.root,
        body: POLICY,
      });
      expect([400, 404]).toContain(r.status);
    },
  );

  it.each([' x', 'x ', 'x\u00a0'])('%j (surrounding space) is a 400', async (name) => {
    const r = await raw(s.d.url, 'PUT', `/v1/sys/policies/acl/${encodeURIComponent(name)}`, {
      token: s.root,
      body: POLICY,
    });
    expect(r.status).toBe(400);
    expect(errorsOf(r)[0]).toMatch(/policy name/);
  });

  it('a token cannot be given a policy name that no policy could have', async () => {
    for (const name of ['\u0000', '../../x', '', 'a/b']) {
      const r = await raw(s.d.url, 'POST', '/v1/auth/token/create', {
        token: s.root,
        body: { policies: [name] },
      });
      expect(r.status).toBe(400);
      expect(errorsOf(r)[0]).toMatch(/policy name/);
    }
  });

  it('nothing was stored', async () => {
    const names = await policyNames();
    expect(names).toEqual(['default', 'root']);
  });
});

describe('mount paths', () => {
  it.each(['..%2Fsys', '%2E%2E', 'a%00b', 'x%2F..%2Fpki'])(
    '%s is not a mount path',
    async (path) => {
      const r = await raw(s.d.url, 'POST', `/v1/sys/mounts/${path}`, {
        token: s.root,
        body: { type: 'pki' },
      });
      expect([400, 404]).toContain(r.status);
    },
  );

  it.each(['a%20', '%20a', 'a*', 'a+', 'a%2F+%2Fb'])('%s is a 400', async (path) => {
    const r = await raw(s.d.url, 'POST', `/v1/sys/mounts/${path}`, {
      token: s.root,
      body: { type: 'pki' },
    });
    expect(r.status).toBe(400);
    expect(errorsOf(r)[0]).toMatch(/mount path/);
  });

  it('nothing was mounted', async () => {
    expect((await mountPaths()).sort()).toEqual(['aws/', 'pki/']);
  });
});
