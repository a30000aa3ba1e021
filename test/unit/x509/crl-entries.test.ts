import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { revokedCertificates, type CrlEntry } from '../../../src/x509/crl.js';
import { serialText } from '../../../src/x509/certificate.js';
import * as der from '../../../src/x509/der.js';

/** The same entries through the general DER writer: one TLV at a time, from bytes and a Date. */
function general(entries: readonly CrlEntry[]): Buffer {
  return der.seq(
    ...entries.map((e) =>
      der.seq(
        der.int(Buffer.from(e.serial.replace(/:/g, ''), 'hex')),
        der.time(new Date(e.revokedAt)),
        ...(e.reason === undefined
          ? []
          : [der.seq(der.seq(der.oid('2.5.29.21'), der.octets(der.enumerated(e.reason))))]),
      ),
    ),
  );
}

const entry = fc.record(
  {
    // Leading zero octets and a first octet with its high bit set both occur.
    serial: fc.uint8Array({ minLength: 1, maxLength: 21 }).map((b) => serialText(Buffer.from(b))),
    // Either side of UTCTime's range (1950 to 2049) and across a whole year's seconds.
    revokedAt: fc
      .date({
        min: new Date('1900-01-01T00:00:00.000Z'),
        max: new Date('2300-12-31T23:59:59.999Z'),
        noInvalidDate: true,
      })
      .map((d) => d.toISOString()),
    reason: fc.constantFrom(0, 1, 2, 3, 4, 5, 6, 8, 9, 10),
  },
  { requiredKeys: ['serial', 'revokedAt'] },
);

describe("a CRL's revoked certificates, written from the read model's text", () => {
  it('are the bytes the general DER writer makes of the same entries', () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 40 }), (entries) => {
        expect(revokedCertificates(entries).toString('hex')).toBe(general(entries).toString('hex'));
      }),
      { numRuns: 500 },
    );
  });

  it('take long-form lengths once the list passes 127, 255 and 65,535 bytes', () => {
    for (const n of [1, 5, 6, 10, 11, 2_000, 3_000]) {
      const entries = Array.from({ length: n }, (_, i) => ({
        serial: serialText(Buffer.from(i.toString(16).padStart(8, '0'), 'hex')),
        revokedAt: '2026-11-27T10:00:00.000Z',
      }));
      expect(revokedCertificates(entries).equals(general(entries))).toBe(true);
    }
  });

  it('refuse text that is not what the read model writes', () => {
    const ok = { serial: '0a:bc', revokedAt: '2026-11-27T10:00:00.000Z' };
    expect(revokedCertificates([ok]).length).toBeGreaterThan(0);
    for (const serial of ['', '0a:b', '0A:bc', '0a-bc', '0abc', '0a:bc:', 'zz', '0a::bc'])
      expect(() => revokedCertificates([{ ...ok, serial }])).toThrow(/not a serial/);
    for (const revokedAt of [
      '2026-11-27T10:00:00Z',
      '2026-11-27T10:00:00.000+00:00',
      '2026-13-27T10:00:00.000Z',
      '2026-11-32T10:00:00.000Z',
      '2026-11-27T24:00:00.000Z',
      '+012026-11-27T10:00:00.000Z',
      ' 2026-11-27T10:00:00.000Z',
    ])
      expect(() => revokedCertificates([{ ...ok, revokedAt }])).toThrow(/not a revocation time/);
    for (const reason of [-1, 7, 11, 1.5])
      expect(() => revokedCertificates([{ ...ok, reason }])).toThrow(/not a CRL reason/);
  });
});
