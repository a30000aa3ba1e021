import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
});
afterAll(async () => t.close());

describe('the unsealed CA key cache', () => {
  it('holds a key once it signed, and no longer once the key is deleted', async () => {
    const root = await t.pki('POST', 'root/generate/internal', {
      common_name: 'cache root',
      key_type: 'ec',
      issuer_name: 'cached',
      key_name: 'cached-key',
    });
    expect(root.status).toBe(200);
    const keyId = root.data.key_id as string;
    const authority = t.app.pki.authority;
    await t.pki('POST', 'roles/any', { allow_any_name: true, key_type: 'ec' });
    expect((await t.pki('POST', 'issue/any', { common_name: 'a.example.com' })).status).toBe(200);
    expect(authority.holdsKey(keyId)).toBe(true);

    expect((await t.pki('DELETE', 'issuer/cached')).status).toBe(200);
    expect(authority.holdsKey(keyId)).toBe(true);
    expect((await t.pki('DELETE', 'key/cached-key')).status).toBe(204);
    expect(authority.holdsKey(keyId)).toBe(false);
  });
});

describe('the rows the issuing path remembers', () => {
  it("a role's event forgets that role alone; a configuration event forgets every row", async () => {
    const authority = t.app.pki.authority;
    await t.pki('POST', 'root/generate/internal', { common_name: 'memo root', key_type: 'ec' });
    const mount = t.app.core.db
      .prepare<[], { accessor: string }>("SELECT accessor FROM mounts WHERE path = 'pki/'")
      .get()!.accessor;
    const spy = vi.spyOn(authority.q, 'config');
    const configReads = () => spy.mock.calls.length;
    try {
      await t.pki('POST', 'roles/first', { allow_any_name: true, ttl: '1h' });
      authority.defaults(mount);
      const before = configReads();
      await t.pki('POST', 'roles/second', { allow_any_name: true, ttl: '2h' });
      authority.defaults(mount);
      expect(configReads()).toBe(before);
      // The rewritten role itself is read afresh.
      expect((authority.role(mount, 'second') as { ttl: number }).ttl).toBe(7200);
      await t.pki('PATCH', 'roles/second', { ttl: '3h' });
      expect((authority.role(mount, 'second') as { ttl: number }).ttl).toBe(10_800);
      // A configuration event forgets the rest.
      await t.pki('POST', 'config/urls', { ocsp_servers: 'http://ocsp.example/' });
      authority.defaults(mount);
      expect(configReads()).toBeGreaterThan(before);
    } finally {
      spy.mockRestore();
    }
  });
});
