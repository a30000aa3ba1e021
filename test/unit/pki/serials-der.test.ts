import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  normaliseSerial,
  pem,
  pemBlocks,
  randomSerial,
  serialText,
} from '../../../src/x509/certificate.js';
import * as der from '../../../src/x509/der.js';

describe('serials', () => {
  it('are positive, at most 159 bits, minimal bytes, colon hex', () => {
    for (let i = 0; i < 500; i++) {
      const s = randomSerial();
      expect(s.length).toBeLessThanOrEqual(20);
      expect(s[0]).not.toBe(0);
      if (s.length === 20) expect((s[0] ?? 0) & 0x80).toBe(0);
      expect(serialText(s)).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2})*$/);
    }
    expect(
      serialText(randomSerial(() => Buffer.from([0, 0, 1, ...Array<number>(17).fill(2)]))),
    ).toBe(`01:${Array<string>(17).fill('02').join(':')}`);
  });

  it('never repeat, nor share bytes, across the refills of their random pool', () => {
    const seen = new Set<string>();
    const made: Buffer[] = [];
    // 20 bytes each from a 4 KiB pool: several refills.
    for (let i = 0; i < 1000; i++) {
      const s = randomSerial();
      seen.add(s.toString('hex'));
      made.push(s);
    }
    expect(seen.size).toBe(1000);
    // Each is a copy: changing one changes no other.
    const before = made[1]!.toString('hex');
    made[0]!.fill(0);
    expect(made[1]!.toString('hex')).toBe(before);
  });

  it('normalise from colons or hyphens in any case, and refuse what is not hex', () => {
    expect(normaliseSerial('39-DD-2E')).toBe('39:dd:2e');
    expect(normaliseSerial('00:39:dd')).toBe('39:dd');
    expect(normaliseSerial('xyz')).toBeUndefined();
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 20 }), (bytes) => {
        const text = serialText(Buffer.from(bytes));
        expect(normaliseSerial(text.toUpperCase().replace(/:/g, '-'))).toBe(normaliseSerial(text));
      }),
    );
  });
});

describe('DER', () => {
  it('writes integers, OIDs and times that read back', () => {
    expect(der.int(0).toString('hex')).toBe('020100');
    expect(der.int(128).toString('hex')).toBe('02020080');
    expect(der.oid('1.2.840.113549.1.1.11').toString('hex')).toBe('06092a864886f70d01010b');
    expect(der.oidText(der.content(der.oid('2.5.29.37.0'), der.read(der.oid('2.5.29.37.0'))))).toBe(
      '2.5.29.37.0',
    );
    expect(der.time(new Date('2049-12-31T23:59:59Z')).toString('latin1')).toContain(
      '491231235959Z',
    );
    expect(der.time(new Date('9999-12-31T23:59:59Z')).toString('latin1')).toContain(
      '99991231235959Z',
    );
    const long = der.octets(Buffer.alloc(300));
    expect(der.read(long).end).toBe(long.length);
    expect(long.subarray(0, 4).toString('hex')).toBe('0482012c');
    expect(der.seq(Buffer.alloc(200)).subarray(0, 3).toString('hex')).toBe('3081c8');
    expect(der.bits(Buffer.from([0xff]), 3).toString('hex')).toBe('030203ff');
    expect(der.set().toString('hex')).toBe('3100');
    expect(() => der.read(Buffer.from([0x30, 0x05, 0x01]))).toThrow('truncated DER');
  });

  it('constructed elements hold their items in order, with short and long lengths', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 70_000 }), { maxLength: 4 }),
        fc.constantFrom(0x30, 0x31),
        (sizes, tag) => {
          const items = sizes.map((n, i) => der.octets(Buffer.alloc(n, i + 1)));
          const whole = tag === 0x30 ? der.seq(...items) : der.set(...items);
          const el = der.read(whole);
          expect([el.tag, el.end]).toEqual([tag, whole.length]);
          // Digests, not the buffers: a deep comparison of 280 kB of bytes costs seconds.
          const digest = (b: Buffer) => createHash('sha256').update(b).digest('hex');
          expect(der.children(whole, el).map((c) => digest(der.whole(whole, c)))).toEqual(
            items.map(digest),
          );
        },
      ),
      { numRuns: 30 },
    );
  });

  it('PEM round-trips without a trailing newline, in lines of 64', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 400 }), (bytes) => {
        const text = pem('CERTIFICATE', Buffer.from(bytes));
        expect(text.endsWith('-----END CERTIFICATE-----')).toBe(true);
        const body = text.split('\n').slice(1, -1);
        expect(body.slice(0, -1).every((line) => line.length === 64)).toBe(true);
        expect(body.at(-1)?.length).toBeGreaterThan(0);
        expect(body.at(-1)?.length).toBeLessThanOrEqual(64);
        expect(pemBlocks(text)[0]?.der.equals(Buffer.from(bytes))).toBe(true);
      }),
    );
  });
});
