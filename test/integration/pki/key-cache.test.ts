import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
