import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';
import { openssl, scratch } from '../../support/pki-openssl.js';
import { expectCrlFoldHeld } from '../../support/pki-crl.js';

let t: PkiTestApp;
const dir = scratch();
let ca = '';
beforeAll(async () => {
  t = await startPkiApp();
  ca = dir.path(
    'ca.pem',
    (await t.pki('POST', 'root/generate/internal', { common_name: 'Delta', key_type: 'ec' })).data
      .certificate as string,
  );
  await t.pki('POST', 'roles/web', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    ttl: '1h',
  });
});
afterAll(async () => {
  await t.close();
  dir.done();
});

/** openssl's reading of a CRL fetched without a token, verified against the CA. */
async function crlText(path: string): Promise<string> {
  const res = await t.request('GET', `/v1/pki/${path}`, { token: null });
  expect(res.status, res.text).toBe(200);
  const file = dir.path(`${path.replace(/\W/g, '_')}-${Math.random()}.pem`, res.text);
  const out = openssl(['crl', '-in', file, '-noout', '-text', '-CAfile', ca, '-verify']);
  expect(out.ok, out.out).toBe(true);
  expect(out.out).toContain('verify OK');
  return out.out;
}
const serialHex = (s: string) => s.replace(/:/g, '').toUpperCase();
async function issue(cn: string): Promise<string> {
  const res = await t.pki('POST', 'issue/web', { common_name: cn });
  expect(res.status, res.text).toBe(200);
  return res.data.serial_number as string;
}

describe('config/crl: what only an enterprise edition enables', () => {
  it.each([
    [{ unified_crl: true }, 'unified_crl can only be enabled on an enterprise edition'],
    [
      { unified_crl_on_existing_paths: true },
      'unified_crl_on_existing_paths cannot be enabled if unified_crl is disabled',
    ],
    [
      { cross_cluster_revocation: true },
      'Global, cross-cluster revocation queue (cross_cluster_revocation) can only be enabled on an enterprise edition.',
    ],
  ])('%j is refused with 400, nothing written; reads show false', async (body, message) => {
    const before = t.app.core.store.lastPosition();
    const res = await t.pki('POST', 'config/crl', body);
    expect(res.status).toBe(400);
    expect((res.json as { errors: string[] }).errors).toEqual([message]);
    expect(t.app.core.store.lastPosition()).toBe(before);
    expect((await t.pki('GET', 'config/crl')).data).toMatchObject({
      unified_crl: false,
      unified_crl_on_existing_paths: false,
      cross_cluster_revocation: false,
    });
  });
});

describe('delta CRLs', () => {
  it('enable_delta needs auto_rebuild, with the reference message', async () => {
    const res = await t.pki('POST', 'config/crl', { enable_delta: true });
    expect(res.status).toBe(400);
    expect((res.json as { errors: string[] }).errors).toEqual([
      'Delta CRLs cannot be enabled when auto rebuilding is disabled as the complete CRL is always regenerated!',
    ]);
    const warn = await t.pki('GET', 'crl/rotate-delta');
    expect(warn.json).toMatchObject({
      data: { success: true },
      warnings: ['requested rebuild of delta CRL when delta CRL is not enabled; this is a no-op'],
    });
  });

  it('a revocation goes into the delta CRL (Delta CRL Indicator = the base number) until the complete CRL is rebuilt', async () => {
    const before = await issue('before.example.com');
    await t.pki('POST', 'revoke', { serial_number: before });
    // (a revocation in the very instant a complete CRL is built is listed in both)
    t.clock.advance(1000);
    const on = await t.pki('POST', 'config/crl', { auto_rebuild: true, enable_delta: true });
    expect(on.status, on.text).toBe(200);
    expect(on.data).toMatchObject({ enable_delta: true, auto_rebuild: true });
    const base = await crlText('crl/pem');
    const baseNumber = /X509v3 CRL Number: *\n\s*(\d+)/.exec(base)?.[1];
    expect(base).toContain(serialHex(before));
    expect(base).not.toContain('Delta CRL Indicator');

    t.clock.advance(1000);
    const after = await issue('after.example.com');
    const revoked = await t.pki('POST', 'revoke', { serial_number: after });
    expect(revoked.status, revoked.text).toBe(200);
    const delta = await crlText('crl/delta/pem');
    expect(delta).toMatch(
      new RegExp(`X509v3 Delta CRL Indicator: critical\\s*\\n\\s*${baseNumber}`),
    );
    expect(delta).toContain(serialHex(after));
    expect(delta).not.toContain(serialHex(before));
    expect(await crlText('crl/pem')).not.toContain(serialHex(after));
    const perIssuer = await t.pki('GET', 'issuer/default/crl/delta');
    expect(perIssuer.data.crl).toBe(
      (await t.request('GET', '/v1/pki/crl/delta/pem', { token: null })).text,
    );
    const der = await t.request('GET', '/v1/pki/issuer/default/crl/delta/der', { token: null });
    expect(der.headers.get('content-type')).toBe('application/pkix-crl');

    t.clock.advance(1000);
    await t.pki('GET', 'crl/rotate');
    expect(await crlText('crl/pem')).toContain(serialHex(after));
    const fresh = await crlText('crl/delta/pem');
    expect(fresh).not.toContain(serialHex(after));
    const numbers = [...(await crlText('crl/pem')).matchAll(/CRL Number: *\n\s*(\d+)/g)];
    expect(Number(/CRL Number: *\n\s*(\d+)/.exec(fresh)?.[1])).toBe(Number(numbers[0]?.[1]) + 1);
  });

  it('config/urls delta_crl_distribution_points puts the Freshest CRL extension in certificates', async () => {
    const urls = await t.pki('POST', 'config/urls', {
      delta_crl_distribution_points: 'http://127.0.0.1:8200/v1/pki/crl/delta',
    });
    expect(urls.status, urls.text).toBe(200);
    expect(urls.data.delta_crl_distribution_points).toEqual([
      'http://127.0.0.1:8200/v1/pki/crl/delta',
    ]);
    const leaf = await t.pki('POST', 'issue/web', { common_name: 'fresh.example.com' });
    const text = openssl(['x509', '-noout', '-text'], leaf.data.certificate as string).out;
    expect(text).toMatch(
      /X509v3 Freshest CRL:\s*\n\s*Full Name:\s*\n\s*URI:http:\/\/127\.0\.0\.1:8200\/v1\/pki\/crl\/delta/,
    );
    const bad = await t.pki('POST', 'config/urls', { delta_crl_distribution_points: 'not a url' });
    expect(bad.status).toBe(400);
    await t.pki('POST', 'config/urls', { delta_crl_distribution_points: [] });
  });

  it('crl/rotate-delta rebuilds it; replay restores the same delta bytes', async () => {
    const res = await t.pki('GET', 'crl/rotate-delta');
    expect(res.json).toMatchObject({ data: { success: true }, warnings: null });
    // The last CRL is a delta: the rows' fold is the delta's number at its version.
    expectCrlFoldHeld(t);
    const before = t.app.projections.dump();
    t.app.projections.rebuildAll((after, limit) => t.app.core.store.readAll(after, limit));
    expect(t.app.projections.dump()).toEqual(before);
  });
});
