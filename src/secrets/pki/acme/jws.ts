import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { errors, flattenedVerify, type FlattenedJWSInput } from 'jose';
import { z } from 'zod';
import { checkJson, parseJson } from '../../../core/json.js';
import { AcmeProblem, malformed } from './problem.js';

/** A flattened JWS as ACME sends it (RFC 8555 §6.2). */
export interface Jws {
  protected: ProtectedHeader;
  /** the decoded payload: an object, or undefined for POST-as-GET (empty payload) */
  payload: Record<string, unknown> | undefined;
  /** the serialization as sent, which `jose` verifies */
  raw: FlattenedJWSInput;
}

/** The protected header's members ACME reads; others (`typ`, …) pass through. */
const protectedHeader = z.looseObject({
  alg: z.string(),
  nonce: z.string().optional(),
  url: z.string().optional(),
  jwk: z.record(z.string(), z.unknown()).optional(),
  kid: z.string().optional(),
});

export type ProtectedHeader = z.infer<typeof protectedHeader>;

/** The key type each accepted account-key algorithm needs. */
const SIGNING: Readonly<Record<string, 'RSA' | 'EC'>> = {
  RS256: 'RSA',
  RS384: 'RSA',
  RS512: 'RSA',
  ES256: 'EC',
  ES384: 'EC',
  ES512: 'EC',
};

/** The algorithms accepted for account keys. */
export const JWS_ALGORITHMS = Object.keys(SIGNING);

const b64 = /^[A-Za-z0-9_-]*$/;

/**
 * The bytes of unpadded base64url (RFC 7515 §2) written in its one canonical spelling; undefined
 * for any other text. Node's decoder also takes bits set past the last byte, or a lone last
 * character, for the same bytes.
 */
export function base64urlBytes(text: unknown): Buffer | undefined {
  if (typeof text !== 'string' || !b64.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

function decode(part: unknown, what: string): Buffer {
  const bytes = base64urlBytes(part);
  if (bytes === undefined) throw malformed(`${what} is not base64url`);
  return bytes;
}

const jsonObject = z.record(z.string(), z.unknown());

function json(bytes: Buffer, what: string): Record<string, unknown> {
  const v = parseJson(jsonObject, bytes.toString('utf8'));
  if (v.ok) return v.value;
  throw malformed(`${what} is not a JSON object`);
}

/** Parses a flattened JWS body; anything else is `malformed`. */
export function parseJws(raw: Buffer | undefined): Jws {
  if (raw === undefined || raw.length === 0) throw malformed('the request has no JWS body');
  const body = json(raw, 'the request body');
  if ('signatures' in body) throw malformed('only the flattened JWS serialization is accepted');
  const fields = json(decode(body.protected, 'protected'), 'the protected header');
  if (typeof fields.alg !== 'string') throw malformed('the protected header has no alg');
  const checked = checkJson(protectedHeader, fields);
  if (!checked.ok) throw malformed(`the protected header does not fit: ${checked.error}`);
  const header = checked.value;
  if (body.header !== undefined) throw malformed('an unprotected header is not allowed');
  // An unencoded payload (RFC 7797) would sign other bytes than ACME reads: neither is accepted.
  if ('crit' in header || 'b64' in header)
    throw malformed('the protected header may not carry crit or b64 (RFC 7797)');
  const payloadBytes = decode(body.payload, 'payload');
  decode(body.signature, 'signature');
  return {
    protected: header,
    payload: payloadBytes.length === 0 ? undefined : json(payloadBytes, 'the payload'),
    raw: {
      protected: String(body.protected),
      payload: String(body.payload),
      signature: String(body.signature),
    },
  };
}

const MEMBERS: Readonly<Record<string, readonly string[]>> = {
  EC: ['crv', 'kty', 'x', 'y'],
  RSA: ['e', 'kty', 'n'],
};

/**
 * The public members of a JWK, in the order RFC 7638 hashes them; a private key is refused. So is
 * a key written other than as its one canonical form (RFC 7518 §6: unpadded base64url with no
 * bits set past the last byte, EC coordinates at the curve's size, RSA values without leading
 * zero octets): the thumbprint is taken over the text, and one key written two ways would hold
 * two accounts.
 */
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
  const canonical = keyOf(out).export({ format: 'jwk' }) as Record<string, unknown>;
  for (const m of members)
    if (canonical[m] !== out[m])
      throw new AcmeProblem('badPublicKey', `the jwk's ${m} is not in its canonical form`);
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

/** Verifies with `jose`, allowing one algorithm; a failure is the given problem. */
async function verifyWith(
  jws: Jws,
  key: KeyObject | Uint8Array,
  alg: string,
  failure: () => AcmeProblem,
): Promise<void> {
  try {
    await flattenedVerify(jws.raw, key, { algorithms: [alg] });
  } catch (err) {
    if (err instanceof errors.JOSEError) throw failure();
    throw err;
  }
}

/** Verifies a JWS signature with an account key; the algorithm must fit the key. */
export async function verifyJws(jws: Jws, key: KeyObject): Promise<void> {
  const alg = jws.protected.alg;
  const kty = SIGNING[alg];
  if (!kty) {
    throw new AcmeProblem(
      'badSignatureAlgorithm',
      `unsupported signature algorithm ${alg}; supported: ${JWS_ALGORITHMS.join(', ')}`,
    );
  }
  const keyType =
    key.asymmetricKeyType === 'rsa' ? 'RSA' : key.asymmetricKeyType === 'ec' ? 'EC' : '';
  if (keyType !== kty)
    throw new AcmeProblem('badSignatureAlgorithm', `${alg} does not fit the key`);
  if (kty === 'RSA' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    throw new AcmeProblem('badPublicKey', 'RSA account keys need at least 2048 bits');
  }
  await verifyWith(jws, key, alg, () => malformed('JWS signature verification failed'));
}

const HMAC_ALGORITHMS = ['HS256', 'HS384', 'HS512'];

/** Verifies an HMAC-signed JWS (external account binding, RFC 8555 §7.3.4). */
export async function verifyHmacJws(jws: Jws, key: Buffer): Promise<void> {
  const alg = jws.protected.alg;
  if (!HMAC_ALGORITHMS.includes(alg))
    throw malformed(`unsupported external account binding algorithm ${alg}`);
  await verifyWith(
    jws,
    key,
    alg,
    () => new AcmeProblem('unauthorized', 'external account binding signature verification failed'),
  );
}

/** The key authorization of a token for an account key (RFC 8555 §8.1). */
export const keyAuthorization = (token: string, accountThumbprint: string): string =>
  `${token}.${accountThumbprint}`;
