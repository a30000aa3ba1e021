import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/config.js';
import { acmeOrder, startAcmeApp, type AcmeTestApp } from '../../support/acme-app.js';
import { http01Server, type AcmeTestClient } from '../../support/acme-client.js';
import { alpnServer, challengeDigest, txtServer } from '../../support/acme-responders.js';

/**
 * How validation is retried, paced and reached, with the fake clock: the reference's retry policy
 * (six retries, the n-th 5·n s after the failure before it, then invalid), `Retry-After` on what a
 * client polls, and `config/acme`'s dns_resolver for http-01 and tls-alpn-01.
 */
type Json = Record<string, unknown>;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function app(config: Partial<Config>, acme: Json = {}): Promise<AcmeTestApp> {
  const t = await startAcmeApp(config, acme);
  closers.push(() => t.close());
  return t;
}

/** A POST-as-GET after the fake clock moved (the kept nonce may have expired). */
async function read(c: AcmeTestClient, url: string) {
  c.forgetNonce();
  return c.post(url, undefined);
}

const attemptEvents = (t: AcmeTestApp) =>
  [...t.app.core.store.pages()]
    .flat()
    .filter((e) => e.type === 'AcmeChallengeAttemptFailed' || e.type === 'AcmeChallengeFailed');

describe('the retry policy (the reference challenge engine)', () => {
  it('retries six times, the n-th retry 5·n s after the failure before it, then ends invalid', async () => {
    const web = await http01Server();
    closers.push(() => web.close());
    const t = await app({ acmeHttpPort: web.port });
    const o = await acmeOrder(t, { type: 'ip', value: '127.0.0.1' }, 'http-01');
    // The responder has no answer for the token: every attempt fails (404).
    await o.c.post(o.url, {});
    await t.settle();
    expect(attemptEvents(t)).toHaveLength(1);
    for (let n = 1; n <= 6; n++) {
      const now = await read(o.c, o.url);
      expect((now.json as Json).status).toBe('processing');
      expect(((now.json as Json).error as Json).detail).toContain('answered HTTP 404');
      expect(now.headers.get('retry-after')).toBe(String(5 * n));
      // Not a moment early.
      t.clock.advance(5000 * n - 1);
      await t.settle();
      expect(attemptEvents(t)).toHaveLength(n);
      t.clock.advance(1);
      await t.settle();
      expect(attemptEvents(t)).toHaveLength(n + 1);
    }
    const events = attemptEvents(t);
    expect(events.map((e) => e.type)).toEqual([
      ...Array<string>(6).fill('AcmeChallengeAttemptFailed'),
      'AcmeChallengeFailed',
    ]);
    events.slice(0, 6).forEach((e, i) => {
      const data = e.data as { attempt: number; retryAt: string };
      expect(data.attempt).toBe(i + 1);
      expect(Date.parse(data.retryAt) - Date.parse(e.time)).toBe(5000 * (i + 1));
    });
    const failed = await read(o.c, o.url);
    expect((failed.json as Json).status).toBe('invalid');
    expect(failed.headers.get('retry-after')).toBeNull();
    expect(((failed.json as Json).error as Json).type).toBe(
      'urn:ietf:params:acme:error:incorrectResponse',
    );
    expect(((await read(o.c, o.authzUrl)).json as Json).status).toBe('invalid');
    expect(((await read(o.c, o.orderUrl)).json as Json).status).toBe('invalid');
  });

  it('ends invalid against a server trickling 64 KiB every 0.5 s, each attempt cut at the body cap', async () => {
    const held: number[] = [];
    const server = createServer((req, res) => {
      const opened = Date.now();
      res.writeHead(200);
      const send = () => res.write(Buffer.alloc(64 * 1024, 0x61));
      send();
      const timer = setInterval(send, 500);
      req.socket.on('close', () => {
        clearInterval(timer);
        held.push(Date.now() - opened);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const t = await app({ acmeHttpPort: (server.address() as AddressInfo).port });
    const o = await acmeOrder(t, { type: 'ip', value: '127.0.0.1' }, 'http-01');
    await o.c.post(o.url, {});
    for (let round = 0; round < 7; round++) {
      await t.settle();
      t.clock.advance(30_000);
    }
    const failed = (await read(o.c, o.url)).json as Json;
    expect(failed.status).toBe('invalid');
    expect((failed.error as Json).detail).toBe('127.0.0.1 answered more than 512 bytes');
    expect(((await read(o.c, o.authzUrl)).json as Json).status).toBe('invalid');
    expect(attemptEvents(t)).toHaveLength(7);
    expect(held).toHaveLength(7);
    // Each attempt closed the connection at the first chunk: no attempt lasted a second tick.
    for (const ms of held) expect(ms).toBeLessThan(500);
  });
});

describe('Retry-After while a validation is processing', () => {
  it('is on the challenge, its authorization and the pending order, and gone once valid', async () => {
    const web = await http01Server();
    closers.push(() => web.close());
    const t = await app({ acmeHttpPort: web.port });
    const o = await acmeOrder(t, { type: 'ip', value: '127.0.0.1' }, 'http-01');
    const before = await read(o.c, o.authzUrl);
    expect(before.headers.get('retry-after')).toBeNull();
    const started = await o.c.post(o.url, {});
    expect((started.json as Json).status).toBe('processing');
    expect(started.headers.get('retry-after')).toBe('1');
    expect((await read(o.c, o.authzUrl)).headers.get('retry-after')).toBe('1');
    expect((await read(o.c, o.orderUrl)).headers.get('retry-after')).toBe('1');
    web.tokens.set(o.token, o.c.keyAuthorization(o.token));
    await t.settle();
    for (const url of [o.url, o.authzUrl, o.orderUrl]) {
      const res = await read(o.c, url);
      expect((res.json as Json).status, url).toMatch(/^(valid|ready)$/);
      expect(res.headers.get('retry-after'), url).toBeNull();
    }
  });
});

describe("config/acme's dns_resolver for http-01 and tls-alpn-01", () => {
  const NAME = 'only-the-resolver-knows.test';

  it('validates http-01 for a name only the configured resolver knows', async () => {
    const dns = await txtServer();
    closers.push(() => dns.close());
    dns.addresses.set(NAME, '127.0.0.1');
    const web = await http01Server();
    closers.push(() => web.close());
    const t = await app({ acmeHttpPort: web.port }, { dns_resolver: `127.0.0.1:${dns.port}` });
    const o = await acmeOrder(t, { type: 'dns', value: NAME }, 'http-01');
    web.tokens.set(o.token, o.c.keyAuthorization(o.token));
    await o.c.post(o.url, {});
    await t.settle();
    const now = (await read(o.c, o.url)).json as Json;
    expect(now.error).toBeUndefined();
    expect(now.status).toBe('valid');
    expect(((await read(o.c, o.orderUrl)).json as Json).status).toBe('ready');
  });

  it('validates tls-alpn-01 for a name only the configured resolver knows', async () => {
    const dns = await txtServer();
    closers.push(() => dns.close());
    dns.addresses.set(NAME, '127.0.0.1');
    const tls = await alpnServer();
    closers.push(() => tls.close());
    const t = await app({ acmeTlsPort: tls.port }, { dns_resolver: `127.0.0.1:${dns.port}` });
    const o = await acmeOrder(t, { type: 'dns', value: NAME }, 'tls-alpn-01');
    tls.present(NAME, challengeDigest(o.c.keyAuthorization(o.token)));
    await o.c.post(o.url, {});
    await t.settle();
    const now = (await read(o.c, o.url)).json as Json;
    expect(now.error).toBeUndefined();
    expect(now.status).toBe('valid');
  });

  it('fails with a dns problem naming the resolver when it does not know the name', async () => {
    const dns = await txtServer();
    closers.push(() => dns.close());
    const web = await http01Server();
    closers.push(() => web.close());
    const t = await app({ acmeHttpPort: web.port }, { dns_resolver: `127.0.0.1:${dns.port}` });
    const o = await acmeOrder(t, { type: 'dns', value: NAME }, 'http-01');
    await o.c.post(o.url, {});
    await t.settle();
    const now = (await read(o.c, o.url)).json as Json;
    expect(now.status).toBe('processing');
    expect((now.error as Json).type).toBe('urn:ietf:params:acme:error:dns');
    expect((now.error as Json).detail).toContain(`through 127.0.0.1:${dns.port}`);
  });
});
