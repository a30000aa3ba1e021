import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAcmeApp, type AcmeTestApp } from '../../support/acme-app.js';
import { extension, forgeCsr, nameWithCn, seq, tlv } from '../../support/csr-forge.js';
import { startPebble, type Pebble } from '../../support/pebble.js';
import { scratch } from '../../support/pki-openssl.js';

/**
 * Keel's ACME server beside pebble, Let's Encrypt's test server, on requests a client gets
 * wrong: each request is made for both, and the answers' status and problem type compared. Where
 * they differ, Keel follows RFC 8555's words and pebble does not; those cases are listed with the
 * section that decides them.
 */

const dir = scratch();
let keel: AcmeTestApp;
let pebble: Pebble;
let pebbleCa = '';
beforeAll(async () => {
  keel = await startAcmeApp();
  pebble = await startPebble(dir.path(''));
  pebbleCa = readFileSync(pebble.caFile, 'utf8');
}, 60_000);
afterAll(async () => {
  await pebble?.stop();
  await keel?.close();
  dir.done();
});

interface Answer {
  status: number;
  type: string;
  location: string;
  nonce: string;
  text: string;
}

/** One HTTP request to either server (pebble over HTTPS under its own CA). */
function send(method: string, url: string, body?: string, type = 'application/jose+json') {
  const u = new URL(url);
  const headers =
    body === undefined ? {} : { 'content-type': type, 'content-length': Buffer.byteLength(body) };
  return new Promise<Answer>((resolve, reject) => {
    const done = (res: IncomingMessage) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        let problem = '';
        try {
          const type = (JSON.parse(text) as { type?: unknown }).type;
          problem = typeof type === 'string' ? type : '';
        } catch {
          problem = '';
        }
        resolve({
          status: res.statusCode ?? 0,
          type: problem.replace('urn:ietf:params:acme:error:', ''),
          location: String(res.headers.location ?? ''),
          nonce: String(res.headers['replay-nonce'] ?? ''),
          text,
        });
      });
    };
    const req =
      u.protocol === 'https:'
        ? httpsRequest(u, { method, headers, ca: pebbleCa }, done)
        : httpRequest(u, { method, headers }, done);
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const b64u = (x: string | Buffer) => Buffer.from(x).toString('base64url');

/** A flattened JWS over `payload` with `header`, signed ES256 by `key` (or spoilt). */
function jws(key: KeyObject, header: Record<string, unknown>, payload: string, spoil = false) {
  const input = `${b64u(JSON.stringify(header))}.${b64u(payload)}`;
  const signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  if (spoil) signature[0]! ^= 1;
  const [protectedPart, payloadPart] = input.split('.');
  return JSON.stringify({
    protected: protectedPart,
    payload: payloadPart,
    signature: b64u(signature),
  });
}

interface Server {
  newNonce: string;
  newAccount: string;
  newOrder: string;
  revokeCert: string;
  keyChange: string;
  /** an account's URL without its id: where a kid must point */
  accountPrefix: string;
  /** the URL of the account made for the tests: its kid */
  kid: string;
}

const keyPair = () => {
  const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const { kty, crv, x, y } = key.export({ format: 'jwk' });
  return { key, jwk: { kty, crv, x, y } };
};
const account = keyPair();

async function server(directoryUrl: string): Promise<Server> {
  const d = JSON.parse((await send('GET', directoryUrl)).text) as Record<string, string>;
  const s = {
    newNonce: d.newNonce!,
    newAccount: d.newAccount!,
    newOrder: d.newOrder!,
    revokeCert: d.revokeCert!,
    keyChange: d.keyChange!,
    accountPrefix: '',
    kid: '',
  };
  const made = await send(
    'POST',
    s.newAccount,
    jws(
      account.key,
      { alg: 'ES256', nonce: await nonceOf(s), url: s.newAccount, jwk: account.jwk },
      JSON.stringify({ termsOfServiceAgreed: true }),
    ),
  );
  expect(made.status).toBe(201);
  s.accountPrefix = made.location.replace(/[^/]+$/, '');
  s.kid = made.location;
  return s;
}

const nonceOf = async (s: Pick<Server, 'newNonce'>): Promise<string> =>
  (await send('HEAD', s.newNonce)).nonce;

type Case = [string, (s: Server) => Promise<Answer>];
const ORDER = JSON.stringify({ identifiers: [{ type: 'dns', value: 'a.example.com' }] });

/**
 * A JWS POST to `url`, signed by `signer` with its jwk, a fresh nonce and `url` in the protected
 * header; `header` changes those (a member set to undefined is left out).
 */
async function post(
  s: Server,
  url: string,
  payload: string,
  header: Record<string, unknown> = {},
  { signer = account, spoil = false, type = 'application/jose+json' } = {},
): Promise<Answer> {
  const full = { alg: 'ES256', nonce: await nonceOf(s), url, jwk: signer.jwk, ...header };
  return send('POST', url, jws(signer.key, full, payload, spoil), type);
}

/** The parts of a flattened JWS for new-account, to be put together otherwise. */
async function parts(s: Server): Promise<Record<string, string>> {
  const header = { alg: 'ES256', nonce: await nonceOf(s), url: s.newAccount, jwk: account.jwk };
  return JSON.parse(jws(account.key, header, '{}')) as Record<string, string>;
}

const CASES: Case[] = [
  ['a nonce the server never gave', (s) => post(s, s.newAccount, '{}', { nonce: 'bm9ub25jZQ' })],
  ['no nonce', (s) => post(s, s.newAccount, '{}', { nonce: undefined })],
  ['both jwk and kid', (s) => post(s, s.newAccount, '{}', { kid: `${s.accountPrefix}x` })],
  ['a signature that does not verify', (s) => post(s, s.newAccount, '{}', {}, { spoil: true })],
  ['a payload that is not JSON', (s) => post(s, s.newAccount, 'not json')],
  [
    'a Content-Type other than application/jose+json',
    (s) => post(s, s.newAccount, '{}', {}, { type: 'application/json' }),
  ],
  ['a body that is not JSON', (s) => send('POST', s.newAccount, 'garbage')],
  [
    'a kid of no account',
    (s) => post(s, s.newOrder, ORDER, { jwk: undefined, kid: `${s.accountPrefix}nope` }),
  ],
  [
    'onlyReturnExisting for a key of no account',
    (s) =>
      post(
        s,
        s.newAccount,
        JSON.stringify({ onlyReturnExisting: true }),
        {},
        { signer: keyPair() },
      ),
  ],
  [
    'a contact that is not mailto:',
    (s) =>
      post(
        s,
        s.newAccount,
        JSON.stringify({ termsOfServiceAgreed: true, contact: ['tel:+15555550100'] }),
        {},
        { signer: keyPair() },
      ),
  ],
  [
    'a mailto: contact that is no address',
    (s) =>
      post(
        s,
        s.newAccount,
        JSON.stringify({ termsOfServiceAgreed: true, contact: ['mailto:nobody'] }),
        {},
        { signer: keyPair() },
      ),
  ],
  ['GET on new-account', (s) => send('GET', s.newAccount)],
  ...(
    [
      ['no identifiers', []],
      ['an identifier that is not a string', [{ type: 'dns', value: 7 }]],
    ] as const
  ).map(([name, identifiers]): Case => [
    `new-order with ${name}`,
    (s) => post(s, s.newOrder, JSON.stringify({ identifiers }), { jwk: undefined, kid: s.kid }),
  ]),
  [
    'an account update to a status a client may not set',
    (s) => post(s, s.kid, '{"status":"revoked"}', { jwk: undefined, kid: s.kid }),
  ],
  [
    'revoke-cert of a certificate that is not DER',
    (s) => post(s, s.revokeCert, '{"certificate":"AAAA"}', { jwk: undefined, kid: s.kid }),
  ],
  [
    'the general JWS serialization',
    async (s) => {
      const b = await parts(s);
      const signatures = [{ protected: b.protected, signature: b.signature }];
      return send('POST', s.newAccount, JSON.stringify({ payload: b.payload, signatures }));
    },
  ],
  [
    'an unprotected header',
    async (s) =>
      send('POST', s.newAccount, JSON.stringify({ ...(await parts(s)), header: { kid: 'x' } })),
  ],
];

describe('ACME requests a client gets wrong: Keel answers as pebble does', () => {
  it.each(CASES)('%s', async (_, run) => {
    const [ours, theirs] = [await run(await servers.keel()), await run(await servers.pebble())];
    expect(ours.status).toBe(theirs.status);
    // Keel answers a method a path does not take as every Vault path does (405, in Vault's words).
    if (ours.status !== 405) expect(ours.type).toBe(theirs.type);
  });

  it('where RFC 8555 decides otherwise than pebble answers, Keel follows the RFC', async () => {
    const [k, p] = [await servers.keel(), await servers.pebble()];
    // §6.2: an algorithm the server does not take is badSignatureAlgorithm.
    const alg = (s: Server) => post(s, s.newAccount, '{}', { alg: 'HS256' });
    expect([(await alg(k)).type, (await alg(p)).type]).toEqual([
      'badSignatureAlgorithm',
      'malformed',
    ]);
    // §6.4: a url that is not the request's is refused as unauthorized.
    const url = (s: Server) => post(s, s.newAccount, '{}', { url: s.newOrder });
    const [ours, theirs] = [await url(k), await url(p)];
    expect([ours.status, ours.type]).toEqual([403, 'unauthorized']);
    expect([theirs.status, theirs.type]).toEqual([400, 'malformed']);
    // §6.7: an identifier of a type the server does not issue for is unsupportedIdentifier.
    const foo = (s: Server) =>
      post(
        s,
        s.newOrder,
        JSON.stringify({ identifiers: [{ type: 'foo', value: 'a.example.com' }] }),
        {
          jwk: undefined,
          kid: s.kid,
        },
      );
    expect([(await foo(k)).type, (await foo(p)).type]).toEqual([
      'unsupportedIdentifier',
      'malformed',
    ]);
    // §7.3.2: an account update ignores the fields the server does not know.
    const update = (s: Server) => post(s, s.kid, '{"x":1}', { jwk: undefined, kid: s.kid });
    expect([(await update(k)).status, (await update(p)).status]).toEqual([200, 400]);
  });
});

/** Each server's directory and an account on it, made once. */
const servers = (() => {
  let k: Promise<Server> | undefined;
  let p: Promise<Server> | undefined;
  return {
    keel: () => (k ??= server(keel.directoryUrl)),
    pebble: () => (p ??= server(pebble.directory)),
  };
})();

describe('an order a client handles out of turn: Keel answers as pebble does', () => {
  /** A new order for one name on the server, with its URLs. */
  async function order(s: Server) {
    const made = await post(
      s,
      s.newOrder,
      JSON.stringify({ identifiers: [{ type: 'dns', value: 'turn.example.com' }] }),
      { jwk: undefined, kid: s.kid },
    );
    expect(made.status, made.text).toBe(201);
    const body = JSON.parse(made.text) as { finalize: string; authorizations: string[] };
    return { url: made.location, finalize: body.finalize, authz: body.authorizations[0]! };
  }
  const asAccount = (s: Server, url: string, payload: string) =>
    post(s, url, payload, { jwk: undefined, kid: s.kid });
  const csr = (name: string) => {
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    return b64u(
      forgeCsr(key, nameWithCn(name), [
        extension('2.5.29.17', seq(tlv(0x82, [...Buffer.from(name)]))),
      ]),
    );
  };

  const cases: [string, (s: Server) => Promise<Answer>][] = [
    [
      'finalize before the order is ready',
      async (s) =>
        asAccount(s, (await order(s)).finalize, JSON.stringify({ csr: csr('turn.example.com') })),
    ],
    [
      'finalize, before it is ready, with a csr that is not base64url DER',
      async (s) => asAccount(s, (await order(s)).finalize, JSON.stringify({ csr: 'AAAA' })),
    ],
    [
      'finalize, before it is ready, without a csr',
      async (s) => asAccount(s, (await order(s)).finalize, '{}'),
    ],
    ['POST-as-GET of the order', async (s) => asAccount(s, (await order(s)).url, '')],
    [
      'an authorization deactivated by its account',
      async (s) => asAccount(s, (await order(s)).authz, JSON.stringify({ status: 'deactivated' })),
    ],
    [
      'an authorization set to valid by its account',
      async (s) => asAccount(s, (await order(s)).authz, JSON.stringify({ status: 'valid' })),
    ],
  ];
  it.each(cases)('%s', async (_, run) => {
    const [ours, theirs] = [await run(await servers.keel()), await run(await servers.pebble())];
    expect([ours.status, ours.type], ours.text).toEqual([theirs.status, theirs.type]);
  });
});

describe('a key change a client gets wrong: Keel answers as pebble does', () => {
  /** A fresh account on the server and its key, so that a change does not touch the shared one. */
  async function own(s: Server) {
    const signer = keyPair();
    const made = await post(
      s,
      s.newAccount,
      JSON.stringify({ termsOfServiceAgreed: true }),
      {},
      { signer },
    );
    expect(made.status, made.text).toBe(201);
    return { signer, kid: made.location };
  }
  /** The inner JWS of a key change: signed by `by`, naming `account` and `oldKey`. */
  const inner = (
    by: ReturnType<typeof keyPair>,
    header: Record<string, unknown>,
    payload: Record<string, unknown>,
  ) =>
    JSON.parse(
      jws(by.key, { alg: 'ES256', jwk: by.jwk, ...header }, JSON.stringify(payload)),
    ) as unknown;
  const change = async (
    s: Server,
    make: (
      a: { signer: ReturnType<typeof keyPair>; kid: string },
      next: ReturnType<typeof keyPair>,
    ) => unknown,
  ) => {
    const a = await own(s);
    const next = keyPair();
    return post(
      s,
      s.keyChange,
      JSON.stringify(make(a, next)),
      { jwk: undefined, kid: a.kid },
      { signer: a.signer },
    );
  };
  const cases: [string, (s: Server) => Promise<Answer>][] = [
    [
      'a good key change',
      (s) =>
        change(s, (a, next) =>
          inner(next, { url: s.keyChange }, { account: a.kid, oldKey: a.signer.jwk }),
        ),
    ],
    [
      'an inner url that is not key-change',
      (s) =>
        change(s, (a, next) =>
          inner(next, { url: s.newOrder }, { account: a.kid, oldKey: a.signer.jwk }),
        ),
    ],
    [
      'an inner JWS naming another account',
      (s) =>
        change(s, (_a, next) =>
          inner(next, { url: s.keyChange }, { account: s.kid, oldKey: account.jwk }),
        ),
    ],
    ['an inner payload that is not a JWS', (s) => change(s, () => ({ nope: 1 }))],
  ];
  it.each(cases)('%s', async (_, run) => {
    const [ours, theirs] = [await run(await servers.keel()), await run(await servers.pebble())];
    expect([ours.status, ours.type], ours.text).toEqual([theirs.status, theirs.type]);
  });

  it('where RFC 8555 decides otherwise than pebble answers, or leaves it open, Keel says so', async () => {
    const k = await servers.keel();
    const p = await servers.pebble();
    // §7.3.5: a new key another account holds is 409 Conflict (pebble answers 500).
    const taken = (s: Server) =>
      change(s, (a) =>
        inner(account, { url: s.keyChange }, { account: a.kid, oldKey: a.signer.jwk }),
      );
    const [ours, theirs] = [await taken(k), await taken(p)];
    expect([ours.status, ours.location]).toEqual([409, k.kid]);
    expect(theirs.status).toBe(500);
    // The account's own key as the new one is held by an account too: 409 (pebble: 400).
    const same = (s: Server) =>
      change(s, (a) =>
        inner(a.signer, { url: s.keyChange }, { account: a.kid, oldKey: a.signer.jwk }),
      );
    expect([(await same(k)).status, (await same(p)).status]).toEqual([409, 400]);
    // Left open by the RFC: an oldKey that is not the account's is 403 unauthorized (pebble: 400
    // malformed); an inner JWS with a nonce, which the RFC says it MUST omit, is refused (pebble
    // takes it).
    const wrongOld = (s: Server) =>
      change(s, (a, next) =>
        inner(next, { url: s.keyChange }, { account: a.kid, oldKey: next.jwk }),
      );
    expect([(await wrongOld(k)).type, (await wrongOld(p)).type]).toEqual([
      'unauthorized',
      'malformed',
    ]);
    const nonce = (s: Server) =>
      change(s, (a, next) =>
        inner(
          next,
          { url: s.keyChange, nonce: 'bm9ub25jZQ' },
          { account: a.kid, oldKey: a.signer.jwk },
        ),
      );
    expect([(await nonce(k)).status, (await nonce(p)).status]).toEqual([400, 200]);
  });
});
