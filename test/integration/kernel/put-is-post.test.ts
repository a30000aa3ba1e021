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

/** Every POST path an engine's router declares, its parameters filled in. */
function postPaths(type: string): string[] {
  const engine = t.app.contexts.find((c) => c.engine?.type === type)?.engine;
  if (engine === undefined) throw new Error(`no ${type} engine`);
  const router = engine.routes({
    path: `${type}/`,
    type,
    accessor: `${type}_put`,
    description: '',
  });
  const paths = router.stack
    .filter((layer) => layer.methods.includes('POST'))
    .map((layer) =>
      String(layer.path)
        .replace(/:ref\b/, 'default')
        .replace(/:serial\b/, '01')
        .replace(/:[a-z_]+/g, 'x')
        .replace(/\*[a-z_]*/g, 'x'),
    );
  return [...new Set(paths)];
}

describe('PUT is POST on every write path', () => {
  it.each(['pki', 'aws'])('the %s engine never answers PUT with 405', async (type) => {
    const paths = postPaths(type);
    expect(paths.length).toBeGreaterThan(type === 'pki' ? 20 : 5);
    for (const path of paths) {
      const res = await t.request('PUT', `/v1/${type}${path}`, { token: root, body: {} });
      expect(res.status, `PUT ${path}: ${res.text}`).not.toBe(405);
      expect(res.text, `PUT ${path}`).not.toContain('unsupported operation');
    }
  });

  it('a PUT write lands like a POST one (a PKI role, a sys policy)', async () => {
    const role = await t.request('PUT', '/v1/pki/roles/put', {
      token: root,
      body: { allowed_domains: 'example.com', ttl: '1h' },
    });
    expect(role.status, role.text).toBe(200);
    const read = await t.request('GET', '/v1/pki/roles/put', { token: root });
    expect(read.json).toMatchObject({ data: { allowed_domains: ['example.com'], ttl: '1h' } });
    const policy = await t.request('PUT', '/v1/sys/policies/acl/put', {
      token: root,
      body: { policy: 'path "pki/*" { capabilities = ["read"] }' },
    });
    expect(policy.status).toBe(204);
    const token = await t.request('PUT', '/v1/auth/token/create', {
      token: root,
      body: { policies: ['put'] },
    });
    expect(token.status, token.text).toBe(200);
  });

  it('a PUT sys/mounts enables a mount, and PUT sys/leases/renew/:id reaches the lease', async () => {
    const mount = await t.request('PUT', '/v1/sys/mounts/pki-put', {
      token: root,
      body: { type: 'pki' },
    });
    expect(mount.status, mount.text).toBe(204);
    const renew = await t.request('PUT', '/v1/sys/leases/renew/aws/creds/none/abc', {
      token: root,
      body: {},
    });
    expect(renew.status).toBe(400);
    expect(renew.json).toEqual({ errors: ['lease not found'] });
  });
});
