import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issuerCrlSerials, pkiIssuer, startPkiAppWithRoot } from '../../support/pki-crl.js';
import type { PkiTestApp } from '../../support/pki-app.js';

/**
 * Certificate leases (a role's `generate_lease`), as the reference makes them: the issue answer
 * carries a lease that ends at the certificate's notAfter and cannot be renewed; `sys/leases`
 * finds, lists and revokes it, and revoking it revokes the certificate (its CRL lists it), as do
 * revoking the token that obtained it and disabling the mount.
 */
let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiAppWithRoot();
  await t.pki('POST', 'roles/leased', {
    allow_any_name: true,
    key_type: 'ec',
    ttl: '1h',
    generate_lease: true,
  });
});
afterAll(async () => t.close());
afterEach(() => vi.restoreAllMocks());

interface Envelope {
  lease_id: string;
  lease_duration: number;
  renewable: boolean;
  warnings: string[] | null;
  data: Record<string, unknown>;
}
const v1 = async (method: string, path: string, body?: unknown, token?: string) => {
  const res = await t.request(method, `/v1/${path}`, {
    token: token ?? t.tokens.secrets.root_token,
    tokenHeader: 'x-vault-token',
    ...(body === undefined ? {} : { body }),
  });
  return { status: res.status, text: res.text, json: res.json as Envelope };
};
const lookup = (leaseId: string) => v1('PUT', 'sys/leases/lookup', { lease_id: leaseId });
const revoked = (serial: string) => pkiIssuer(t) && issuerCrlSerials(t).has(serial);
const certRevoked = async (serial: string) =>
  ((await t.pki('GET', `cert/${serial}`)).data.revocation_time as number) > 0;

async function issueLeased(path = 'pki/issue/leased', token?: string): Promise<Envelope> {
  const res = await v1('POST', path, { common_name: 'a.example.com' }, token);
  expect(res.status, res.text).toBe(200);
  return res.json;
}

describe('a role with generate_lease', () => {
  it('answers a lease that ends with the certificate and is not renewable', async () => {
    const out = await issueLeased();
    expect(out.lease_id).toMatch(/^pki\/issue\/leased\/[A-Za-z0-9]{24}$/);
    expect(out.renewable).toBe(false);
    // The reference's TTL is the time until notAfter, in whole seconds.
    expect(out.lease_duration).toBe(3600);
    expect(out.warnings).toBeNull();

    const found = await lookup(out.lease_id);
    expect(found.status, found.text).toBe(200);
    expect(found.json.data).toMatchObject({
      id: out.lease_id,
      renewable: false,
      ttl: 3600,
      last_renewal: null,
    });
    expect(Date.parse(found.json.data.expire_time as string)).toBe(
      (out.data.expiration as number) * 1000,
    );
    const renew = await v1('PUT', 'sys/leases/renew', { lease_id: out.lease_id });
    expect(renew.status).toBe(400);
    expect(renew.text).toContain('lease is not renewable');
  });

  it('is listed under its path, and revoking it revokes the certificate onto the CRL', async () => {
    const out = await issueLeased();
    const serial = out.data.serial_number as string;
    const list = await v1('LIST', 'sys/leases/lookup/pki/issue/leased');
    expect(list.status, list.text).toBe(200);
    expect(list.json.data.keys).toContain(out.lease_id.split('/').at(-1));
    expect((await v1('LIST', 'sys/leases/lookup/pki')).json.data.keys).toEqual(['issue/']);

    const gone = await v1('PUT', 'sys/leases/revoke', { lease_id: out.lease_id });
    expect(gone.status, gone.text).toBe(204);
    expect(await certRevoked(serial)).toBe(true);
    expect(revoked(serial)).toBe(true);
    expect((await lookup(out.lease_id)).status).toBe(400);
  });

  it("outlives a revoke of its certificate, as the reference's does, and then ends once", async () => {
    const out = await issueLeased();
    const serial = out.data.serial_number as string;
    expect((await t.pki('POST', 'revoke', { serial_number: serial })).status).toBe(200);
    expect((await lookup(out.lease_id)).status).toBe(200);
    const before = t.app.core.store.lastPosition();
    expect((await v1('PUT', 'sys/leases/revoke', { lease_id: out.lease_id })).status).toBe(204);
    expect((await lookup(out.lease_id)).status).toBe(400);
    expect(await certRevoked(serial)).toBe(true);
    // The lease's end alone was recorded; a second revocation records nothing.
    expect(t.app.core.store.lastPosition()).toBe(before + 1);
    expect((await v1('PUT', 'sys/leases/revoke', { lease_id: out.lease_id })).status).toBe(204);
    expect(t.app.core.store.lastPosition()).toBe(before + 1);
  });

  it('makes leases on sign, sign-verbatim and the issuer paths, named after each', async () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const dir = mkdtempSync(join(tmpdir(), 'keel-lease-csr-'));
    try {
      writeFileSync(join(dir, 'key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
      const csr = execFileSync('openssl', [
        'req',
        '-new',
        '-key',
        join(dir, 'key.pem'),
        '-subj',
        '/CN=b.example.com',
      ]).toString();
      for (const path of ['sign/leased', 'sign-verbatim/leased', 'issuer/default/sign/leased']) {
        const res = await v1('POST', `pki/${path}`, { csr, common_name: 'b.example.com' });
        expect(res.status, res.text).toBe(200);
        expect(res.json.lease_id).toMatch(new RegExp(`^pki/${path}/[A-Za-z0-9]{24}$`));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const byIssuer = await issueLeased('pki/issuer/default/issue/leased');
    expect(byIssuer.lease_id).toMatch(/^pki\/issuer\/default\/issue\/leased\//);
    // sign-verbatim without a role, and a role without generate_lease, make none.
    const plain = await v1('POST', 'pki/issue/web', { common_name: 'c.example.com' });
    expect(plain.json.lease_id).toBe('');
    expect(plain.json.lease_duration).toBe(0);
  });

  it('ends at notAfter with the certificate, which stays unrevoked', async () => {
    const out = await issueLeased();
    t.clock.advance(3600_000 + 1000);
    expect((await lookup(out.lease_id)).status).toBe(400);
    expect(await certRevoked(out.data.serial_number as string)).toBe(false);
  });

  it('goes with the token that obtained it', async () => {
    const made = await v1('POST', 'auth/token/create', { policies: ['root'] });
    const token = (made.json as unknown as { auth: { client_token: string } }).auth.client_token;
    const out = await issueLeased('pki/issue/leased', token);
    const serial = out.data.serial_number as string;
    expect((await v1('POST', 'auth/token/revoke', { token })).status).toBe(204);
    await t.settle();
    expect(await certRevoked(serial)).toBe(true);
    expect((await lookup(out.lease_id)).status).toBe(400);
  });

  it("answers a lease it does not know with the reference's words", async () => {
    const renew = await v1('PUT', 'sys/leases/renew', { lease_id: 'pki/issue/leased/nope' });
    expect(renew.status).toBe(400);
    expect(renew.text).toContain('lease not found');
  });

  it('revoke-prefix answers a failed CRL build with a 500, the revocation and the lease end kept; revoke-force goes on', async () => {
    const failing = () =>
      vi.spyOn(t.app.pki.authority, 'signer').mockImplementation(() => {
        throw new Error('the sealed key cannot be opened');
      });
    const first = await issueLeased();
    failing();
    const refused = await v1('PUT', 'sys/leases/revoke-prefix/pki/issue/leased');
    expect(refused.status).toBe(500);
    expect(refused.text).toContain('the sealed key cannot be opened');
    vi.restoreAllMocks();
    expect(await certRevoked(first.data.serial_number as string)).toBe(true);
    expect((await lookup(first.lease_id)).status).toBe(400);

    const second = await issueLeased();
    failing();
    const forced = await v1('PUT', 'sys/leases/revoke-force/pki/issue/leased');
    expect(forced.status, forced.text).toBe(204);
    vi.restoreAllMocks();
    expect(await certRevoked(second.data.serial_number as string)).toBe(true);
    expect((await lookup(second.lease_id)).status).toBe(400);
  });

  it('goes with its mount: disabling it revokes every leased certificate first', async () => {
    expect((await v1('POST', 'sys/mounts/leasing', { type: 'pki' })).status).toBe(204);
    await v1('POST', 'leasing/root/generate/internal', { common_name: 'L', key_type: 'ec' });
    await v1('POST', 'leasing/roles/leased', {
      allow_any_name: true,
      ttl: '1h',
      generate_lease: true,
    });
    const out = await issueLeased('leasing/issue/leased');
    const mounts = (await v1('GET', 'sys/mounts')).json.data as Record<
      string,
      { accessor: string }
    >;
    const accessor = mounts['leasing/']!.accessor;
    expect((await v1('DELETE', 'sys/mounts/leasing')).status).toBe(204);
    const row = t.app.pki.authority.q.cert(accessor, out.data.serial_number as string);
    expect(row?.revoked_at).not.toBeNull();
  });
});
