import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAcmeApp, type AcmeTestApp } from '../../support/acme-app.js';
import { accountKey, jws } from '../../support/acme-client.js';

/**
 * A JWS's protected header is JSON an ACME client wrote: one that parses but whose members have
 * the wrong types (a nonce that is a number, a kid that is an object) is a `malformed` problem
 * document naming the member, and nothing is recorded.
 */

let t: AcmeTestApp;
beforeAll(async () => {
  t = await startAcmeApp();
});
afterAll(async () => t.close());

const eventCount = () =>
  (t.app.core.db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;

async function send(header: (nonce: string, url: string) => Record<string, unknown>) {
  const c = t.client();
  const d = await c.directory();
  const key = accountKey();
  const body = jws(
    key,
    { jwk: key.jwk, ...header(await c.nonce(), d.newAccount) },
    {
      termsOfServiceAgreed: true,
    },
  );
  return t.request('POST', c.path(d.newAccount), {
    token: null,
    rawBody: Buffer.from(JSON.stringify(body)),
    headers: { 'content-type': 'application/jose+json' },
  });
}

describe('a protected header whose members have the wrong types', () => {
  it.each([
    ['a nonce that is a number', (_: string, url: string) => ({ nonce: 12, url }), '/nonce:'],
    ['a url that is a list', (nonce: string, url: string) => ({ nonce, url: [url] }), '/url:'],
    ['a jwk that is a string', (nonce: string, url: string) => ({ nonce, url, jwk: 'k' }), '/jwk:'],
    [
      'a kid that is an object',
      (nonce: string, url: string) => ({ nonce, url, kid: { id: 1 } }),
      '/kid:',
    ],
    ['an alg that is a number', (nonce: string, url: string) => ({ nonce, url, alg: 256 }), 'alg'],
  ])('%s is malformed, naming it, and records nothing', async (_, header, member) => {
    const before = eventCount();
    const res = await send(header);
    expect(res.status, res.text).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const problem = res.json as { type: string; detail: string };
    expect(problem.type).toBe('urn:ietf:params:acme:error:malformed');
    expect(problem.detail).toContain(member);
    expect(eventCount()).toBe(before);
  });

  it('members ACME does not read pass, and the account is made', async () => {
    const res = await send((nonce, url) => ({ nonce, url, typ: 'JWT', extra: { a: [1] } }));
    expect(res.status, res.text).toBe(201);
  });
});
