import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultRole, roleToWire } from '../../../src/secrets/pki/role.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';
import { fixtureRsaKey } from '../../support/pki-openssl.js';
import { privateKeyPem } from '../../../src/x509/keys.js';
import { expectEachProjectionRebuildsAlone } from '../../support/rebuild.js';

let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
});
afterAll(async () => t.close());

const errors = (res: { json: unknown }) => (res.json as { errors: string[] }).errors;

describe('roles', () => {
  it('an empty LIST is 404 with no errors; a missing role reads as 404', async () => {
    const list = await t.pki('LIST', 'roles');
    expect(list.status).toBe(404);
    expect(list.json).toEqual({ errors: [] });
    expect((await t.pki('GET', 'roles/none')).status).toBe(404);
  });

  it('POST writes every field with its default and replaces; PATCH merges; LIST and DELETE', async () => {
    const created = await t.pki('POST', 'roles/web', {
      allowed_domains: ['example.com'],
      allow_subdomains: true,
    });
    expect(created.status).toBe(200);
    expect(created.data).toEqual(
      roleToWire({ ...defaultRole(), allowed_domains: ['example.com'], allow_subdomains: true }),
    );
    expect((created.json as { warnings: string[] }).warnings[0]).toContain(
      'no default issuing certificate',
    );
    const patched = await t.pki('PATCH', 'roles/web', { ttl: '6h' });
    expect(patched.data).toMatchObject({
      ttl: '6h',
      allowed_domains: ['example.com'],
      allow_subdomains: true,
    });
    const replaced = await t.pki('POST', 'roles/web', { ttl: '6h' });
    expect(replaced.data).toMatchObject({
      ttl: '6h',
      allowed_domains: [],
      allow_subdomains: false,
    });
    await t.pki('POST', 'roles/api', {});
    expect(
      (await t.request('GET', '/v1/pki/roles?list=true', { token: t.tokens.secrets.root_token }))
        .json,
    ).toMatchObject({ data: { keys: ['api', 'web'] } });
    expect((await t.pki('DELETE', 'roles/api')).status).toBe(204);
    expect((await t.pki('LIST', 'roles')).data.keys).toEqual(['web']);
    const missing = await t.pki('PATCH', 'roles/nope', { ttl: '1h' });
    expect(errors(missing)).toEqual(['Unable to fetch role entry to patch']);
    const bad = await t.pki('POST', 'roles/bad', { ttl: '2h', max_ttl: '1h' });
    expect(bad.status).toBe(400);
    expect((await t.pki('GET', 'roles/bad')).status).toBe(404);
    expect((await t.pki('POST', 'issue/nope', { common_name: 'x' })).json).toEqual({
      errors: ['unknown role: nope'],
    });
  });
});

describe('issuers, keys and defaults', () => {
  it('issues nothing without an issuer, with a clear 400', async () => {
    await t.pki('POST', 'roles/ec', { allow_any_name: true, key_type: 'ec' });
    expect((await t.pki('POST', 'issue/ec', { common_name: 'x.example.com' })).json).toEqual({
      errors: ['no default issuer currently configured'],
    });
    expect(
      (await t.request('GET', '/v1/pki/ca', { token: t.tokens.secrets.root_token })).status,
    ).toBe(204);
  });

  it('refuses bad root types and key sizes', async () => {
    expect(errors(await t.pki('POST', 'root/generate/bogus', {}))).toEqual([
      'the "exported" path parameter must be "internal", "existing", exported" or "kms"',
    ]);
    expect(
      errors(await t.pki('POST', 'root/generate/internal', { key_type: 'rsa', key_bits: 1024 })),
    ).toEqual(['RSA keys < 2048 bits are unsafe and not supported: got 1024']);
    expect(
      errors(await t.pki('POST', 'root/generate/internal', { key_type: 'ec', key_bits: 123 })),
    ).toEqual(['unsupported bit length for EC key: 123']);
  });

  it('generates roots, lists and reads issuers, renames, sets the default, and deletes', async () => {
    const a = await t.pki('POST', 'root/generate/internal', {
      common_name: 'A',
      key_type: 'ec',
      issuer_name: 'a',
      key_name: 'ka',
    });
    expect(a.data).toMatchObject({
      issuer_name: 'a',
      key_name: 'ka',
      issuing_ca: a.data.certificate,
    });
    expect(typeof a.data.expiration).toBe('string');
    const b = await t.pki('POST', 'issuers/generate/root/existing', {
      common_name: 'B',
      key_ref: 'ka',
      issuer_name: 'b',
    });
    expect(b.status, b.text).toBe(200);
    expect(b.data.key_id).toBe(a.data.key_id);
    const list = await t.pki('LIST', 'issuers');
    expect(list.data.keys).toEqual([a.data.issuer_id, b.data.issuer_id]);
    expect((await t.pki('GET', 'config/issuers')).data).toEqual({
      default: a.data.issuer_id,
      default_follows_latest_issuer: false,
    });
    const read = await t.pki('GET', 'issuer/b');
    expect(read.data).toMatchObject({
      issuer_id: b.data.issuer_id,
      leaf_not_after_behavior: 'err',
      usage: 'read-only,issuing-certificates,crl-signing,ocsp-signing',
    });
    const upd = await t.pki('POST', 'issuer/b', {
      issuer_name: 'bee',
      leaf_not_after_behavior: 'truncate',
      usage: 'read-only',
    });
    expect(upd.data).toMatchObject({
      issuer_name: 'bee',
      leaf_not_after_behavior: 'truncate',
      usage: 'read-only',
    });
    expect(
      errors(await t.pki('POST', 'issuer/bee', { leaf_not_after_behavior: 'sometimes' })),
    ).toEqual([
      'Unknown value for field `leaf_not_after_behavior`. Possible values are `err`, `truncate`, and `permit`.',
    ]);
    expect(errors(await t.pki('POST', 'issuer/bee', { issuer_name: 'a' }))).toEqual([
      'issuer name (a) already in use',
    ]);
    const set = await t.pki('POST', 'config/issuers', { default: 'bee' });
    expect(set.data).toEqual({ default: b.data.issuer_id, default_follows_latest_issuer: false });
    // bee is read-only now: no issuing through it
    expect(errors(await t.pki('POST', 'issue/ec', { common_name: 'x.example.com' }))[0]).toContain(
      'does not have the issuing-certificates usage',
    );
    await t.pki('PATCH', 'issuer/bee', { usage: 'read-only,issuing-certificates,crl-signing' });
    expect(
      (await t.pki('POST', 'issue/ec', { common_name: 'x.example.com', ttl: '1h' })).status,
    ).toBe(200);
    const del = await t.pki('DELETE', 'issuer/bee');
    expect((del.json as { warnings: string[] }).warnings[0]).toContain('default issuer');
    expect((await t.pki('GET', 'config/issuers')).data.default).toBe('');
    expect(errors(await t.pki('GET', 'issuer/bee'))).toEqual([
      'unable to resolve issuer id for reference: bee',
    ]);
  });

  it('leaf_not_after_behavior: err refuses, truncate shortens, permit outlives', async () => {
    await t.pki('POST', 'config/issuers', { default: 'a' });
    const expiry = Number(
      (await t.pki('GET', 'issuer/a')).data.not_after
        ? Date.parse((await t.pki('GET', 'issuer/a')).data.not_after as string) / 1000
        : 0,
    );
    const long = { common_name: 'x.example.com', ttl: '9000h' };
    await t.pki('POST', 'roles/ec', { allow_any_name: true, key_type: 'ec', max_ttl: '10000h' });
    expect(errors(await t.pki('POST', 'issue/ec', long))[0]).toMatch(
      /^cannot satisfy request, as TTL would result in notAfter of .* that is beyond the expiration of the CA certificate at /,
    );
    await t.pki('PATCH', 'issuer/a', { leaf_not_after_behavior: 'truncate' });
    expect((await t.pki('POST', 'issue/ec', long)).data.expiration).toBe(String(expiry));
    await t.pki('PATCH', 'issuer/a', { leaf_not_after_behavior: 'permit' });
    expect(Number((await t.pki('POST', 'issue/ec', long)).data.expiration)).toBeGreaterThan(expiry);
  });

  it('keys: generate, import, list, read, rename, refuse deleting a used key, config/keys', async () => {
    const gen = await t.pki('POST', 'keys/generate/internal', {
      key_type: 'ed25519',
      key_name: 'edkey',
    });
    expect(gen.data).toMatchObject({ key_name: 'edkey', key_type: 'ed25519' });
    expect(gen.data.private_key).toBeUndefined();
    const exported = await t.pki('POST', 'keys/generate/exported', {
      key_type: 'ec',
      key_bits: 384,
    });
    expect(exported.data.private_key).toMatch(/BEGIN EC PRIVATE KEY/);
    const imported = await t.pki('POST', 'keys/import', {
      pem_bundle: privateKeyPem(fixtureRsaKey(2)),
      key_name: 'rsakey',
    });
    expect(imported.data).toMatchObject({ key_name: 'rsakey', key_type: 'rsa', key_bits: 2048 });
    const keys = (await t.pki('LIST', 'keys')).data.keys as string[];
    expect(keys).toContain(gen.data.key_id);
    expect((await t.pki('GET', 'key/rsakey')).data).toEqual({
      key_id: imported.data.key_id,
      key_name: 'rsakey',
      key_type: 'rsa',
      key_bits: 2048,
    });
    expect((await t.pki('POST', 'key/rsakey', { key_name: 'rsa2' })).data.key_name).toBe('rsa2');
    expect(errors(await t.pki('DELETE', 'key/ka'))[0]).toContain('key is in use by issuers');
    expect((await t.pki('DELETE', 'key/edkey')).status).toBe(204);
    expect((await t.pki('POST', 'config/keys', { default: 'rsa2' })).data).toEqual({
      default: imported.data.key_id,
    });
    expect(errors(await t.pki('POST', 'config/keys', { default: 'nope' }))).toEqual([
      'unable to resolve key id for reference: nope',
    ]);
    expect(errors(await t.pki('POST', 'keys/generate/existing', {}))[0]).toContain(
      'path parameter must be',
    );
  });

  it('imports bundles, refuses keys on import/cert, and links intermediate/set-signed to its key', async () => {
    await t.request('POST', '/v1/sys/mounts/pki-other', {
      token: t.tokens.secrets.root_token,
      body: { type: 'pki' },
    });
    const other = await t.request('POST', '/v1/pki-other/root/generate/exported', {
      token: t.tokens.secrets.root_token,
      body: { common_name: 'Imported', key_type: 'ec' },
    });
    const exported = other.json as { data: Record<string, string> };
    const certOnly = await t.pki('POST', 'issuers/import/cert', {
      pem_bundle: `${exported.data.private_key as string}\n${exported.data.certificate as string}`,
    });
    expect(errors(certOnly)).toEqual([
      'private keys found in the PEM bundle but not allowed by the path; use /issuers/import/bundle',
    ]);
    const bundle = await t.pki('POST', 'config/ca', {
      pem_bundle: `${exported.data.private_key as string}\n${exported.data.certificate as string}`,
    });
    expect(bundle.status, bundle.text).toBe(200);
    expect((bundle.data.imported_issuers as string[]).length).toBe(1);
    expect((bundle.data.imported_keys as string[]).length).toBe(1);
    const again = await t.pki('POST', 'issuers/import/bundle', {
      pem_bundle: exported.data.certificate,
    });
    expect(again.data.existing_issuers).toEqual(bundle.data.imported_issuers);
    const csr = await t.pki('POST', 'intermediate/generate/internal', {
      common_name: 'Int',
      key_type: 'ec',
    });
    const signed = await t.pki('POST', 'issuer/a/sign-intermediate', {
      csr: csr.data.csr,
      common_name: 'Int',
      ttl: '1h',
    });
    const set = await t.pki('POST', 'intermediate/set-signed', {
      certificate: signed.data.certificate,
    });
    const id = (set.data.imported_issuers as string[])[0] ?? '';
    expect(set.data.mapping).toEqual({ [id]: csr.data.key_id });
    const leafNotCa = await t.pki('POST', 'issue/ec', { common_name: 'leaf', ttl: '1m' });
    expect(
      errors(
        await t.pki('POST', 'issuers/import/cert', { pem_bundle: leafNotCa.data.certificate }),
      )[0],
    ).toContain('non-CA certificate');
  });

  it('config/urls go into certificates issued afterwards', async () => {
    const res = await t.pki('POST', 'config/urls', {
      issuing_certificates: ['http://ca.example/ca'],
      crl_distribution_points: 'http://ca.example/crl',
    });
    expect(res.data).toMatchObject({
      issuing_certificates: ['http://ca.example/ca'],
      crl_distribution_points: ['http://ca.example/crl'],
      ocsp_servers: [],
    });
    expect(errors(await t.pki('POST', 'config/urls', { ocsp_servers: 'not a url' }))).toEqual([
      'invalid URL: not a url',
    ]);
  });
});

describe('fetch endpoints', () => {
  it('serve the default CA, chain, CRL and certificates with their content types', async () => {
    const token = t.tokens.secrets.root_token;
    const get = (p: string) => t.request('GET', `/v1/pki/${p}`, { token });
    const ca = await get('ca');
    expect(ca.headers.get('content-type')).toBe('application/pkix-cert');
    const caPem = await get('ca/pem');
    expect(caPem.headers.get('content-type')).toBe('application/pem-certificate-chain');
    expect(caPem.text).toMatch(/^-----BEGIN CERTIFICATE-----[\s\S]*-----END CERTIFICATE-----$/);
    expect((await get('ca_chain')).text).toContain(caPem.text);
    expect(((await get('cert/ca')).json as { data: unknown }).data).toEqual({
      certificate: caPem.text,
      revocation_time: 0,
      revocation_time_rfc3339: '',
    });
    expect((await get('crl')).headers.get('content-type')).toBe('application/pkix-crl');
    expect((await get('crl/pem')).text).toMatch(/^-----BEGIN X509 CRL-----/);
    expect(
      ((await get('cert/crl')).json as { data: { certificate: string } }).data.certificate,
    ).toMatch(/^-----BEGIN X509 CRL-----/);
    const issued = await t.pki('POST', 'issue/ec', { common_name: 'fetch.example.com', ttl: '1h' });
    const serial = issued.data.serial_number as string;
    expect((await get(`cert/${serial.replace(/:/g, '-')}`)).json).toMatchObject({
      data: {
        certificate: issued.data.certificate,
        revocation_time: 0,
        revocation_time_rfc3339: '',
      },
    });
    expect((await get(`cert/${encodeURIComponent(serial)}/raw`)).headers.get('content-type')).toBe(
      'application/pkix-cert',
    );
    expect((await get(`cert/${serial}/raw/pem`)).text).toBe(issued.data.certificate);
    expect((await get('cert/00:11')).json).toEqual({ errors: [] });
    for (const p of ['json', 'der', 'pem', 'crl', 'crl/der', 'crl/pem'])
      expect((await get(`issuer/a/${p}`)).status).toBe(200);
    expect(
      ((await get('issuer/default/json')).json as { data: { issuer_name: string } }).data
        .issuer_name,
    ).toBe('a');
  });

  it('DELETE root removes every issuer and key, with a warning', async () => {
    const res = await t.pki('DELETE', 'root');
    expect(res.status).toBe(200);
    expect((res.json as { warnings: string[] }).warnings[0]).toContain(
      'DELETE /root deletes all keys and issuers',
    );
    expect((await t.pki('LIST', 'issuers')).status).toBe(404);
    expect((await t.pki('LIST', 'keys')).status).toBe(404);
    expect(
      (await t.request('GET', '/v1/pki/ca/pem', { token: t.tokens.secrets.root_token })).status,
    ).toBe(204);
  });
});

describe('events and read models', () => {
  it('issued, revoked, issuer and key events are in the log; CA keys are sealed; replay rebuilds the read models', async () => {
    await t.pki('POST', 'root/generate/internal', { common_name: 'Replay', key_type: 'ec' });
    await t.pki('POST', 'roles/ec', { allow_any_name: true, key_type: 'ec', ttl: '1h' });
    const issued = await t.pki('POST', 'issue/ec', { common_name: 'replay.example.com' });
    await t.pki('POST', 'revoke', { serial_number: issued.data.serial_number });
    const events = [...t.app.core.store.pages()].flat();
    const types = new Set(events.map((e) => e.type));
    for (const ty of [
      'CertificateIssued',
      'CertificateRevoked',
      'PkiIssuerCreated',
      'PkiKeyCreated',
      'PkiRoleWritten',
      'PkiCrlBuilt',
    ])
      expect(types).toContain(ty);
    const keyEvent = events.find((e) => e.type === 'PkiKeyCreated');
    expect(JSON.stringify(keyEvent?.data)).not.toContain('PRIVATE KEY');
    expect(JSON.stringify(events)).not.toMatch(/BEGIN (EC |RSA )?PRIVATE KEY/);
    const before = t.app.projections.dump();
    t.app.projections.rebuildAll((after, limit) => t.app.core.store.readAll(after, limit));
    expect(t.app.projections.dump()).toEqual(before);
    expectEachProjectionRebuildsAlone(t.app.projections, (a, l) => t.app.core.store.readAll(a, l));
  });
});
