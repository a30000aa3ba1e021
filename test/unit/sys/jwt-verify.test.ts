import { generateKeyPairSync, sign, constants, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifiedClaims } from '../../../src/secrets/sys/jwt.js';

const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const CLAIMS = { sub: 'me' };

function signed(alg: string, key: KeyObject, hash: string | null, extra = {}): string {
  const data = `${part({ alg })}.${part(CLAIMS)}`;
  const sig = sign(hash, Buffer.from(data), { key, ...extra });
  return `${data}.${sig.toString('base64url')}`;
}

describe('JWT signatures the JWT method accepts', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
  const ed = generateKeyPairSync('ed25519');
  const ALL = ['RS256', 'PS256', 'ES384', 'EdDSA'];

  it('verifies RS256, PS256, ES384 and EdDSA with the matching key', async () => {
    const cases: [string, string][] = [
      ['RS256', signed('RS256', rsa.privateKey, 'sha256')],
      [
        'PS256',
        signed('PS256', rsa.privateKey, 'sha256', {
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
        }),
      ],
      ['ES384', signed('ES384', ec384.privateKey, 'sha384', { dsaEncoding: 'ieee-p1363' })],
      ['EdDSA', signed('EdDSA', ed.privateKey, null)],
    ];
    const keys = [rsa.publicKey, ec384.publicKey, ed.publicKey];
    for (const [alg, token] of cases)
      expect(await verifiedClaims(token, keys, ALL), alg).toEqual(CLAIMS);
  });

  it('refuses alg none, an algorithm not accepted, a key of another kind and a changed payload', async () => {
    const none = `${part({ alg: 'none' })}.${part(CLAIMS)}.`;
    await expect(verifiedClaims(none, [rsa.publicKey], ALL)).rejects.toThrow(
      /unsupported signing algorithm "none"/,
    );
    const rs = signed('RS256', rsa.privateKey, 'sha256');
    await expect(verifiedClaims(rs, [rsa.publicKey], ['ES384'])).rejects.toThrow(/unsupported/);
    await expect(verifiedClaims(rs, [ec384.publicKey, ed.publicKey], ALL)).rejects.toThrow(
      /no known key verifies the signature/,
    );
    const [h, , s] = rs.split('.');
    const forged = `${h}.${part({ sub: 'admin' })}.${s}`;
    await expect(verifiedClaims(forged, [rsa.publicKey], ALL)).rejects.toThrow(/no known key/);
    await expect(verifiedClaims('a.b', [rsa.publicKey], ALL)).rejects.toThrow(/malformed JWT/);
  });
});
