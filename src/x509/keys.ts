import {
  createPrivateKey,
  createPublicKey,
  generateKeyPair as generateKeyPairCb,
  sign as cryptoSign,
  verify as cryptoVerify,
  constants,
  createHash,
  type KeyObject,
} from 'node:crypto';
import { promisify } from 'node:util';
import { ValidationError } from '../core/errors.js';
import * as der from './der.js';
import { DerError, parseDer } from './der-read.js';
import { publicKeyOfSpki } from './key-der.js';

const generate = promisify(generateKeyPairCb);

/** The key types a role, an issuer or a request may name. */
export type KeyType = 'rsa' | 'ec' | 'ed25519';

/** A concrete key: type plus size (RSA modulus bits, EC curve bits; 0 for ed25519). */
export interface KeySpec {
  type: KeyType;
  bits: number;
}

const RSA_BITS = [2048, 3072, 4096, 8192];
const EC_BITS = [224, 256, 384, 521];
const CURVES: Record<number, string> = { 224: 'P-224', 256: 'P-256', 384: 'P-384', 521: 'P-521' };
const CURVE_BITS: Record<string, number> = {
  prime256v1: 256,
  secp384r1: 384,
  secp521r1: 521,
  secp224r1: 224,
  'P-256': 256,
  'P-384': 384,
  'P-521': 521,
  'P-224': 224,
};

/**
 * Normalises a requested key type and size the way the reference does: 0 means the default
 * (rsa 2048, ec 256), ed25519 ignores the size, anything else outside the allowed sets is refused.
 */
export function normaliseKeySpec(type: string, bits: number): KeySpec {
  switch (type) {
    case 'rsa': {
      if (bits === 0) return { type, bits: 2048 };
      if (bits < 2048)
        throw new ValidationError(`RSA keys < 2048 bits are unsafe and not supported: got ${bits}`);
      if (!RSA_BITS.includes(bits))
        throw new ValidationError(`unsupported bit length for RSA key: ${bits}`);
      return { type, bits };
    }
    case 'ec': {
      if (bits === 0) return { type, bits: 256 };
      if (!EC_BITS.includes(bits))
        throw new ValidationError(`unsupported bit length for EC key: ${bits}`);
      return { type, bits };
    }
    case 'ed25519':
      return { type, bits: 0 };
    default:
      throw new ValidationError(`unknown key type ${type}; must be one of rsa, ec or ed25519`);
  }
}

/** A key pair as Node key objects. */
export interface KeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/**
 * Generates a key pair off the event loop: Node's async `generateKeyPair` runs on the libuv pool, so
 * a 200 ms RSA generation never stalls other requests.
 */
export async function generateKeyPair(spec: KeySpec): Promise<KeyPair> {
  switch (spec.type) {
    case 'rsa':
      return generate('rsa', { modulusLength: spec.bits, publicExponent: 0x10001 });
    case 'ec':
      return generate('ec', { namedCurve: CURVES[spec.bits] ?? 'P-256' });
    case 'ed25519':
      return generate('ed25519');
    default: {
      const _never: never = spec.type;
      throw new Error(`unknown key type ${String(_never)}`);
    }
  }
}

const specs = new WeakMap<KeyObject, KeySpec>();

/** The type and size of a public or private key; throws a ValidationError for unsupported keys. */
export function keySpecOf(key: KeyObject): KeySpec {
  let spec = specs.get(key);
  if (!spec) {
    spec = readKeySpec(key);
    specs.set(key, spec);
  }
  return spec;
}

function readKeySpec(key: KeyObject): KeySpec {
  const type = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  if (type === 'rsa') return { type: 'rsa', bits: details.modulusLength ?? 0 };
  if (type === 'ed25519') return { type: 'ed25519', bits: 0 };
  if (type === 'ec') {
    const bits = CURVE_BITS[details.namedCurve ?? ''];
    if (!bits)
      throw new ValidationError(`unsupported elliptic curve ${details.namedCurve ?? '(unknown)'}`);
    return { type: 'ec', bits };
  }
  throw new ValidationError(`unsupported key type ${type ?? '(unknown)'}`);
}

/** How a private key is written out: the reference's per-type PEM, or PKCS#8 for every type. */
export type PrivateKeyFormat = 'der' | 'pkcs8';

/** PEM of a private key: RSA as PKCS#1, EC as SEC1, Ed25519 (and pkcs8 requests) as PKCS#8. */
export function privateKeyPem(key: KeyObject, format: PrivateKeyFormat = 'der'): string {
  const spec = keySpecOf(key);
  if (format === 'pkcs8' || spec.type === 'ed25519') {
    return (key.export({ type: 'pkcs8', format: 'pem' }) as string).trimEnd();
  }
  const type = spec.type === 'rsa' ? 'pkcs1' : 'sec1';
  return (key.export({ type, format: 'pem' }) as string).trimEnd();
}

/** DER bytes of a private key in the same per-type structures as `privateKeyPem`. */
export function privateKeyDer(key: KeyObject, format: PrivateKeyFormat = 'der'): Buffer {
  const spec = keySpecOf(key);
  if (format === 'pkcs8' || spec.type === 'ed25519')
    return key.export({ type: 'pkcs8', format: 'der' });
  return key.export({ type: spec.type === 'rsa' ? 'pkcs1' : 'sec1', format: 'der' });
}

/** Parses a private key PEM (PKCS#1, SEC1 or PKCS#8); throws the reference's text when it fails. */
export function parsePrivateKey(pem: string): KeyObject {
  // OpenSSL's decoder reads BER; a key, like every DER a caller sends, must be canonical first.
  const body = /-----BEGIN [A-Z0-9 ]+-----([\s\S]*?)-----END /.exec(pem)?.[1];
  try {
    if (body !== undefined) parseDer(Buffer.from(body.replace(/\s+/g, ''), 'base64'));
  } catch (e) {
    if (!(e instanceof DerError)) throw e;
    throw new ValidationError(`provided key PEM block is not DER: ${e.message}`);
  }
  try {
    return createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new ValidationError('provided key PEM block contained no data or failed to parse');
  }
}

/** SubjectPublicKeyInfo DER of a key. */
export const spkiDer = (key: KeyObject): Buffer =>
  (key.type === 'private' ? createPublicKey(key) : key).export({ type: 'spki', format: 'der' });

/** The public key from SubjectPublicKeyInfo DER (its spec remembered when the DER tells it). */
export function publicKeyFromSpki(spki: Buffer): KeyObject {
  const { key, spec } = publicKeyOfSpki(spki);
  if (spec) specs.set(key, spec);
  return key;
}

/** SHA-1 over the subjectPublicKey bits (RFC 5280 §4.2.1.2 method 1), as Go and OpenSSL compute it. */
export function keyIdentifier(spki: Buffer): Buffer {
  const outer = der.read(spki);
  const [, bitString] = der.children(spki, outer);
  if (!bitString) throw new Error('malformed SubjectPublicKeyInfo');
  return createHash('sha1')
    .update(spki.subarray(bitString.contentStart + 1, bitString.end))
    .digest();
}

/** How a CA signs: the hash and, for RSA, PKCS#1 v1.5 or PSS. */
export interface SignatureScheme {
  key: KeySpec;
  hash: 'sha256' | 'sha384' | 'sha512' | null;
  pss: boolean;
}

/**
 * Picks the signature scheme for a signing key: `signature_bits` 0 means automatic (SHA-256 for RSA,
 * the curve's size for NIST curves); only RSA honours an explicit size and `use_pss`.
 */
export function signatureScheme(key: KeySpec, signatureBits = 0, usePss = false): SignatureScheme {
  if (![0, 256, 384, 512].includes(signatureBits)) {
    throw new ValidationError(
      `unsupported signature_bits ${signatureBits}; must be 0, 256, 384 or 512`,
    );
  }
  const hashOf = (bits: number) => (bits === 384 ? 'sha384' : bits === 512 ? 'sha512' : 'sha256');
  switch (key.type) {
    case 'rsa':
      return { key, hash: hashOf(signatureBits || 256), pss: usePss };
    case 'ec':
      return {
        key,
        hash: key.bits === 384 ? 'sha384' : key.bits === 521 ? 'sha512' : 'sha256',
        pss: false,
      };
    case 'ed25519':
      return { key, hash: null, pss: false };
    default: {
      const _never: never = key.type;
      throw new Error(`unknown key type ${String(_never)}`);
    }
  }
}

const HASH_OID = {
  sha256: '2.16.840.1.101.3.4.2.1',
  sha384: '2.16.840.1.101.3.4.2.2',
  sha512: '2.16.840.1.101.3.4.2.3',
};
const HASH_LEN = { sha256: 32, sha384: 48, sha512: 64 };
const RSA_OID = {
  sha256: '1.2.840.113549.1.1.11',
  sha384: '1.2.840.113549.1.1.12',
  sha512: '1.2.840.113549.1.1.13',
};
const ECDSA_OID = {
  sha256: '1.2.840.10045.4.3.2',
  sha384: '1.2.840.10045.4.3.3',
  sha512: '1.2.840.10045.4.3.4',
};

/** The AlgorithmIdentifier DER that goes into a certificate or CRL signed with this scheme. */
export function signatureAlgorithm(s: SignatureScheme): Buffer {
  if (s.hash === null) return der.seq(der.oid('1.3.101.112'));
  if (s.key.type === 'ec') return der.seq(der.oid(ECDSA_OID[s.hash]));
  if (!s.pss) return der.seq(der.oid(RSA_OID[s.hash]), der.nul());
  const hashAlg = der.seq(der.oid(HASH_OID[s.hash]), der.nul());
  return der.seq(
    der.oid('1.2.840.113549.1.1.10'),
    der.seq(
      der.explicit(0, hashAlg),
      der.explicit(1, der.seq(der.oid('1.2.840.113549.1.1.8'), hashAlg)),
      der.explicit(2, der.int(HASH_LEN[s.hash])),
    ),
  );
}

/** What `crypto.sign` takes for a scheme: the hash and the key with its padding. */
function signArguments(
  s: SignatureScheme,
  key: KeyObject,
): [string | null, KeyObject | { key: KeyObject; padding: number; saltLength: number }] {
  if (s.hash === null) return [null, key];
  if (s.pss)
    return [
      s.hash,
      { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: HASH_LEN[s.hash] },
    ];
  return [s.hash, key];
}

/**
 * Signs `data` with the scheme, on the event loop: what is cheap to sign (`onThePool` false), and
 * what is signed rarely (CA certificates, CRLs, the listener's own certificate).
 */
export function signWith(s: SignatureScheme, key: KeyObject, data: Buffer): Buffer {
  const [hash, signingKey] = signArguments(s, key);
  return cryptoSign(hash, data, signingKey);
}

/**
 * Whether a signature with this scheme is worth the libuv pool: an RSA one is (about a millisecond
 * for 2048 bits, eight for 4096); an EC or Ed25519 one (tens of microseconds) costs the event
 * loop less than the trip there and back (ADR 0105).
 */
export const onThePool = (s: SignatureScheme): boolean => s.key.type === 'rsa';

/**
 * Signs `data` with the scheme on the libuv pool (`crypto.sign` with a callback), so the event
 * loop goes on serving while OpenSSL signs. Worth it for what `onThePool` says.
 */
export function signOffLoop(s: SignatureScheme, key: KeyObject, data: Buffer): Promise<Buffer> {
  const [hash, signingKey] = signArguments(s, key);
  return new Promise((resolve, reject) => {
    cryptoSign(hash, data, signingKey, (err, signature) => {
      if (err) reject(err);
      else resolve(signature);
    });
  });
}

/**
 * Verifies a signature described by an AlgorithmIdentifier (as found in a CSR or certificate).
 * Returns false for algorithms Keel does not know rather than throwing.
 */
export function verifyWith(
  algorithm: Buffer,
  publicKey: KeyObject,
  data: Buffer,
  signature: Buffer,
): boolean {
  const el = der.read(algorithm);
  const [oidEl, params] = der.children(algorithm, el);
  if (!oidEl) return false;
  const name = der.oidText(der.content(algorithm, oidEl));
  const lookup = (table: Record<string, string>) =>
    Object.entries(table).find(([, v]) => v === name)?.[0] as
      'sha256' | 'sha384' | 'sha512' | undefined;
  try {
    if (name === '1.3.101.112') return cryptoVerify(null, data, publicKey, signature);
    const rsa = lookup(RSA_OID);
    if (rsa) return cryptoVerify(rsa, data, publicKey, signature);
    const ec = lookup(ECDSA_OID);
    if (ec) return cryptoVerify(ec, data, publicKey, signature);
    if (name === '1.2.840.113549.1.1.5') return cryptoVerify('sha1', data, publicKey, signature);
    if (name === '1.2.840.113549.1.1.10' && params) {
      const hashParam = der.children(algorithm, params)[0];
      let hash: 'sha256' | 'sha384' | 'sha512' = 'sha256';
      if (hashParam) {
        const inner = der.children(algorithm, hashParam)[0];
        const hashOid = inner ? der.children(algorithm, inner)[0] : undefined;
        const text = hashOid ? der.oidText(der.content(algorithm, hashOid)) : '';
        hash =
          (Object.entries(HASH_OID).find(([, v]) => v === text)?.[0] as typeof hash | undefined) ??
          'sha256';
      }
      return cryptoVerify(
        hash,
        data,
        {
          key: publicKey,
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: constants.RSA_PSS_SALTLEN_AUTO,
        },
        signature,
      );
    }
  } catch {
    return false; // a key or signature the verifier cannot even read verifies nothing
  }
  return false;
}

/** True when the private key belongs to the public key (compares the derived SubjectPublicKeyInfo). */
export const keysMatch = (privateKey: KeyObject, publicKey: KeyObject): boolean =>
  spkiDer(createPublicKey(privateKey)).equals(spkiDer(publicKey));
