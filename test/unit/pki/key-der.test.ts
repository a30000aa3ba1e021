import {
  createECDH,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateEncodedKey, privateKeyLabel } from '../../../src/x509/encoded-key.js';
import { pem } from '../../../src/x509/certificate.js';
import * as der from '../../../src/x509/der.js';
import { curveOf, ecPrivateDer, jwkFromSpki } from '../../../src/x509/key-der.js';
import {
  keySpecOf,
  privateKeyPem,
  publicKeyFromSpki,
  type KeySpec,
} from '../../../src/x509/keys.js';
import { fixtureRsaKey } from '../../support/pki-openssl.js';

const nativeType = (spec: KeySpec) =>
  spec.type === 'rsa' ? 'pkcs1' : spec.type === 'ec' ? 'sec1' : 'pkcs8';

/** What OpenSSL writes for the same private key, read back from Keel's native DER. */
function opensslView(spec: KeySpec, native: Buffer) {
  const key = createPrivateKey({ key: native, format: 'der', type: nativeType(spec) });
  return {
    key,
    native: key.export({ type: nativeType(spec), format: 'der' }),
    pkcs8: key.export({ type: 'pkcs8', format: 'der' }),
    spki: createPublicKey(key).export({ type: 'spki', format: 'der' }),
  };
}

/** A copy of `bytes` with the lowest bit of byte `at` flipped (negative `at` counts from the end). */
function flipped(bytes: Buffer, at: number): Buffer {
  const out = Buffer.from(bytes);
  const i = at < 0 ? out.length + at : at;
  out[i] = (out[i] ?? 0) ^ 1;
  return out;
}

const SPECS: KeySpec[] = [
  { type: 'ec', bits: 224 },
  { type: 'ec', bits: 256 },
  { type: 'ec', bits: 384 },
  { type: 'ec', bits: 521 },
  { type: 'ed25519', bits: 0 },
  { type: 'rsa', bits: 2048 },
];

describe('generated keys', () => {
  it.each(SPECS)('encode a %o key byte for byte as OpenSSL does', async (spec) => {
    for (let i = 0; i < (spec.type === 'rsa' ? 1 : 20); i++) {
      const key = await generateEncodedKey(spec);
      const native = key.privateDer('der');
      const openssl = opensslView(spec, native);
      expect(key.spec).toEqual(spec);
      expect(keySpecOf(openssl.key)).toEqual(spec);
      expect(native.equals(openssl.native)).toBe(true);
      expect(key.privateDer('pkcs8').equals(openssl.pkcs8)).toBe(true);
      expect(key.spki.equals(openssl.spki)).toBe(true);
      for (const format of ['der', 'pkcs8'] as const) {
        expect(pem(privateKeyLabel(spec, format), key.privateDer(format))).toBe(
          privateKeyPem(openssl.key, format),
        );
      }
    }
  });

  it('are fresh every time (P-256 keys come from one reused generator)', async () => {
    const keys = await Promise.all(
      Array.from({ length: 50 }, () => generateEncodedKey({ type: 'ec', bits: 256 })),
    );
    expect(new Set(keys.map((k) => k.spki.toString('hex'))).size).toBe(50);
    expect(new Set(keys.map((k) => k.privateDer('der').toString('hex'))).size).toBe(50);
  });

  it('pad an EC scalar with leading zero bytes to the curve size', () => {
    const curve = curveOf(256)!;
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(Buffer.concat([Buffer.from([0, 0]), randomBytes(30)]));
    const d = ecdh.getPrivateKey();
    const point = ecdh.getPublicKey();
    const native = ecPrivateDer(curve, d.subarray(d.length - 30), point, false);
    const openssl = opensslView({ type: 'ec', bits: 256 }, native);
    expect(native.equals(openssl.native)).toBe(true);
    expect(ecPrivateDer(curve, d, point, true).equals(openssl.pkcs8)).toBe(true);
  });
});

describe('public keys from SubjectPublicKeyInfo', () => {
  const spkiOf = (key: KeyObject) => key.export({ type: 'spki', format: 'der' });

  it('read RSA, EC and Ed25519 keys with their spec, as OpenSSL reads them', () => {
    const keys = [
      createPublicKey(fixtureRsaKey(1)),
      createPublicKey(fixtureRsaKey(2)),
      ...['P-256', 'P-384', 'P-521'].map(
        (namedCurve) => generateKeyPairSync('ec', { namedCurve }).publicKey,
      ),
      generateKeyPairSync('ed25519').publicKey,
    ];
    for (const original of keys) {
      const spki = spkiOf(original);
      const read = publicKeyFromSpki(spki);
      expect(spkiOf(read).equals(spki)).toBe(true);
      expect(jwkFromSpki(spki)?.spec).toEqual(
        keySpecOf(createPublicKey({ key: spki, format: 'der', type: 'spki' })),
      );
    }
  });

  it('hand compressed points and curves without a JWK name to OpenSSL', () => {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const compressed = der.seq(
      der.seq(der.oid('1.2.840.10045.2.1'), der.oid('1.2.840.10045.3.1.7')),
      der.bits(ecdh.getPublicKey(null, 'compressed')),
    );
    expect(jwkFromSpki(compressed)).toBeUndefined();
    expect(keySpecOf(publicKeyFromSpki(compressed))).toEqual({ type: 'ec', bits: 256 });
    const p224 = spkiOf(generateKeyPairSync('ec', { namedCurve: 'P-224' }).publicKey);
    expect(jwkFromSpki(p224)).toBeUndefined();
    expect(keySpecOf(publicKeyFromSpki(p224))).toEqual({ type: 'ec', bits: 224 });
  });

  it('hand RSA keys without NULL parameters or with non-minimal integers to OpenSSL', () => {
    const jwk = createPublicKey(fixtureRsaKey(1)).export({ format: 'jwk' });
    const n = Buffer.from(jwk.n ?? '', 'base64url');
    const e = Buffer.from(jwk.e ?? '', 'base64url');
    const rsa = (params: Buffer[], modulus: Buffer, exponent: Buffer) =>
      der.seq(
        der.seq(der.oid('1.2.840.113549.1.1.1'), ...params),
        der.bits(der.seq(der.tlv(0x02, modulus), der.tlv(0x02, exponent))),
      );
    const canonical = rsa([der.nul()], Buffer.concat([Buffer.from([0]), n]), e);
    expect(jwkFromSpki(canonical)?.spec).toEqual({ type: 'rsa', bits: 2048 });
    expect(jwkFromSpki(rsa([], Buffer.concat([Buffer.from([0]), n]), e))).toBeUndefined();
    expect(
      jwkFromSpki(rsa([der.nul()], Buffer.concat([Buffer.from([0, 0]), n]), e)),
    ).toBeUndefined();
    expect(jwkFromSpki(rsa([der.nul()], n, e))).toBeUndefined(); // negative
    expect(
      jwkFromSpki(rsa([der.nul()], Buffer.concat([Buffer.from([0]), n]), Buffer.from([0]))),
    ).toBeUndefined();
  });

  it('refuse a point off its curve and trailing bytes as OpenSSL does', () => {
    const spki = spkiOf(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey);
    expect(() => publicKeyFromSpki(flipped(spki, -1))).toThrow();
    expect(jwkFromSpki(Buffer.concat([spki, Buffer.from([0])]))).toBeUndefined();
  });
});
