import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
  await t.pki('POST', 'root/generate/internal', { common_name: 'Keel Root', key_type: 'ec' });
  await t.pki('POST', 'roles/big', { allow_any_name: true, key_type: 'rsa', key_bits: 4096, ttl: '1h' });
});
afterAll(async () => t.close());

describe('key generation off the event loop', () => {
  it('answers other requests while an RSA-4096 key is being generated', async () => {
    const order: string[] = [];
    const issuing = t.pki('POST', 'issue/big', { common_name: 'big.example.com' }).then((res) => {
      order.push('issued');
      return res;
    });
    for (let i = 0; i < 5; i++) {
      const res = await t.pki('GET', 'config/urls');
      expect(res.status).toBe(200);
      order.push(`read${i}`);
    }
    const issued = await issuing;
    expect(issued.status, issued.text).toBe(200);
    expect(order.indexOf('issued')).toBe(5);
  });
});
