import { createPublicKey, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acmeCsr, acmeCsrAndKey, startAcmeHttpApp } from '../../support/acme-app.js';
import {
  accountKey,
  AcmeTestClient,
  eabBinding,
  jws,
  signingKey,
  spareBit,
} from '../../support/acme-client.js';

let t: Awaited<ReturnType<typeof startAcmeHttpApp>>;
let web: typeof t.web;
beforeAll(async () => {
  t = await startAcmeHttpApp();
  web = t.web;
});
afterAll(async () => t.close());

const problemType = (res: { json: unknown }) => (res.json as { type?: string }).type;
type Json = Record<string, unknown>;

/** new-order → http-01 on 127.0.0.1 → the order ready to finalize. */
async function readyOrderFor(c: AcmeTestClient, ip = '127.0.0.1') {
  const d = await c.directory();
  const order = await c.post(d.newOrder, { identifiers: [{ type: 'ip', value: ip }] });
  expect(order.status, order.text).toBe(201);
  const orderUrl = order.headers.get('location')!;
  const [authzUrl] = (order.json as { authorizations: string[] }).authorizations;
  const authz = (await c.post(authzUrl!, undefined)).json as { challenges: Json[] };
  const http = authz.challenges.find((x) => x.type === 'http-01')!;
  web.tokens.set(String(http.token), c.keyAuthorization(String(http.token)));
  const started = await c.post(String(http.url), {});
  expect((started.json as Json).status).toBe('processing');
  expect(started.headers.get('link')).toContain(`<${authzUrl}>;rel="up"`);
  await t.settle();
  const ready = (await c.post(orderUrl, undefined)).json as Json;
  expect(ready.status).toBe('ready');
  return { orderUrl, ready };
}

/** new-order → http-01 on 127.0.0.1 → finalize; returns the order and the client. */
async function issueFor(c: AcmeTestClient, ip = '127.0.0.1', csr?: string) {
  const { orderUrl, ready } = await readyOrderFor(c, ip);
  const fin = await c.post(String(ready.finalize), { csr: csr ?? (await acmeCsr({ ip: [ip] })) });
  expect(fin.status, fin.text).toBe(200);
  return { orderUrl, order: fin.json as Json };
}

describe('ACME directory and nonces', () => {
  it('serves the directory unauthenticated with a nonce and the index link', async () => {
    const res = await t.request('GET', '/v1/pki/acme/directory');
    expect(res.status).toBe(200);
    const d = res.json as Json;
    expect(d.newNonce).toBe(`${t.server.url}/v1/pki/acme/new-nonce`);
    expect(d.meta).toEqual({ externalAccountRequired: false });
    expect(res.headers.get('replay-nonce')).toMatch(/^[\w-]{16,}$/);
    expect(res.headers.get('link')).toBe(`<${t.directoryUrl}>;rel="index"`);
    const head = await t.request('HEAD', '/v1/pki/acme/new-nonce');
    expect(head.status).toBe(200);
    expect(head.headers.get('cache-control')).toBe('no-store');
  });

  it('serves the role, issuer and issuer-role directories', async () => {
    await t.pki('POST', 'roles/web', { allow_ip_sans: true, allow_any_name: true });
    for (const dir of ['roles/web/', 'issuer/default/', 'issuer/default/roles/web/']) {
      const res = await t.request('GET', `/v1/pki/${dir}acme/directory`);
      expect(res.status, dir).toBe(200);
      expect((res.json as Json).newOrder).toBe(`${t.server.url}/v1/pki/${dir}acme/new-order`);
    }
  });

  it('refuses a reused nonce with badNonce and changes nothing', async () => {
    const c = t.client();
    const d = await c.directory();
    const nonce = await c.nonce();
    const first = await c.post(d.newAccount, { termsOfServiceAgreed: true }, { jwk: true, nonce });
    expect(first.status).toBe(201);
    const again = await c.post(d.newAccount, { termsOfServiceAgreed: true }, { jwk: true, nonce });
    expect(again.status).toBe(400);
    expect(again.headers.get('content-type')).toBe('application/problem+json');
    expect(problemType(again)).toBe('urn:ietf:params:acme:error:badNonce');
  });

  it('answers a bad JWS signature with a problem document', async () => {
    const c = t.client();
    const d = await c.directory();
    const other = accountKey();
    const res = await c.post(d.newAccount, {}, { jwk: true, key: { ...other, jwk: c.key.jwk } });
    expect(res.status).toBe(400);
    expect(problemType(res)).toBe('urn:ietf:params:acme:error:malformed');
  });

  it('answers 403 problems while ACME is disabled', async () => {
    await t.pki('POST', 'config/acme', { enabled: false });
    const res = await t.request('GET', '/v1/pki/acme/directory');
    await t.pki('POST', 'config/acme', { enabled: true });
    expect(res.status).toBe(403);
    expect(problemType(res)).toBe('urn:ietf:params:acme:error:unauthorized');
  });
});

describe('ACME accounts', () => {
  it.each(['ES256', 'RS256'] as const)(
    'registers a %s account, finds it again, updates and deactivates it',
    async (alg) => {
      const c = new AcmeTestClient(t.server.url, t.directoryUrl, accountKey(alg));
      const d = await c.directory();
      const missing = await c.post(d.newAccount, { onlyReturnExisting: true }, { jwk: true });
      expect(problemType(missing)).toBe('urn:ietf:params:acme:error:accountDoesNotExist');
      const created = await c.register({
        termsOfServiceAgreed: true,
        contact: ['mailto:a@example.com'],
      });
      expect(created.status).toBe(201);
      expect(c.kid).toMatch(new RegExp(`^${t.directoryUrl.replace('/directory', '')}/account/`));
      const found = await c.post(d.newAccount, { onlyReturnExisting: true }, { jwk: true });
      expect(found.status).toBe(200);
      expect(found.headers.get('location')).toBe(c.kid);
      const updated = await c.post(c.kid!, { contact: ['mailto:b@example.com'] });
      expect((updated.json as Json).contact).toEqual(['mailto:b@example.com']);
      const gone = await c.post(c.kid!, { status: 'deactivated' });
      expect((gone.json as Json).status).toBe('deactivated');
      const after = await c.post(d.newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] });
      expect(after.status).toBe(403);
    },
  );

  it('holds one account per key: a key spelled another way in the jwk is refused, not a second account', async () => {
    for (const alg of ['ES256', 'RS256'] as const) {
      const key = accountKey(alg);
      const first = new AcmeTestClient(t.server.url, t.directoryUrl, key);
      expect((await first.register()).status).toBe(201);
      const spellings: Record<string, string>[] =
        alg === 'ES256'
          ? [
              { ...key.jwk, x: spareBit(key.jwk.x!) },
              { ...key.jwk, y: spareBit(key.jwk.y!) },
            ]
          : [
              // A zero octet before the modulus, and one before the exponent.
              {
                ...key.jwk,
                n: Buffer.concat([Buffer.from([0]), Buffer.from(key.jwk.n!, 'base64url')]).toString(
                  'base64url',
                ),
              },
              { ...key.jwk, e: Buffer.from([0, 1, 0, 1]).toString('base64url') },
            ];
      for (const jwk of spellings) {
        // Node reads each as the same public key: the signature verifies.
        expect(createPublicKey({ key: jwk, format: 'jwk' }).equals(createPublicKey(key.key))).toBe(
          true,
        );
        const again = new AcmeTestClient(t.server.url, t.directoryUrl, { ...key, jwk });
        const res = await again.register();
        expect({ alg, jwk, status: res.status }).toEqual({ alg, jwk, status: 400 });
        expect(problemType(res)).toBe('urn:ietf:params:acme:error:badPublicKey');
      }
    }
  });

  it('rolls the account key over with key-change', async () => {
    const c = t.client();
    await c.register();
    const d = await c.directory();
    const next = accountKey();
    const inner = jws(
      next,
      { jwk: next.jwk, url: d.keyChange },
      { account: c.kid, oldKey: c.key.jwk },
    );
    const res = await c.post(d.keyChange, inner);
    expect(res.status, res.text).toBe(200);
    const moved = new AcmeTestClient(t.server.url, t.directoryUrl, next);
    const found = await moved.post(d.newAccount, { onlyReturnExisting: true }, { jwk: true });
    expect(found.headers.get('location')).toBe(c.kid);
    // A key another account holds is a conflict naming that account.
    const other = t.client();
    await other.register();
    const taken = jws(
      next,
      { jwk: next.jwk, url: d.keyChange },
      { account: other.kid, oldKey: other.key.jwk },
    );
    const conflict = await other.post(d.keyChange, taken);
    expect(conflict.status).toBe(409);
    expect(conflict.headers.get('content-type')).toBe('application/problem+json');
    expect(conflict.headers.get('location')).toBe(c.kid);
  });
});

/** An RSA root named `acme-rsa` on the mount, made once. */
let rsaRootMade: ReturnType<typeof makeRsaRoot> | undefined;
async function makeRsaRoot() {
  const rsa = await t.pki('POST', 'root/generate/internal', {
    common_name: 'ACME RSA root',
    key_type: 'rsa',
    key_bits: 2048,
    issuer_name: 'acme-rsa',
  });
  expect(rsa.status).toBe(200);
  return rsa;
}
const rsaRoot = () => (rsaRootMade ??= makeRsaRoot());

describe('ACME orders over http-01', () => {
  it('issues, serves the chain and revokes by account key', async () => {
    const c = t.client();
    await c.register();
    const { order, orderUrl } = await issueFor(c);
    expect(order.status).toBe('valid');
    const cert = await c.post(String(order.certificate), undefined);
    expect(cert.headers.get('content-type')).toBe('application/pem-certificate-chain');
    const leaf = new X509Certificate(cert.text);
    expect(leaf.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(cert.text.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    const list = await c.post(`${c.kid}/orders`, undefined);
    expect((list.json as { orders: string[] }).orders).toContain(orderUrl);
    const d = await c.directory();
    const der = leaf.raw.toString('base64url');
    const revoked = await c.post(d.revokeCert, { certificate: der, reason: 4 });
    expect(revoked.status, revoked.text).toBe(200);
    const again = await c.post(d.revokeCert, { certificate: der });
    expect(problemType(again)).toBe('urn:ietf:params:acme:error:alreadyRevoked');
    const stored = await t.pki(
      'GET',
      `cert/${leaf.serialNumber.match(/../g)!.join(':').toLowerCase()}`,
    );
    expect(stored.data.revocation_time).toBeGreaterThan(0);
  });

  it("revokes by the certificate's own key, and refuses a stranger's", async () => {
    const c = t.client();
    await c.register();
    const { csr, key } = await acmeCsrAndKey({ ip: ['127.0.0.1'] });
    const { order } = await issueFor(c, '127.0.0.1', csr);
    const leaf = new X509Certificate((await c.post(String(order.certificate), undefined)).text);
    const d = await c.directory();
    const payload = { certificate: leaf.raw.toString('base64url') };
    const stranger = await c.post(d.revokeCert, payload, { jwk: true, key: accountKey() });
    expect(stranger.status).toBe(403);
    expect(problemType(stranger)).toBe('urn:ietf:params:acme:error:unauthorized');
    const other = t.client();
    await other.register();
    const notMine = await other.post(d.revokeCert, payload);
    expect(problemType(notMine)).toBe('urn:ietf:params:acme:error:unauthorized');
    const own = await c.post(d.revokeCert, payload, { jwk: true, key: signingKey(key) });
    expect(own.status, own.text).toBe(200);
  });

  it('refuses to finalize before the order is ready, and a CSR for other names', async () => {
    const c = t.client();
    await c.register();
    const d = await c.directory();
    const order = await c.post(d.newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] });
    const finalizeUrl = String((order.json as Json).finalize);
    const early = await c.post(finalizeUrl, { csr: await acmeCsr({ ip: ['127.0.0.1'] }) });
    expect(early.status).toBe(403);
    expect(problemType(early)).toBe('urn:ietf:params:acme:error:orderNotReady');
    const [authzUrl] = (order.json as { authorizations: string[] }).authorizations;
    const authz = (await c.post(authzUrl!, undefined)).json as { challenges: Json[] };
    const http = authz.challenges.find((x) => x.type === 'http-01')!;
    web.tokens.set(String(http.token), c.keyAuthorization(String(http.token)));
    await c.post(String(http.url), {});
    await t.settle();
    const wrong = await c.post(finalizeUrl, { csr: await acmeCsr({ ip: ['127.0.0.2'] }) });
    expect(problemType(wrong)).toBe('urn:ietf:params:acme:error:badCSR');
    const still = (await c.post(order.headers.get('location')!, undefined)).json as Json;
    expect(still.status).toBe('ready');
  });

  it('takes a csr and a certificate only as canonical base64url: another spelling of the same DER is refused', async () => {
    /** The same bytes written another way: a spare bit set, or a lone character after them. */
    const respelled = (text: string) => {
      const other = text.length % 4 === 0 ? `${text}A` : spareBit(text);
      expect(Buffer.from(other, 'base64url')).toEqual(Buffer.from(text, 'base64url'));
      return other;
    };
    const c = t.client();
    await c.register();
    const { ready, orderUrl } = await readyOrderFor(c);
    const csr = await acmeCsr({ ip: ['127.0.0.1'] });
    const refused = await c.post(String(ready.finalize), { csr: respelled(csr) });
    expect(refused.status).toBe(400);
    expect(problemType(refused)).toBe('urn:ietf:params:acme:error:badCSR');
    expect(((await c.post(orderUrl, undefined)).json as Json).status).toBe('ready');
    const fin = await c.post(String(ready.finalize), { csr });
    expect(fin.status, fin.text).toBe(200);
    const issued = fin.json as Json;
    const leaf = new X509Certificate((await c.post(String(issued.certificate), undefined)).text);
    const d = await c.directory();
    const der = leaf.raw.toString('base64url');
    const notRevoked = await c.post(d.revokeCert, { certificate: respelled(der) });
    expect(notRevoked.status).toBe(400);
    expect(problemType(notRevoked)).toBe('urn:ietf:params:acme:error:malformed');
    const revoked = await c.post(d.revokeCert, { certificate: der });
    expect(revoked.status, revoked.text).toBe(200);
  });

  it('retries a failing http-01 six times, then marks the challenge, authorization and order invalid', async () => {
    const c = t.client();
    await c.register();
    const d = await c.directory();
    const order = await c.post(d.newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] });
    const [authzUrl] = (order.json as { authorizations: string[] }).authorizations;
    const authz = (await c.post(authzUrl!, undefined)).json as { challenges: Json[] };
    const http = authz.challenges.find((x) => x.type === 'http-01')!;
    await c.post(String(http.url), {});
    await t.settle();
    const once = (await c.post(String(http.url), undefined)).json as Json;
    expect(once.status).toBe('processing');
    for (let i = 0; i < 6; i++) {
      t.clock.advance(60_000);
      await t.settle();
    }
    // Five minutes later the nonce the client kept has expired; the problem carries a fresh one.
    const stale = await c.post(String(http.url), undefined);
    expect(problemType(stale)).toBe('urn:ietf:params:acme:error:badNonce');
    const failedRes = await c.post(String(http.url), undefined);
    const failed = failedRes.json as Json;
    expect(failedRes.status, failedRes.text).toBe(200);
    expect(failed.status).toBe('invalid');
    expect((failed.error as Json).type).toBe('urn:ietf:params:acme:error:incorrectResponse');
    expect(((await c.post(authzUrl!, undefined)).json as Json).status).toBe('invalid');
    expect(((await c.post(order.headers.get('location')!, undefined)).json as Json).status).toBe(
      'invalid',
    );
  });

  it('counts one attempt when schedule ticks overlap a slow validation', async () => {
    const c = t.client();
    await c.register();
    const d = await c.directory();
    const order = await c.post(d.newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] });
    const [authzUrl] = (order.json as { authorizations: string[] }).authorizations;
    const authz = (await c.post(authzUrl!, undefined)).json as { challenges: Json[] };
    const http = authz.challenges.find((x) => x.type === 'http-01')!;
    await c.post(String(http.url), {});
    web.delay.ms = 200;
    try {
      await Promise.all([t.app.scheduler.tick(), t.app.scheduler.tick(), t.app.scheduler.tick()]);
    } finally {
      web.delay.ms = 0;
    }
    const now = (await c.post(String(http.url), undefined)).json as Json;
    expect(now.status).toBe('processing');
    const events = [...t.app.core.store.pages()]
      .flat()
      .filter(
        (e) =>
          e.type === 'AcmeChallengeAttemptFailed' &&
          e.stream.endsWith(`${authzUrl!.split('/').pop()}/http-01`),
      );
    expect(events).toHaveLength(1);
  });

  it('invalidates an order and its pending authorization once the order expires', async () => {
    const c = t.client();
    await c.register();
    const d = await c.directory();
    const order = await c.post(d.newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] });
    const expires = Date.parse(String((order.json as Json).expires));
    expect(expires - t.clock.now().getTime()).toBe(24 * 3600_000);
    t.clock.advance(24 * 3600_000 - 1000);
    await t.settle();
    c.forgetNonce();
    const before = await c.post(order.headers.get('location')!, undefined);
    expect((before.json as Json).status).toBe('pending');
    t.clock.advance(1000);
    await t.settle();
    c.forgetNonce();
    const after = (await c.post(order.headers.get('location')!, undefined)).json as Json;
    expect(after.status).toBe('invalid');
    expect((after.error as Json).detail).toBe('the order expired before it was finalized');
    const [authzUrl] = after.authorizations as string[];
    expect(((await c.post(authzUrl!, undefined)).json as Json).status).toBe('invalid');
  });

  it('signs under a role directory with server auth only, unless allow_role_ext_key_usage', async () => {
    await t.pki('POST', 'roles/both', {
      allow_ip_sans: true,
      allow_any_name: true,
      key_type: 'ec',
    });
    const ekus = async () => {
      const c = t.client(`${t.server.url}/v1/pki/roles/both/acme/directory`);
      await c.register();
      const { order } = await issueFor(c);
      return new X509Certificate((await c.post(String(order.certificate), undefined)).text)
        .keyUsage;
    };
    expect(await ekus()).toEqual(['1.3.6.1.5.5.7.3.1']);
    await t.pki('POST', 'config/acme', { allow_role_ext_key_usage: true });
    expect((await ekus()).sort()).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    await t.pki('POST', 'config/acme', { allow_role_ext_key_usage: false, allowed_roles: ['web'] });
    const refused = await t.request('GET', '/v1/pki/roles/both/acme/directory');
    expect(refused.status).toBe(403);
    await t.pki('POST', 'config/acme', { allowed_roles: ['*'] });
  });

  it('issues under an RSA issuer (signed on the libuv pool between two commands, ADR 0105)', async () => {
    const rsa = await rsaRoot();
    const c = t.client(`${t.server.url}/v1/pki/issuer/acme-rsa/acme/directory`);
    await c.register();
    const { order } = await issueFor(c);
    expect(order.status).toBe('valid');
    const chain = (await c.post(String(order.certificate), undefined)).text;
    const leaf = new X509Certificate(chain);
    expect(leaf.verify(new X509Certificate(String(rsa.data.certificate)).publicKey)).toBe(true);
    expect(leaf.subjectAltName).toContain('IP Address:127.0.0.1');
    // its serial is recorded
    const serial = leaf.serialNumber.match(/../g)!.join(':').toLowerCase();
    expect((await t.pki('GET', `cert/${serial}`)).status).toBe(200);
  });

  it('refuses a finalize whose certificate goes stale at every record, and the order stays ready', async () => {
    // Under an RSA issuer a leaf is decided, signed, then recorded.
    await rsaRoot();
    const c = t.client(`${t.server.url}/v1/pki/issuer/acme-rsa/acme/directory`);
    await c.register();
    const { orderUrl, ready } = await readyOrderFor(c);
    const authority = t.app.pki.authority;
    const run = authority.run.bind(authority);
    let n = 0;
    let changing = false;
    // Before each of the finalize's commands the mount's URLs change, and with them every leaf.
    authority.run = async <T>(fn: () => T): Promise<T> => {
      if (!changing) {
        changing = true;
        try {
          await t.pki('POST', 'config/urls', { ocsp_servers: `http://ocsp-${n++}.example/` });
        } finally {
          changing = false;
        }
      }
      return run(fn);
    };
    let fin;
    try {
      fin = await c.post(String(ready.finalize), { csr: await acmeCsr({ ip: ['127.0.0.1'] }) });
    } finally {
      delete (authority as { run?: unknown }).run;
      await t.pki('POST', 'config/urls', { ocsp_servers: '' });
    }
    expect(fin.status).toBe(500);
    expect(problemType(fin)).toBe('urn:ietf:params:acme:error:serverInternal');
    expect(fin.text).toContain('changed while the certificate was being signed, again and again');
    expect(((await c.post(orderUrl, undefined)).json as Json).status).toBe('ready');
  });

  it('rejects identifiers the role does not allow', async () => {
    await t.pki('POST', 'roles/narrow', { allowed_domains: 'example.com', allow_subdomains: true });
    const c = t.client(`${t.server.url}/v1/pki/roles/narrow/acme/directory`);
    await c.register();
    const d = await c.directory();
    const res = await c.post(d.newOrder, { identifiers: [{ type: 'dns', value: 'evil.test' }] });
    expect(problemType(res)).toBe('urn:ietf:params:acme:error:rejectedIdentifier');
    const ok = await c.post(d.newOrder, {
      identifiers: [{ type: 'dns', value: 'www.example.com' }],
    });
    expect(ok.status).toBe(201);
    const authz = (
      await c.post((ok.json as { authorizations: string[] }).authorizations[0]!, undefined)
    ).json as { challenges: Json[] };
    expect(authz.challenges.map((x) => x.type).sort()).toEqual([
      'dns-01',
      'http-01',
      'tls-alpn-01',
    ]);
  });
});

describe('ACME external account binding', () => {
  it('creates, lists and deletes EAB keys, and enforces new-account-required', async () => {
    const eab = await t.pki('POST', 'acme/new-eab');
    expect(eab.status).toBe(200);
    expect(eab.data.key_type).toBe('hs');
    expect(eab.data.acme_directory).toBe('acme/directory');
    const listed = await t.pki('LIST', 'eab');
    expect(listed.data.keys).toContain(eab.data.id);
    const unauthenticated = await t.request('POST', '/v1/pki/acme/new-eab');
    expect(unauthenticated.status).toBe(403);

    await t.pki('POST', 'config/acme', { eab_policy: 'new-account-required' });
    const c = t.client();
    const d = await c.directory();
    expect(d.meta?.externalAccountRequired).toBe(true);
    const refused = await c.post(d.newAccount, { termsOfServiceAgreed: true }, { jwk: true });
    expect(problemType(refused)).toBe('urn:ietf:params:acme:error:externalAccountRequired');
    const binding = eabBinding(
      c.key,
      { id: String(eab.data.id), key: String(eab.data.key) },
      d.newAccount,
    );
    const bound = await c.register({ termsOfServiceAgreed: true, externalAccountBinding: binding });
    expect(bound.status, bound.text).toBe(201);
    const reuse = t.client();
    const again = await reuse.register({
      termsOfServiceAgreed: true,
      externalAccountBinding: binding,
    });
    expect(again.status).toBe(403);
    // always-required: an account made without a binding can no longer act.
    await t.pki('POST', 'config/acme', { eab_policy: 'always-required' });
    const early = t.client();
    await t.pki('POST', 'config/acme', { eab_policy: 'not-required' });
    await early.register();
    await t.pki('POST', 'config/acme', { eab_policy: 'always-required' });
    const refusedOrder = await early.post(d.newOrder, {
      identifiers: [{ type: 'ip', value: '127.0.0.1' }],
    });
    expect(problemType(refusedOrder)).toBe('urn:ietf:params:acme:error:externalAccountRequired');
    const boundOrder = await c.post(d.newOrder, {
      identifiers: [{ type: 'ip', value: '127.0.0.1' }],
    });
    expect(boundOrder.status).toBe(201);
    await t.pki('POST', 'config/acme', { eab_policy: 'not-required' });
    const del = await t.pki('DELETE', `eab/${String(eab.data.id)}`);
    expect(del.status).toBe(204);
  });
});

describe('ACME events and read models', () => {
  it('records every lifecycle in the log, seals EAB keys, and replay rebuilds the ACME read models', async () => {
    const eab = await t.pki('POST', 'roles/web/acme/new-eab');
    const events = [...t.app.core.store.pages()].flat();
    const types = new Set(events.map((e) => e.type));
    for (const ty of [
      'PkiClusterConfigured',
      'PkiAcmeConfigured',
      'AcmeEabKeyCreated',
      'AcmeAccountCreated',
      'AcmeOrderCreated',
      'AcmeOrderReady',
      'AcmeOrderIssued',
      'AcmeAuthorizationValidated',
      'AcmeChallengeStarted',
      'AcmeChallengeAttemptFailed',
      'AcmeChallengeValidated',
      'AcmeChallengeFailed',
    ])
      expect(types).toContain(ty);
    expect(JSON.stringify(events)).not.toContain(String(eab.data.key));
    const dump = t.app.projections.dump();
    expect(Object.keys(dump).filter((k) => k.startsWith('pki_acme_'))).toHaveLength(6);
    t.app.projections.rebuildAll((after, limit) => t.app.core.store.readAll(after, limit));
    expect(t.app.projections.dump()).toEqual(dump);
  });
});
