import {
  createHash,
  createHmac,
  createPublicKey,
  timingSafeEqual,
  verify,
  type KeyObject,
} from 'node:crypto';
import { AcmeProblem, malformed } from './problem.js';

/** A flattened JWS as ACME sends it (RFC 8555 §6.2). */
export interface Jws {
  protected: ProtectedHeader;
  /** the decoded payload: an object, or undefined for POST-as-GET (empty payload) */
  payload: Record<string, unknown> | undefined;
  signingInput: string;
  signature: Buffer;
}

export interface ProtectedHeader {
  alg: string;
  nonce?: string;
  url?: string;
  jwk?: Record<string, unknown>;
  kid?: string;
}

const SIGNING: Readonly<Record<string, { hash: string; kty: string; p1363?: boolean }>> = {
  RS256: { hash: 'sha256', kty: 'RSA' },
  RS384: { hash: 'sha384', kty: 'RSA' },
  RS512: { hash: 'sha512', kty: 'RSA' },
  ES256: { hash: 'sha256', kty: 'EC', p1363: true },
  ES384: { hash: 'sha384', kty: 'EC', p1363: true },
  ES512: { hash: 'sha512', kty: 'EC', p1363: true },
};

/** The algorithms accepted for account keys. */
export const JWS_ALGORITHMS = Object.keys(SIGNING);

const b64 = /^[A-Za-z0-9_-]*$/;

function decode(part: unknown, what: string): Buffer {
  if (typeof part !== 'string' || !b64.test(part)) throw malformed(`${what} is not base64url`);
  return Buffer.from(part, 'base64url');
}

function json(bytes: Buffer, what: string): Record<string, unknown> {
  try {
    const v = JSON.parse(bytes.toString('utf8')) as unknown;
    if (v !== null && typeof v === 'object' && !Array.isArray(v))
      return v as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw malformed(`${what} is not a JSON object`);
}

/** Parses a flattened JWS body; anything else is `malformed`. */
export function parseJws(raw: Buffer | undefined): Jws {
  if (raw === undefined || raw.length === 0) throw malformed('the request has no JWS body');
  const body = json(raw, 'the request body');
  if ('signatures' in body) throw malformed('only the flattened JWS serialization is accepted');
  const header = json(decode(body.protected, 'protected'), 'the protected header');
  if (typeof header.alg !== 'string') throw malformed('the protected header has no alg');
  if (body.header !== undefined) throw malformed('an unprotected header is not allowed');
  const payloadBytes = decode(body.payload, 'payload');
  return {
    protected: header as unknown as ProtectedHeader,
    payload: payloadBytes.length === 0 ? undefined : json(payloadBytes, 'the payload'),
    signingInput: `${String(body.protected)}.${String(body.payload)}`,
    signature: decode(body.signature, 'signature'),
  };
}

const MEMBERS: Readonly<Record<string, readonly string[]>> = {
  EC: ['crv', 'kty', 'x', 'y'],
  RSA: ['e', 'kty', 'n'],
};

/** The public members of a JWK, in the order RFC 7638 hashes them; a private key is refused. */
export function publicJwk(jwk: unknown): Record<string, string> {
  if (jwk === null || typeof jwk !== 'object') throw malformed('jwk is not an object');
  const k = jwk as Record<string, unknown>;
  const members = typeof k.kty === 'string' ? MEMBERS[k.kty] : undefined;
  if (!members) throw new AcmeProblem('badPublicKey', `unsupported key type ${String(k.kty)}`);
  if ('d' in k) throw new AcmeProblem('badPublicKey', 'the jwk holds a private key');
  const out: Record<string, string> = {};
  for (const m of members) {
    const v = k[m];
    if (typeof v !== 'string' || v === '') throw new AcmeProblem('badPublicKey', `jwk has no ${m}`);
    out[m] = v;
  }
  return out;
}

/** RFC 7638 thumbprint (SHA-256, base64url) of a public JWK. */
export const thumbprint = (jwk: Record<string, string>): string =>
  createHash('sha256').update(JSON.stringify(jwk)).digest('base64url');

export function keyOf(jwk: Record<string, string>): KeyObject {
  try {
    return createPublicKey({ key: jwk, format: 'jwk' });
  } catch {
    throw new AcmeProblem('badPublicKey', 'the jwk is not a usable public key');
  }
}

/** Verifies a JWS signature with an account key; the algorithm must fit the key. */
export function verifyJws(jws: Jws, key: KeyObject): void {
  const alg = SIGNING[jws.protected.alg];
  if (!alg) {
    throw new AcmeProblem(
      'badSignatureAlgorithm',
      `unsupported signature algorithm ${jws.protected.alg}; supported: ${JWS_ALGORITHMS.join(', ')}`,
    );
  }
  const kty = key.asymmetricKeyType === 'rsa' ? 'RSA' : key.asymmetricKeyType === 'ec' ? 'EC' : '';
  if (kty !== alg.kty) {
    throw new AcmeProblem('badSignatureAlgorithm', `${jws.protected.alg} does not fit the key`);
  }
  if (kty === 'RSA' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    throw new AcmeProblem('badPublicKey', 'RSA account keys need at least 2048 bits');
  }
  const ok = verify(
    alg.hash,
    Buffer.from(jws.signingInput),
    alg.p1363 ? { key, dsaEncoding: 'ieee-p1363' } : key,
    jws.signature,
  );
  if (!ok) throw malformed('JWS signature verification failed');
}

/** Verifies an HMAC-signed JWS (external account binding, RFC 8555 §7.3.4). */
export function verifyHmacJws(jws: Jws, key: Buffer): void {
  const hash = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512' }[jws.protected.alg];
  if (!hash) throw malformed(`unsupported external account binding algorithm ${jws.protected.alg}`);
  const mac = createHmac(hash, key).update(jws.signingInput).digest();
  if (mac.length !== jws.signature.length || !timingSafeEqual(mac, jws.signature))
    throw unauthorizedBinding();
}

const unauthorizedBinding = () =>
  new AcmeProblem('unauthorized', 'external account binding signature verification failed');

/** The key authorization of a token for an account key (RFC 8555 §8.1). */
export const keyAuthorization = (token: string, accountThumbprint: string): string =>
  `${token}.${accountThumbprint}`;
