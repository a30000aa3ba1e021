import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';
import { fixtureRsaKey } from '../../support/pki-openssl.js';
import { privateKeyPem } from '../../../src/x509/keys.js';

let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
  await t.pki('POST', 'root/generate/internal', {
    common_name: 'Keel Root',
    key_type: 'ec',
    ttl: '8760h',
  });
  await t.pki('POST', 'roles/web', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
    ttl: '1h',
  });
  await t.pki('POST', 'roles/nostore', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
    no_store: true,
    ttl: '1h',
  });
});
afterAll(async () => t.close());

const crlSerials = async () => {
  const res = await t.request('GET', '/v1/pki/crl', { token: t.tokens.secrets.root_token });
  expect(res.headers.get('content-type')).toBe('application/pkix-crl');
  const crl = await t.pki('GET', 'cert/crl');
  return crl.data.certificate as string;
};

describe('revoke', () => {
  it('revokes by serial (hyphens, any case), rebuilds the CRL, and is idempotent', async () => {
    const issued = await t.pki('POST', 'issue/web', { common_name: 'a.example.com' });
    const serial = issued.data.serial_number as string;
    const before = await t.pki('GET', 'issuer/default/crl');
    const res = await t.pki('POST', 'revoke', {
      serial_number: serial.replace(/:/g, '-').toUpperCase(),
    });
    expect(res.status, res.text).toBe(200);
    expect(res.data).toEqual({
      revocation_time: Math.floor(t.clock.now().getTime() / 1000),
      revocation_time_rfc3339: '2026-01-01T00:00:00Z',
      state: 'revoked',
    });
    const after = await t.pki('GET', 'issuer/default/crl');
    expect(after.data.crl).not.toEqual(before.data.crl);
    t.clock.advance(60_000);
    const again = await t.pki('POST', 'revoke', { serial_number: serial });
    expect(again.data.revocation_time).toBe(res.data.revocation_time);
    const read = await t.pki('GET', `cert/${encodeURIComponent(serial)}`);
    expect(read.data).toMatchObject({
      revocation_time: res.data.revocation_time,
      state: 'revoked',
    });
    expect(read.data.issuer_id).toBeTruthy();
    const revoked = await t.pki('LIST', 'certs/revoked');
    expect(revoked.data.keys).toContain(serial);
    expect(await crlSerials()).toContain('BEGIN X509 CRL');
  });

  it('revokes by certificate, including one that was never stored', async () => {
    const issued = await t.pki('POST', 'issue/nostore', { common_name: 'ns.example.com' });
    expect(issued.status, issued.text).toBe(200);
    const serial = issued.data.serial_number as string;
    expect((await t.pki('LIST', 'certs')).data.keys).not.toContain(serial);
    const bySerial = await t.pki('POST', 'revoke', { serial_number: serial });
    expect(bySerial.json).toEqual({ errors: [`certificate with serial ${serial} not found.`] });
    const byCert = await t.pki('POST', 'revoke', { certificate: issued.data.certificate });
    expect(byCert.status, byCert.text).toBe(200);
    expect((await t.pki('GET', `cert/${serial}`)).data.state).toBe('revoked');
  });

  it('refuses an expired certificate with the reference warning and records nothing', async () => {
    const issued = await t.pki('POST', 'issue/web', { common_name: 'old.example.com', ttl: '1m' });
    t.clock.advance(120_000);
    const res = await t.pki('POST', 'revoke', { serial_number: issued.data.serial_number });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      data: null,
      warnings: [
        `certificate with serial ${issued.data.serial_number as string} already expired; refusing to add to CRL`,
      ],
    });
    expect((await t.pki('GET', `cert/${issued.data.serial_number as string}`)).data.state).toBe(
      'issued',
    );
  });

  it.each([
    [{}, 'The serial number or certificate to revoke must be provided.'],
    [
      { serial_number: '01', certificate: 'x' },
      'Must provide either the certificate or the serial to revoke; not both.',
    ],
    [{ serial_number: 'aa:bb' }, 'certificate with serial aa:bb not found.'],
  ])('refuses %j', async (body, message) => {
    const res = await t.pki('POST', 'revoke', body);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ errors: [message] });
  });

  it('refuses to put an issuer on its own CRL, and a certificate from another CA', async () => {
    const issuer = await t.pki('GET', 'issuer/default');
    const res = await t.pki('POST', 'revoke', { serial_number: issuer.data.serial_number });
    expect(res.json).toEqual({
      errors: [
        `adding issuer (id: ${issuer.data.issuer_id as string}) to its own CRL is not allowed`,
      ],
    });
    await t.request('POST', '/v1/sys/mounts/pki-other', {
      token: t.tokens.secrets.root_token,
      body: { type: 'pki' },
    });
    const other = await t.request('POST', '/v1/pki-other/root/generate/internal', {
      token: t.tokens.secrets.root_token,
      body: { common_name: 'Other', key_type: 'ec' },
    });
    const foreign = other.json as { data: Record<string, string> };
    const refused = await t.pki('POST', 'revoke', { certificate: foreign.data.certificate });
    expect((refused.json as { errors: string[] }).errors[0]).toContain(
      'unable to verify signature on presented cert from any present issuer in this mount',
    );
  });

  it('revoke-with-key proves possession, and refuses the wrong key with 400', async () => {
    const a = await t.pki('POST', 'issue/web', { common_name: 'k1.example.com' });
    const b = await t.pki('POST', 'issue/web', { common_name: 'k2.example.com' });
    const wrong = await t.pki('POST', 'revoke-with-key', {
      serial_number: a.data.serial_number,
      private_key: b.data.private_key,
    });
    expect(wrong.status).toBe(400);
    expect(wrong.json).toEqual({
      errors: ["provided private key does not match certificate's public key"],
    });
    const wrongType = await t.pki('POST', 'revoke-with-key', {
      serial_number: a.data.serial_number,
      private_key: privateKeyPem(fixtureRsaKey(1)),
    });
    expect(wrongType.json).toEqual({
      errors: ["provided private key type does not match certificate's public key type"],
    });
    const missing = await t.pki('POST', 'revoke-with-key', { serial_number: a.data.serial_number });
    expect(missing.json).toEqual({
      errors: ['Must have private key to revoke via the /revoke-with-key path.'],
    });
    const short = await t.pki('POST', 'revoke-with-key', {
      serial_number: a.data.serial_number,
      private_key: '/tmp/key.pem',
    });
    expect((short.json as { errors: string[] }).errors[0]).toContain('was too short');
    const junk = await t.pki('POST', 'revoke-with-key', {
      serial_number: a.data.serial_number,
      private_key: 'x'.repeat(80),
    });
    expect(junk.json).toEqual({
      errors: ['provided key PEM block contained no data or failed to parse'],
    });
    const ok = await t.pki('POST', 'revoke-with-key', {
      certificate: a.data.certificate,
      private_key: a.data.private_key,
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.data.state).toBe('revoked');
  });

  it('with auto_rebuild the CRL waits for crl/rotate; config/crl expiry sets nextUpdate', async () => {
    const cfg = await t.pki('POST', 'config/crl', { auto_rebuild: true, expiry: '48h' });
    expect(cfg.data).toMatchObject({ auto_rebuild: true, expiry: '48h' });
    const issued = await t.pki('POST', 'issue/web', { common_name: 'auto.example.com' });
    const before = (await t.pki('GET', 'issuer/default/crl')).data.crl;
    const res = await t.pki('POST', 'revoke', { serial_number: issued.data.serial_number });
    expect((res.json as { warnings: string[] }).warnings[0]).toContain('auto_rebuild');
    expect((await t.pki('GET', 'issuer/default/crl')).data.crl).toBe(before);
    // the schedule rebuilds it a grace period (12h) before the 48h expiry
    t.clock.advance(35 * 3600_000);
    await t.settle();
    expect((await t.pki('GET', 'issuer/default/crl')).data.crl).toBe(before);
    t.clock.advance(2 * 3600_000);
    await t.settle();
    const rebuilt = (await t.pki('GET', 'issuer/default/crl')).data.crl;
    expect(rebuilt).not.toBe(before);
    const rotated = await t.pki('GET', 'crl/rotate');
    expect(rotated.data).toEqual({ success: true });
    const crlPem = (await t.pki('GET', 'issuer/default/crl')).data.crl as string;
    expect(crlPem).not.toBe(rebuilt);
    const bad = await t.pki('POST', 'config/crl', {
      auto_rebuild: true,
      expiry: '1h',
      auto_rebuild_grace_period: '2h',
    });
    expect((bad.json as { errors: string[] }).errors[0]).toContain(
      'must be strictly shorter than CRL expiry',
    );
    const badExpiry = await t.pki('POST', 'config/crl', { expiry: 'soon' });
    expect((badExpiry.json as { errors: string[] }).errors[0]).toContain(
      'given expiry could not be decoded',
    );
    const delta = await t.pki('POST', 'config/crl', { enable_delta: true, auto_rebuild: false });
    expect(delta.json).toEqual({
      errors: [
        'Delta CRLs cannot be enabled when auto rebuilding is disabled as the complete CRL is always regenerated!',
      ],
    });
    await t.pki('POST', 'config/crl', { auto_rebuild: false, expiry: '72h' });
  });
});

describe('tidy', () => {
  it('removes certificates expired beyond the safety buffer and reports it in tidy-status', async () => {
    expect((await t.pki('GET', 'tidy-status')).data.state).toBeDefined();
    const issued = await t.pki('POST', 'issue/web', { common_name: 'tidy.example.com', ttl: '1m' });
    t.clock.advance(4 * 24 * 3600_000);
    const none = await t.pki('POST', 'tidy', {});
    expect(none.status).toBe(202);
    expect((none.json as { warnings: string[] }).warnings[0]).toContain(
      'no tidy operations were set',
    );
    const res = await t.pki('POST', 'tidy', {
      tidy_cert_store: true,
      tidy_revoked_certs: true,
      safety_buffer: '72h',
    });
    expect(res.status).toBe(202);
    // The work runs off the request, when the schedule fires.
    expect((await t.pki('GET', 'tidy-status')).data.state).toBe('Running');
    await t.settle();
    const status = await t.pki('GET', 'tidy-status');
    expect(status.data).toMatchObject({ state: 'Finished', tidy_cert_store: true });
    expect(status.data.cert_store_deleted_count as number).toBeGreaterThan(0);
    expect((await t.pki('GET', `cert/${issued.data.serial_number as string}`)).status).toBe(404);
    const zero = await t.pki('POST', 'tidy', { tidy_cert_store: true, safety_buffer: 0 });
    expect(zero.json).toEqual({ errors: ['safety_buffer must be greater than zero'] });
  });
});
