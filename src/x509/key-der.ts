/**
 * Key structures (SubjectPublicKeyInfo, PKCS#1, SEC1, PKCS#8) written and read in JavaScript from
 * a key's raw parts. Node's own `KeyObject.export` to DER and `createPublicKey` from DER go through
 * OpenSSL 3's encoder and decoder lookups, which cost 70–160 µs each on the event loop; the JWK
 * forms of the same keys cost a few microseconds, and these structures are small and fixed.
 * Every writer here produces the bytes OpenSSL writes for the same key (the tests compare them).
 */
import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import * as der from './der.js';
import type { KeySpec } from './keys.js';

export const EC_PUBLIC_KEY = '1.2.840.10045.2.1';
export const RSA_ENCRYPTION = '1.2.840.113549.1.1.1';
export const ED25519 = '1.3.101.112';

/** The named curves Keel issues on: OID, JWK name and the byte length of a scalar. */
const CURVES = [
  { bits: 224, oid: '1.3.132.0.33', jwk: undefined, size: 28 },
  { bits: 256, oid: '1.2.840.10045.3.1.7', jwk: 'P-256', size: 32 },
  { bits: 384, oid: '1.3.132.0.34', jwk: 'P-384', size: 48 },
  { bits: 521, oid: '1.3.132.0.35', jwk: 'P-521', size: 66 },
] as const;

type Curve = (typeof CURVES)[number];

/** The curve of an EC key size; undefined for sizes Keel does not know. */
export const curveOf = (bits: number): Curve | undefined => CURVES.find((c) => c.bits === bits);

/** The curve of a named-curve OID; undefined for curves Keel does not know. */
export const curveOfOid = (oid: string): Curve | undefined => CURVES.find((c) => c.oid === oid);

const b64u = (s: string | undefined): Buffer => {
  if (s === undefined) throw new Error('incomplete JWK');
  return Buffer.from(s, 'base64url');
};

/** A big-endian value left-padded with zeros to `size` bytes (EC scalars and coordinates). */
function padded(value: Buffer, size: number): Buffer {
  if (value.length === size) return value;
  if (value.length > size) throw new Error('EC value longer than its curve');
  return Buffer.concat([Buffer.alloc(size - value.length), value]);
}

/** An EC public key's SubjectPublicKeyInfo from its uncompressed point (`04 ‖ x ‖ y`). */
export const ecSpki = (curve: Curve, point: Buffer): Buffer =>
  der.seq(der.seq(der.oid(EC_PUBLIC_KEY), der.oid(curve.oid)), der.bits(point));

/**
 * An EC private key as SEC1 `ECPrivateKey` (with the curve, as OpenSSL writes it on its own) or
 * as PKCS#8 (the curve moves to the algorithm identifier, the inner key omits it).
 */
export function ecPrivateDer(curve: Curve, d: Buffer, point: Buffer, pkcs8: boolean): Buffer {
  const scalar = der.octets(padded(d, curve.size));
  const publicKey = der.explicit(1, der.bits(point));
  if (!pkcs8) return der.seq(der.int(1), scalar, der.explicit(0, der.oid(curve.oid)), publicKey);
  return der.seq(
    der.int(0),
    der.seq(der.oid(EC_PUBLIC_KEY), der.oid(curve.oid)),
    der.octets(der.seq(der.int(1), scalar, publicKey)),
  );
}

/** The DER a JWK private key is written as: its SPKI and its private key per structure. */
export interface JwkDer {
  spki: Buffer;
  /** PKCS#1 for RSA, SEC1 for EC, PKCS#8 for Ed25519 (the reference's per-type form) */
  native: () => Buffer;
  pkcs8: () => Buffer;
}

/** SPKI and private key DER from a private key's JWK (RSA, EC on a JWK curve, Ed25519). */
export function derFromJwk(jwk: JsonWebKey): JwkDer {
  switch (jwk.kty ?? '') {
    case 'EC': {
      const curve = CURVES.find((c) => c.jwk === jwk.crv);
      if (!curve) throw new Error(`unsupported JWK curve ${String(jwk.crv)}`);
      const point = Buffer.concat([
        Buffer.from([4]),
        padded(b64u(jwk.x), curve.size),
        padded(b64u(jwk.y), curve.size),
      ]);
      const d = b64u(jwk.d);
      return {
        spki: ecSpki(curve, point),
        native: () => ecPrivateDer(curve, d, point, false),
        pkcs8: () => ecPrivateDer(curve, d, point, true),
      };
    }
    case 'RSA': {
      const algorithm = der.seq(der.oid(RSA_ENCRYPTION), der.nul());
      const pkcs1 = () =>
        der.seq(
          der.int(0),
          ...[jwk.n, jwk.e, jwk.d, jwk.p, jwk.q, jwk.dp, jwk.dq, jwk.qi].map((v) =>
            der.int(b64u(v)),
          ),
        );
      return {
        spki: der.seq(algorithm, der.bits(der.seq(der.int(b64u(jwk.n)), der.int(b64u(jwk.e))))),
        native: pkcs1,
        pkcs8: () => der.seq(der.int(0), algorithm, der.octets(pkcs1())),
      };
    }
    case 'OKP': {
      if (jwk.crv !== 'Ed25519') throw new Error(`unsupported JWK curve ${String(jwk.crv)}`);
      const algorithm = der.seq(der.oid(ED25519));
      const pkcs8 = () => der.seq(der.int(0), algorithm, der.octets(der.octets(b64u(jwk.d))));
      return {
        spki: der.seq(algorithm, der.bits(b64u(jwk.x))),
        native: pkcs8,
        pkcs8,
      };
    }
    default:
      throw new Error(`unsupported JWK key type ${String(jwk.kty)}`);
  }
}

/** True for the content of a minimally encoded, positive DER INTEGER. */
const positive = (v: Buffer): boolean =>
  v.length > 0 && !((v[0] ?? 0) & 0x80) && (v[0] !== 0 || (v.length > 1 && !!((v[1] ?? 0) & 0x80)));

const bitLength = (magnitude: Buffer): number => {
  let i = 0;
  while (i < magnitude.length - 1 && magnitude[i] === 0) i++;
  const top = magnitude[i] ?? 0;
  return (magnitude.length - i - 1) * 8 + (top === 0 ? 0 : 32 - Math.clz32(top));
};

/**
 * The JWK of a well-formed RSA, EC (uncompressed point on a JWK curve) or Ed25519 SPKI, with the
 * key's spec; undefined for anything else, which the caller hands to OpenSSL's decoder as it is.
 */
export function jwkFromSpki(spki: Buffer): { jwk: JsonWebKey; spec: KeySpec } | undefined {
  const top = der.read(spki);
  if (top.tag !== 0x30 || top.end !== spki.length) return undefined;
  const [algEl, keyEl, extra] = der.children(spki, top);
  if (!algEl || !keyEl || extra || algEl.tag !== 0x30 || keyEl.tag !== 0x03) return undefined;
  const [oidEl, paramEl, more] = der.children(spki, algEl);
  if (!oidEl || more || oidEl.tag !== 0x06 || spki[keyEl.contentStart] !== 0) return undefined;
  const bits = spki.subarray(keyEl.contentStart + 1, keyEl.end);
  switch (der.oidText(der.content(spki, oidEl))) {
    case EC_PUBLIC_KEY: {
      if (paramEl?.tag !== 0x06) return undefined;
      const oid = der.oidText(der.content(spki, paramEl));
      const curve = curveOfOid(oid);
      if (!curve?.jwk || bits.length !== 1 + 2 * curve.size || bits[0] !== 4) return undefined;
      const x = bits.subarray(1, 1 + curve.size).toString('base64url');
      const y = bits.subarray(1 + curve.size).toString('base64url');
      return { jwk: { kty: 'EC', crv: curve.jwk, x, y }, spec: { type: 'ec', bits: curve.bits } };
    }
    case RSA_ENCRYPTION: {
      // RFC 3279 NULL parameters; anything looser is for OpenSSL's decoder to judge.
      if (paramEl?.tag !== 0x05 || paramEl.end !== paramEl.contentStart) return undefined;
      const seq = der.read(bits);
      if (seq.tag !== 0x30 || seq.end !== bits.length) return undefined;
      const [nEl, eEl, rest] = der.children(bits, seq);
      if (!nEl || !eEl || rest || nEl.tag !== 0x02 || eEl.tag !== 0x02) return undefined;
      const [n, e] = [der.content(bits, nEl), der.content(bits, eEl)];
      // Only minimal positive integers; the decoder refuses the others in its own words.
      if (!positive(n) || !positive(e)) return undefined;
      const strip = (v: Buffer) => (v[0] === 0 ? v.subarray(1) : v);
      return {
        jwk: { kty: 'RSA', n: strip(n).toString('base64url'), e: strip(e).toString('base64url') },
        spec: { type: 'rsa', bits: bitLength(n) },
      };
    }
    case ED25519:
      if (paramEl || bits.length !== 32) return undefined;
      return {
        jwk: { kty: 'OKP', crv: 'Ed25519', x: bits.toString('base64url') },
        spec: { type: 'ed25519', bits: 0 },
      };
    default:
      return undefined;
  }
}

/**
 * The public key of SPKI DER through its JWK when it has one (a few µs for RSA instead of
 * ~130 µs), otherwise through OpenSSL's decoder; undefined `spec` means it is to be read from
 * the key.
 */
export function publicKeyOfSpki(spki: Buffer): { key: KeyObject; spec?: KeySpec } {
  const known = jwkFromSpki(spki);
  if (known) {
    try {
      return { key: createPublicKey({ key: known.jwk, format: 'jwk' }), spec: known.spec };
    } catch {
      // A point off its curve, say: the decoder below refuses it with OpenSSL's own message.
    }
  }
  return { key: createPublicKey({ key: spki, format: 'der', type: 'spki' }) };
}
