import { createHmac, generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import {
  base64urlBytes,
  keyOf,
  parseJws,
  publicJwk,
  thumbprint,
  verifyHmacJws,
  verifyJws,
} from '../../../src/secrets/pki/acme/jws.js';
import { NONCE_TTL_MS, Nonces } from '../../../src/secrets/pki/acme/nonces.js';
import { AcmeProblem } from '../../../src/secrets/pki/acme/problem.js';
import { accountKey, jws, spareBit } from '../../support/acme-client.js';

const kindOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof AcmeProblem) return err.kind;
    throw err;
  }
  return 'none';
};
/** The problem kind a verification ends in, or 'none'. */
const settledKind = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof AcmeProblem) return err.kind;
    throw err;
  }
  return 'none';
};

const body = (o: unknown) => Buffer.from(JSON.stringify(o));

describe('JWK thumbprints (RFC 7638)', () => {
  it('gives the RFC 7638 §3.1 example thumbprint', () => {
    const jwk = {
      kty: 'RSA',
      n: '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
      e: 'AQAB',
      alg: 'RS256',
      kid: '2011-04-29',
    };
    expect(thumbprint(publicJwk(jwk))).toBe('NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs');
  });

  it('refuses private keys and unsupported key types', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const full = privateKey.export({ format: 'jwk' });
    expect(kindOf(() => publicJwk(full))).toBe('badPublicKey');
    expect(kindOf(() => publicJwk({ kty: 'oct', k: 'AAAA' }))).toBe('badPublicKey');
  });
});

describe('flattened JWS', () => {
  it('verifies ES256 and RS256 signatures and refuses a tampered payload', async () => {
    for (const alg of ['ES256', 'RS256'] as const) {
      const k = accountKey(alg);
      const signed = jws(k, { jwk: k.jwk, nonce: 'n', url: 'https://x/acme' }, { a: 1 });
      const parsed = parseJws(body(signed));
      expect(parsed.payload).toEqual({ a: 1 });
      expect(await settledKind(verifyJws(parsed, keyOf(publicJwk(parsed.protected.jwk))))).toBe(
        'none',
      );
      const tampered = parseJws(
        body({ ...signed, payload: Buffer.from('{"a":2}').toString('base64url') }),
      );
      expect(await settledKind(verifyJws(tampered, keyOf(k.jwk)))).toBe('malformed');
    }
  });

  it('reads an empty payload as POST-as-GET and refuses other serializations', () => {
    const k = accountKey();
    expect(parseJws(body(jws(k, { kid: 'x' }, undefined))).payload).toBeUndefined();
    expect(kindOf(() => parseJws(body({ signatures: [] })))).toBe('malformed');
    expect(kindOf(() => parseJws(Buffer.from('not json')))).toBe('malformed');
    expect(kindOf(() => parseJws(undefined))).toBe('malformed');
  });

  it('reads each part only in its canonical base64url: other spellings of the same bytes are malformed', () => {
    const k = accountKey();
    const good = jws(k, { kid: 'x' }, { hello: 'world' });
    expect(parseJws(body(good)).payload).toEqual({ hello: 'world' });
    for (const part of ['protected', 'payload', 'signature'] as const) {
      const text = good[part]!;
      // 3n bytes leave no spare bits; a part of such a length is skipped here.
      if (text.length % 4 === 0) continue;
      const respelled = spareBit(text);
      expect(respelled).not.toBe(text);
      expect(Buffer.from(respelled, 'base64url')).toEqual(Buffer.from(text, 'base64url'));
      expect(kindOf(() => parseJws(body({ ...good, [part]: respelled })))).toBe('malformed');
    }
    // Padding is not base64url's (RFC 7515 §2).
    expect(kindOf(() => parseJws(body({ ...good, payload: `${good.payload}=` })))).toBe(
      'malformed',
    );
  });

  it('decodes base64url only as written canonically', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        const text = Buffer.from(bytes).toString('base64url');
        expect(base64urlBytes(text)).toEqual(Buffer.from(bytes));
        // One character more is never another spelling of the same bytes.
        for (const extra of ['A', 'B', '='])
          expect(base64urlBytes(`${text}${extra}`)?.equals(Buffer.from(bytes)) ?? false).toBe(
            false,
          );
      }),
    );
    expect(base64urlBytes('QQ')).toEqual(Buffer.from('A'));
    for (const text of ['QR', 'QQ==', 'Q', 'QQ+', 'Q Q', 42, undefined])
      expect(base64urlBytes(text)).toBeUndefined();
  });

  it('refuses an algorithm that does not fit the key, and one it does not know', async () => {
    const ec = accountKey('ES256');
    const rsa = accountKey('RS256');
    const asRsa = parseJws(
      body({ ...jws(ec, {}, {}), protected: Buffer.from('{"alg":"RS256"}').toString('base64url') }),
    );
    expect(await settledKind(verifyJws(asRsa, keyOf(ec.jwk)))).toBe('badSignatureAlgorithm');
    const none = parseJws(
      body({ ...jws(rsa, {}, {}), protected: Buffer.from('{"alg":"none"}').toString('base64url') }),
    );
    expect(await settledKind(verifyJws(none, keyOf(rsa.jwk)))).toBe('badSignatureAlgorithm');
  });

  it('refuses an unencoded payload (RFC 7797), and a DER-encoded ECDSA signature as jose does', async () => {
    const k = accountKey('ES256');
    const signed = jws(k, { jwk: k.jwk, crit: ['b64'], b64: false }, { a: 1 });
    expect(kindOf(() => parseJws(body(signed)))).toBe('malformed');
    const good = jws(k, { jwk: k.jwk }, { a: 1 });
    const raw = Buffer.from(good.signature ?? '', 'base64url');
    const int = (b: Buffer) => {
      const v = b[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b;
      return Buffer.concat([Buffer.from([0x02, v.length]), v]);
    };
    const seq = Buffer.concat([int(raw.subarray(0, 32)), int(raw.subarray(32))]);
    const asDer = Buffer.concat([Buffer.from([0x30, seq.length]), seq]).toString('base64url');
    const parsed = parseJws(body({ ...good, signature: asDer }));
    expect(await settledKind(verifyJws(parsed, keyOf(k.jwk)))).toBe('malformed');
  });

  it('verifies an HS256 external account binding', async () => {
    const key = Buffer.alloc(32, 3);
    const protectedB64 = Buffer.from('{"alg":"HS256","kid":"k"}').toString('base64url');
    const payloadB64 = Buffer.from('{}').toString('base64url');
    const signature = createHmac('sha256', key)
      .update(`${protectedB64}.${payloadB64}`)
      .digest('base64url');
    const parsed = parseJws(body({ protected: protectedB64, payload: payloadB64, signature }));
    expect(await settledKind(verifyHmacJws(parsed, key))).toBe('none');
    expect(await settledKind(verifyHmacJws(parsed, Buffer.alloc(32, 4)))).toBe('unauthorized');
  });
});

describe('replay nonces', () => {
  it('are accepted once, and not after they expire', () => {
    const clock = new ManualClock();
    const nonces = new Nonces(clock);
    const a = nonces.issue();
    const b = nonces.issue();
    expect(a).not.toBe(b);
    expect(nonces.consume(a)).toBe(true);
    expect(nonces.consume(a)).toBe(false);
    expect(nonces.consume('never-issued')).toBe(false);
    clock.advance(NONCE_TTL_MS);
    expect(nonces.consume(b)).toBe(false);
  });

  it('are kept up to a bound: past it the oldest unspent one goes', () => {
    const nonces = new Nonces(new ManualClock());
    const issued = Array.from({ length: 50_001 }, () => nonces.issue());
    expect(nonces.consume(issued[0]!)).toBe(false);
    expect(nonces.consume(issued[1]!)).toBe(true);
    expect(nonces.consume(issued[50_000]!)).toBe(true);
  });
});
