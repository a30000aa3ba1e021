import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
});
afterAll(async () => t.close());

describe('pki smoke', () => {
  it('generates a root, issues, revokes', async () => {
    const root = await t.pki('POST', 'root/generate/internal', {
      common_name: 'Keel Root',
      key_type: 'ec',
      ttl: '8760h',
    });
    expect(root.status, root.text).toBe(200);
    const role = await t.pki('POST', 'roles/web', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
    });
    expect(role.status, role.text).toBe(200);
    const issued = await t.pki('POST', 'issue/web', { common_name: 'www.example.com', ttl: '1h' });
    expect(issued.status, issued.text).toBe(200);
    const revoked = await t.pki('POST', 'revoke', { serial_number: issued.data.serial_number });
    expect(revoked.status, revoked.text).toBe(200);
    const list = await t.pki('LIST', 'certs');
    expect(list.status, list.text).toBe(200);
    const crl = await t.request('GET', '/v1/pki/crl/pem', { token: t.tokens.secrets.root_token });
    expect(crl.text).toContain('BEGIN X509 CRL');
  });
});
