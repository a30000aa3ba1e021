import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

let t: PkiTestApp;
let serial: string;
beforeAll(async () => {
  t = await startPkiApp();
  await t.pki('POST', 'root/generate/internal', { common_name: 'Open Root', key_type: 'ec' });
  await t.pki('POST', 'roles/web', { allowed_domains: 'example.com', allow_subdomains: true });
  serial = (await t.pki('POST', 'issue/web', { common_name: 'a.example.com' })).data
    .serial_number as string;
});
afterAll(async () => t.close());

const anonymous = (method: string, path: string, body?: unknown) =>
  t.request(method, `/v1/pki/${path}`, { token: null, ...(body === undefined ? {} : { body }) });

describe('fetch paths without a token, as the reference lists them', () => {
  it.each([
    ['ca', 'application/pkix-cert'],
    ['ca/pem', 'application/pem-certificate-chain'],
    ['ca_chain', 'application/pkix-cert'],
    ['crl', 'application/pkix-crl'],
    ['crl/pem', 'application/x-pem-file'],
    ['cert/ca', 'application/json'],
    ['cert/ca_chain', 'application/json'],
    ['cert/crl', 'application/json'],
    ['issuer/default/pem', 'application/pem-certificate-chain'],
    ['issuer/default/der', 'application/pkix-cert'],
    ['issuer/default/json', 'application/json'],
    ['issuer/default/crl', 'application/json'],
    ['issuer/default/crl/der', 'application/pkix-crl'],
    ['issuer/default/crl/pem', 'application/x-pem-file'],
  ])('GET %s answers 200 %s', async (path, type) => {
    const res = await anonymous('GET', path);
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-type')).toBe(type);
  });

  it('serves cert/:serial and its raw forms, and LIST issuers/', async () => {
    for (const suffix of ['', '/raw', '/raw/pem']) {
      const res = await anonymous('GET', `cert/${serial}${suffix}`);
      expect(res.status, `cert/${serial}${suffix}`).toBe(200);
    }
    const list = await anonymous('LIST', 'issuers');
    expect(list.status, list.text).toBe(200);
    expect((list.json as { data: { keys: string[] } }).data.keys).toHaveLength(1);
  });

  it('an invalid token is no obstacle there, as the reference ignores it', async () => {
    const res = await t.request('GET', '/v1/pki/ca/pem', { token: 'hvs.nope' });
    expect(res.status).toBe(200);
  });

  it.each([
    ['GET', 'roles/web'],
    ['LIST', 'certs'],
    ['LIST', 'certs/revoked'],
    ['GET', 'issuers'],
    ['GET', 'issuer/default'],
    ['GET', 'config/crl'],
    ['GET', 'config/urls'],
    ['POST', 'issue/web'],
    ['POST', 'revoke'],
    ['POST', 'crl/rotate'],
    ['POST', 'tidy'],
    ['GET', 'cabundle'],
    ['GET', 'issuer/default/crl/x'],
  ])('%s %s still needs a token (403) and changes nothing', async (method, path) => {
    const before = t.app.core.store.lastPosition();
    const res = await anonymous(method, path, method === 'POST' ? {} : undefined);
    expect(res.status, res.text).toBe(403);
    expect(res.json).toEqual({ errors: ['permission denied'] });
    expect(t.app.core.store.lastPosition()).toBe(before);
  });

  it('a token whose policies deny the fetch paths still fetches them', async () => {
    await t.request('PUT', '/v1/sys/policies/acl/none', {
      token: t.tokens.secrets.root_token,
      body: { policy: 'path "pki/*" { capabilities = ["deny"] }' },
    });
    const created = await t.request('POST', '/v1/auth/token/create', {
      token: t.tokens.secrets.root_token,
      body: { policies: ['none'] },
    });
    const token = (created.json as { auth: { client_token: string } }).auth.client_token;
    expect((await t.request('GET', '/v1/pki/ca/pem', { token })).status).toBe(200);
    expect((await t.request('GET', '/v1/pki/roles/web', { token })).status).toBe(403);
  });
});

describe('callers without a token are rate limited per address', () => {
  it('the kernel limit applies to fetches without a token, not to those with one', async () => {
    const limited = await startPkiApp({
      rateLimit: { enabled: true, perSecond: 2, runListsPerMinute: 60 },
    });
    try {
      const get = (token: string | null) =>
        limited.request('GET', '/v1/pki/ca/pem', { token, tokenHeader: 'x-vault-token' });
      expect((await get(null)).status).toBe(204);
      expect((await get(null)).status).toBe(204);
      const over = await get(null);
      expect(over.status).toBe(429);
      expect(over.json).toEqual({
        errors: ['request path "pki/ca/pem": rate limit quota exceeded'],
      });
      expect(over.headers.get('retry-after')).toBe('1');
      expect((await get(limited.tokens.secrets.root_token)).status).toBe(204);
      limited.clock.advance(1000);
      expect((await get(null)).status).toBe(204);
    } finally {
      await limited.close();
    }
  });
});
