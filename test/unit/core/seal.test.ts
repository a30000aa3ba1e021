import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  HMAC_LOOKUP_PREFIX,
  Sealer,
  hmacLookupRange,
  isSealed,
  loadSealKey,
  redactSealed,
  safeEqual,
} from '../../../src/core/seal.js';

const sealer = new Sealer(Buffer.alloc(32, 1));

describe('Sealer', () => {
  it('round-trips any text, and never shows it or its base64', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 4 }), (plain) => {
        const sealed = sealer.seal(plain);
        expect(sealer.unseal(sealed)).toBe(plain);
        const text = JSON.stringify(sealed);
        expect(text.includes(Buffer.from(plain).toString('base64'))).toBe(false);
      }),
    );
  });

  it('opens text and JSON whether sealed or, as older events hold them, in clear', () => {
    fc.assert(
      fc.property(fc.string(), fc.jsonValue(), (text, value) => {
        expect(sealer.open(sealer.seal(text))).toBe(text);
        expect(sealer.open(text)).toBe(text);
        const sealed = sealer.sealJson(value);
        expect(isSealed(sealed)).toBe(true);
        expect(sealer.openJson(sealed)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(sealer.openJson(value)).toBe(value);
      }),
    );
  });

  it('uses a fresh nonce each time but the same hmac', () => {
    const a = sealer.seal('secret');
    const b = sealer.seal('secret');
    expect(a.$sealed).not.toBe(b.$sealed);
    expect(a.$hmac).toBe(b.$hmac);
    expect(sealer.matches('secret', a.$hmac)).toBe(true);
    expect(sealer.matches('other', a.$hmac)).toBe(false);
  });

  it('refuses a tampered ciphertext and another key', () => {
    const s = sealer.seal('secret');
    const flipped = {
      ...s,
      $sealed: s.$sealed.slice(0, -2) + (s.$sealed.endsWith('A') ? 'BB' : 'AA'),
    };
    expect(() => sealer.unseal(flipped)).toThrow();
    expect(() => new Sealer(Buffer.alloc(32, 2)).unseal(s)).toThrow();
  });

  it('redacts sealed values to hmac for display', () => {
    const s = sealer.seal('x');
    expect(isSealed(s)).toBe(true);
    expect(redactSealed({ a: [s], b: 1 })).toEqual({ a: [`hmac:${s.$hmac}`], b: 1 });
  });
});

describe('loadSealKey', () => {
  it('creates a 0600 keyring on first use and reads it back', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-seal-'));
    const key = loadSealKey(dir, undefined);
    expect(statSync(join(dir, 'keyring')).mode & 0o777).toBe(0o600);
    expect(loadSealKey(dir, undefined).equals(key)).toBe(true);
  });

  it('prefers KEEL_SEAL_KEY and rejects a wrong length', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-seal-'));
    expect(loadSealKey(dir, 'ab'.repeat(32)).equals(Buffer.alloc(32, 0xab))).toBe(true);
    expect(() => loadSealKey(dir, 'abcd')).toThrow(/32 bytes/);
  });
});

describe('encrypt / decrypt', () => {
  const sealer = new Sealer(Buffer.alloc(32, 5));
  it('round-trips any text, never shows it, and differs each time', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 4 }), (plain) => {
        const a = sealer.encrypt(plain);
        expect(sealer.decrypt(a)).toBe(plain);
        expect(a.startsWith('v1:')).toBe(true);
        expect(a.includes(plain)).toBe(false);
        expect(sealer.encrypt(plain)).not.toBe(a);
      }),
    );
  });

  it('refuses text sealed under another key or not sealed at all', () => {
    expect(() => new Sealer(Buffer.alloc(32, 6)).decrypt(sealer.encrypt('x'))).toThrow();
    expect(() => sealer.decrypt('AKIAPLAINSECRET')).toThrow(/unknown seal format/);
  });
});

describe('safeEqual', () => {
  it('agrees with === on any two strings', () => {
    fc.assert(fc.property(fc.string(), fc.string(), (a, b) => safeEqual(a, b) === (a === b)));
    fc.assert(fc.property(fc.string(), (a) => safeEqual(a, a)));
  });
});

describe('hmacLookupRange', () => {
  const hex = fc.stringMatching(/^[0-9a-f]{64}$/);
  it('holds exactly the hex strings sharing the lookup prefix', () => {
    fc.assert(
      fc.property(hex, hex, fc.boolean(), (h, tail, share) => {
        // Half the cases share the prefix, so both sides of the range are exercised.
        const other = share
          ? h.slice(0, HMAC_LOOKUP_PREFIX) + tail.slice(HMAC_LOOKUP_PREFIX)
          : tail;
        const [low, high] = hmacLookupRange(h);
        expect(h >= low && h < high).toBe(true);
        const inRange = other >= low && other < high;
        expect(inRange).toBe(other.slice(0, HMAC_LOOKUP_PREFIX) === h.slice(0, HMAC_LOOKUP_PREFIX));
      }),
    );
  });
});
