import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

/**
 * `LIST certs/detailed` (OpenBao's): every stored certificate's serial with its common name,
 * issuer, key, validity and first DNS names, checked against node's own X.509 reading of the
 * certificates the engine returned.
 */

let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
});
afterAll(async () => t.close());

const rfc3339 = (text: string) => new Date(text).toISOString().replace(/\.000Z$/, 'Z');

describe('LIST certs/detailed', () => {
  it('is 404 on a mount with no certificates, like every empty list', async () => {
    const res = await t.pki('LIST', 'certs/detailed');
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ errors: [] });
  });

  it('lists the root and each stored leaf with what node reads from their certificates', async () => {
    const root = await t.pki('POST', 'root/generate/internal', {
      common_name: 'Keel Detail Root',
      organization: 'Keel',
      key_type: 'ec',
      ttl: '720h',
    });
    await t.pki('POST', 'roles/web', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'rsa',
      key_bits: 2048,
      ttl: '1h',
    });
    await t.pki('POST', 'roles/nostore', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      no_store: true,
      ttl: '1h',
    });
    const names = ['b', 'c', 'd', 'e', 'f', 'g'].map((n) => `${n}.example.com`);
    const leaf = await t.pki('POST', 'issue/web', {
      common_name: 'a.example.com',
      alt_names: names.join(','),
    });
    const unstored = await t.pki('POST', 'issue/nostore', { common_name: 'x.example.com' });

    const res = await t.pki('LIST', 'certs/detailed');
    expect(res.status, res.text).toBe(200);
    const keys = res.data.keys as string[];
    expect(keys).toEqual((await t.pki('LIST', 'certs')).data.keys);
    expect(keys).not.toContain(unstored.data.serial_number);
    const info = res.data.key_info as Record<string, Record<string, unknown>>;

    for (const [serial, pem, cn] of [
      [root.data.serial_number, root.data.certificate, 'Keel Detail Root'],
      [leaf.data.serial_number, leaf.data.certificate, 'a.example.com'],
    ] as [string, string, string][]) {
      const x = new X509Certificate(pem);
      const dns = (x.subjectAltName ?? '')
        .split(', ')
        .filter((s) => s.startsWith('DNS:'))
        .map((s) => s.slice(4));
      expect(info[serial]).toEqual({
        common_name: cn,
        issuer: 'CN=Keel Detail Root,O=Keel',
        key_type: x.publicKey.asymmetricKeyType === 'rsa' ? 'rsa' : 'ec',
        key_bits:
          x.publicKey.asymmetricKeyDetails?.modulusLength ??
          (x.publicKey.asymmetricKeyDetails?.namedCurve === 'prime256v1' ? 256 : -1),
        not_after: rfc3339(x.validTo),
        not_before: rfc3339(x.validFrom),
        dns_names: dns.slice(0, 5),
      });
    }
    // Seven DNS names on the leaf (its common name and six more): the list shows five.
    expect(info[leaf.data.serial_number as string]?.dns_names).toHaveLength(5);
    expect(info[leaf.data.serial_number as string]?.key_bits).toBe(2048);
  });

  it('answers a plain read of the path as an unknown one, and a token without list is refused', async () => {
    expect((await t.pki('GET', 'certs/detailed')).status).toBe(404);
    const policy = await t.request('PUT', '/v1/sys/policies/acl/reader', {
      token: t.tokens.secrets.root_token,
      body: { policy: 'path "pki/cert/*" { capabilities = ["read"] }' },
    });
    expect(policy.status).toBeLessThan(300);
    const token = await t.request('POST', '/v1/auth/token/create', {
      token: t.tokens.secrets.root_token,
      body: { policies: ['reader'] },
    });
    const client = (token.json as { auth: { client_token: string } }).auth.client_token;
    const denied = await t.request('LIST', '/v1/pki/certs/detailed', {
      token: client,
      tokenHeader: 'x-vault-token',
    });
    expect(denied.status).toBe(403);
  });
});
