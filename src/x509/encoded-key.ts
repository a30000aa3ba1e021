import { createECDH, type ECDH, type KeyObject } from 'node:crypto';
import { curveOf, derFromJwk, ecPrivateDer, ecSpki } from './key-der.js';
import { P256Reservoir, type P256Pair } from './p256-reservoir.js';
import {
  generateKeyPair,
  keySpecOf,
  privateKeyDer,
  spkiDer,
  type KeySpec,
  type PrivateKeyFormat,
} from './keys.js';

/**
 * A key pair as the issuing endpoints hand it out: the public key's SPKI and the private key's
 * DER in either structure, without a `KeyObject` round trip per encoding.
 */
export interface EncodedKey {
  spec: KeySpec;
  spki: Buffer;
  /** PKCS#1 (RSA), SEC1 (EC) or PKCS#8 (Ed25519) for `der`; PKCS#8 for `pkcs8` */
  privateDer(format: PrivateKeyFormat): Buffer;
}

/** An existing private key as an EncodedKey (OpenSSL encodes it). */
export const encodedKeyOf = (key: KeyObject): EncodedKey => ({
  spec: keySpecOf(key),
  spki: spkiDer(key),
  privateDer: (format) => privateKeyDer(key, format),
});

/**
 * One P-256 key generator for the process: every `generateKeys()` replaces its key pair with a
 * fresh random one (OpenSSL's EC_KEY_generate_key), and reusing it skips building the curve
 * group each time (~13 µs of the ~27). Its keys are copied out before anything else can run.
 */
let p256: ECDH | undefined;

/** A P-256 pair made here, on the calling thread: when the reservoir has none ready. */
function generateP256(): P256Pair {
  p256 ??= createECDH('prime256v1');
  const point = p256.generateKeys();
  return { d: p256.getPrivateKey(), point };
}

/** The process's P-256 pairs made ahead on a thread of their own (ADR 0108). */
const reservoir = new P256Reservoir();

/**
 * Generates a key pair for a leaf certificate, already encoded. P-256 keys come from OpenSSL's
 * EC key generation directly, made ahead in batches on a thread of their own (`P256Reservoir`:
 * handing each key to the libuv pool and back would cost more than the ~20 µs it takes), or here
 * when none is ready. Larger curves, RSA and Ed25519 are generated on the pool, as
 * `generateKeyPair` does, and encoded from their JWK. P-224 has no JWK form and takes the
 * `KeyObject` route.
 */
export async function generateEncodedKey(spec: KeySpec): Promise<EncodedKey> {
  const curve = spec.type === 'ec' ? curveOf(spec.bits) : undefined;
  if (curve?.bits === 256) {
    const { d, point } = reservoir.take() ?? generateP256();
    return {
      spec,
      spki: ecSpki(curve, point),
      privateDer: (format) => ecPrivateDer(curve, d, point, format === 'pkcs8'),
    };
  }
  const { privateKey } = await generateKeyPair(spec);
  if (spec.type === 'ec' && !curve?.jwk) return encodedKeyOf(privateKey);
  const encoded = derFromJwk(privateKey.export({ format: 'jwk' }));
  return {
    spec,
    spki: encoded.spki,
    privateDer: (format) => (format === 'pkcs8' ? encoded.pkcs8() : encoded.native()),
  };
}

/** The PEM label of a private key's DER structure. */
export function privateKeyLabel(spec: KeySpec, format: PrivateKeyFormat): string {
  if (format === 'pkcs8' || spec.type === 'ed25519') return 'PRIVATE KEY';
  return spec.type === 'rsa' ? 'RSA PRIVATE KEY' : 'EC PRIVATE KEY';
}
