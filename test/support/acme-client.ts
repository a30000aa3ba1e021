import {
  createHash,
  createHmac,
  createPublicKey,
  generateKeyPairSync,
  sign,
  type KeyObject,
} from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpRequest, type TestResponse } from './app.js';

/**
 * A small ACME client for tests, written from RFC 8555: an account key (ES256 or RS256), flattened
 * JWS with nonces, and the problem documents as they come. It never calls Keel's own code.
 */
export interface AcmeDirectory {
  newNonce: string;
  newAccount: string;
  newOrder: string;
  revokeCert: string;
  keyChange: string;
  meta?: { externalAccountRequired?: boolean };
}

export interface AcmeKey {
  key: KeyObject;
  alg: 'ES256' | 'RS256';
  jwk: Record<string, string>;
  thumbprint: string;
}

export function accountKey(alg: 'ES256' | 'RS256' = 'ES256'): AcmeKey {
  const { privateKey } =
    alg === 'ES256'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : generateKeyPairSync('rsa', { modulusLength: 2048 });
  return signingKey(privateKey);
}

/** An existing EC P-256 or RSA private key as a JWS signer (a certificate's key, for revoke-cert). */
export function signingKey(privateKey: KeyObject): AcmeKey {
  const alg = privateKey.asymmetricKeyType === 'ec' ? 'ES256' : 'RS256';
  const full = createPublicKey(privateKey).export({ format: 'jwk' }) as Record<string, string>;
  const jwk: Record<string, string> =
    alg === 'ES256'
      ? { crv: full.crv!, kty: full.kty!, x: full.x!, y: full.y! }
      : { e: full.e!, kty: full.kty!, n: full.n! };
  const thumbprint = createHash('sha256').update(JSON.stringify(jwk)).digest('base64url');
  return { key: privateKey, alg, jwk, thumbprint };
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * Unpadded base64url respelled with a bit set in its last character that decoding drops: the same
 * bytes, another text (for a text whose length leaves spare bits, not a multiple of four).
 */
export const spareBit = (text: string): string =>
  `${text.slice(0, -1)}${BASE64URL[BASE64URL.indexOf(text.at(-1)!) | 1]}`;

const b64 = (v: unknown) =>
  Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** A flattened JWS; `payload` undefined is POST-as-GET. */
export function jws(
  k: AcmeKey,
  header: Record<string, unknown>,
  payload: unknown,
): Record<string, string> {
  const protectedB64 = b64({ alg: k.alg, ...header });
  const payloadB64 = payload === undefined ? '' : b64(payload);
  const input = Buffer.from(`${protectedB64}.${payloadB64}`);
  const signature =
    k.alg === 'ES256'
      ? sign('sha256', input, { key: k.key, dsaEncoding: 'ieee-p1363' })
      : sign('sha256', input, k.key);
  return {
    protected: protectedB64,
    payload: payloadB64,
    signature: signature.toString('base64url'),
  };
}

/**
 * An external account binding (RFC 8555 §7.3.4): the account's public key, signed with HS256 by
 * the EAB key `{id, key}` an operator made, for the new-account URL `url`.
 */
export function eabBinding(
  k: AcmeKey,
  eab: { id: string; key: string },
  url: string,
): Record<string, string> {
  const protectedB64 = b64({ alg: 'HS256', kid: eab.id, url });
  const payloadB64 = b64(k.jwk);
  return {
    protected: protectedB64,
    payload: payloadB64,
    signature: createHmac('sha256', Buffer.from(eab.key, 'base64url'))
      .update(`${protectedB64}.${payloadB64}`)
      .digest('base64url'),
  };
}

export class AcmeTestClient {
  kid: string | undefined;
  #nonce: string | undefined;

  /** The connection header of every request: a fresh one each (the tests' default) or reused. */
  readonly #connection: Record<string, string>;

  constructor(
    readonly serverUrl: string,
    readonly directoryUrl: string,
    readonly key: AcmeKey = accountKey(),
    /** `keepAlive`: reuse connections, as ACME clients do (the benchmark measures one). */
    options: { keepAlive?: boolean } = {},
  ) {
    this.#connection = options.keepAlive === true ? { connection: 'keep-alive' } : {};
  }

  path = (url: string) => url.slice(this.serverUrl.length);

  async directory(): Promise<AcmeDirectory> {
    const res = await httpRequest(this.serverUrl, 'GET', this.path(this.directoryUrl), {
      headers: this.#connection,
    });
    if (res.status !== 200) throw new Error(`directory: ${res.status} ${res.text}`);
    return res.json as AcmeDirectory;
  }

  /** Drops the nonce kept from the last answer (after the clock moved past its expiry). */
  forgetNonce(): void {
    this.#nonce = undefined;
  }

  async nonce(): Promise<string> {
    if (this.#nonce) {
      const n = this.#nonce;
      this.#nonce = undefined;
      return n;
    }
    const d = await this.directory();
    const res = await httpRequest(this.serverUrl, 'HEAD', this.path(d.newNonce), {
      headers: this.#connection,
    });
    return res.headers.get('replay-nonce')!;
  }

  /** A signed POST; `kid` false signs with the jwk. */
  async post(
    url: string,
    payload: unknown,
    opts: { jwk?: boolean; key?: AcmeKey; nonce?: string } = {},
  ): Promise<TestResponse> {
    const key = opts.key ?? this.key;
    const header: Record<string, unknown> = { nonce: opts.nonce ?? (await this.nonce()), url };
    if (opts.jwk || !this.kid) header.jwk = key.jwk;
    else header.kid = this.kid;
    const res = await httpRequest(this.serverUrl, 'POST', this.path(url), {
      rawBody: JSON.stringify(jws(key, header, payload)),
      headers: { 'content-type': 'application/jose+json', ...this.#connection },
    });
    this.#nonce = res.headers.get('replay-nonce') ?? undefined;
    return res;
  }

  async register(payload: Record<string, unknown> = { termsOfServiceAgreed: true }) {
    const d = await this.directory();
    const res = await this.post(d.newAccount, payload, { jwk: true });
    if (res.status === 201 || res.status === 200) this.kid = res.headers.get('location')!;
    return res;
  }

  keyAuthorization = (token: string) => `${token}.${this.key.thumbprint}`;
}

/** An http-01 responder on 127.0.0.1 serving the key authorizations it is given. */
export async function http01Server(): Promise<{
  port: number;
  tokens: Map<string, string>;
  /** milliseconds each answer waits (a slow server) */
  delay: { ms: number };
  close(): Promise<void>;
}> {
  const tokens = new Map<string, string>();
  const delay = { ms: 0 };
  const server: Server = createServer((req, res) => {
    const token = /^\/\.well-known\/acme-challenge\/([\w-]+)$/.exec(req.url ?? '')?.[1];
    const answer = token ? tokens.get(token) : undefined;
    setTimeout(() => {
      res.statusCode = answer ? 200 : 404;
      res.end(answer ?? 'not found');
    }, delay.ms);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    tokens,
    delay,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
