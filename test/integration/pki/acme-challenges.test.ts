import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/config.js';
import { acmeOrder, startAcmeApp } from '../../support/acme-app.js';
import { alpnServer, challengeDigest, txtServer } from '../../support/acme-responders.js';

type Json = Record<string, unknown>;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** An order for one identifier, its challenge of a type answered; returns the settled statuses. */
async function run(
  config: Partial<Config>,
  acme: Json,
  identifier: { type: 'dns' | 'ip'; value: string },
  type: string,
  ready: (keyAuthorization: string) => Promise<void>,
  rounds = 1,
) {
  const t = await startAcmeApp(config, acme);
  closers.push(() => t.close());
  const { c, url, token, orderUrl, offered } = await acmeOrder(t, identifier, type);
  await ready(c.keyAuthorization(token));
  await c.post(url, {});
  for (let i = 0; i < rounds; i++) {
    await t.settle();
    t.clock.advance(30_000);
  }
  c.forgetNonce();
  const after = (await c.post(url, undefined)).json as Json;
  const orderNow = (await c.post(orderUrl, undefined)).json as Json;
  return { challenge: after, order: orderNow, offered };
}

describe('dns-01 through the configured resolver', () => {
  it('validates a TXT record holding the digest, and offers only dns-01 for a wildcard', async () => {
    const dns = await txtServer();
    closers.push(() => dns.close());
    const out = await run(
      {},
      { dns_resolver: `127.0.0.1:${dns.port}` },
      { type: 'dns', value: '*.app.example.com' },
      'dns-01',
      async (ka) => {
        dns.records.set('_acme-challenge.app.example.com', [
          challengeDigest(ka).toString('base64url'),
        ]);
      },
    );
    expect(out.offered).toEqual(['dns-01']);
    expect(out.challenge.status).toBe('valid');
    expect(out.order.status).toBe('ready');
  });

  it('fails with the reason when the record holds another value', async () => {
    const dns = await txtServer();
    closers.push(() => dns.close());
    const out = await run(
      {},
      { dns_resolver: `127.0.0.1:${dns.port}` },
      { type: 'dns', value: 'app.example.com' },
      'dns-01',
      async () => {
        dns.records.set('_acme-challenge.app.example.com', ['not-the-digest']);
      },
      7,
    );
    expect(out.challenge.status).toBe('invalid');
    expect(out.challenge.error).toMatchObject({
      type: 'urn:ietf:params:acme:error:incorrectResponse',
    });
    expect(out.order.status).toBe('invalid');
  });
});

describe('tls-alpn-01 (RFC 8737)', () => {
  it('validates the acmeIdentifier certificate served over acme-tls/1', async () => {
    const tls = await alpnServer();
    closers.push(() => tls.close());
    const out = await run(
      { acmeTlsPort: tls.port },
      {},
      { type: 'ip', value: '127.0.0.1' },
      'tls-alpn-01',
      async (ka) => tls.present('127.0.0.1', challengeDigest(ka)),
    );
    expect(out.offered).toEqual(['http-01', 'tls-alpn-01']);
    expect(out.challenge.status).toBe('valid');
    expect(out.order.status).toBe('ready');
  });

  it('refuses an acmeIdentifier extension that is not critical', async () => {
    const tls = await alpnServer();
    closers.push(() => tls.close());
    const out = await run(
      { acmeTlsPort: tls.port },
      {},
      { type: 'ip', value: '127.0.0.1' },
      'tls-alpn-01',
      async (ka) => tls.present('127.0.0.1', challengeDigest(ka), { critical: false }),
      7,
    );
    expect(out.challenge.status).toBe('invalid');
    expect(String((out.challenge.error as Json).detail)).toContain('critical acmeIdentifier');
  });
});
