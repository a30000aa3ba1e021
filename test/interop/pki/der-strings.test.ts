import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/core/errors.js';
import { encodeName } from '../../../src/x509/certificate.js';
import * as der from '../../../src/x509/der.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';
import { openssl, scratch } from '../../support/pki-openssl.js';

const dir = scratch();
let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
});
afterAll(async () => {
  await t.close();
  dir.done();
});

/** The string leaves openssl reads in a DER structure: [type, value] in order. */
function leaves(bytes: Buffer): [string, string][] {
  const file = dir.path(`n-${Math.random().toString(36).slice(2)}.der`, bytes);
  const parsed = openssl(['asn1parse', '-inform', 'DER', '-in', file]);
  expect(parsed.ok, parsed.out).toBe(true);
  return [...parsed.out.matchAll(/prim: (PRINTABLESTRING|UTF8STRING|IA5STRING)\s*:(.*)$/gm)].map(
    (m) => [m[1]!, m[2]!],
  );
}

// PrintableString as X.680 §41.4 lists it, less `*` and `&` which Go's encoder never writes.
const PRINTABLE = new Set(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?",
);
const expectedType = (s: string) =>
  [...s].every((c) => PRINTABLE.has(c)) ? 'PRINTABLESTRING' : 'UTF8STRING';

const value = fc
  .array(fc.constantFrom(..."aZ09 '()+,-./:=?*&@_!#Üé中".split('')), {
    minLength: 1,
    maxLength: 12,
  })
  .map((cs) => cs.join(''));

describe('the DER writer picks string types as Go does, read back by openssl', () => {
  it('country and serialNumber are PrintableString when they can be, else UTF8String', () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 3 }), value, (country, serial) => {
        const got = leaves(encodeName({ country, serialNumber: serial }));
        expect(got).toEqual([...country, serial].map((v) => [expectedType(v), v]));
      }),
      { numRuns: 60 },
    );
  });

  it('IA5String holds ASCII and refuses anything else, as Go x509 does', () => {
    fc.assert(
      fc.property(value, (v) => {
        if ([...v].every((c) => c.charCodeAt(0) < 0x80)) {
          expect(leaves(der.ia5(v))).toEqual([['IA5STRING', v]]);
        } else {
          expect(() => der.ia5(v)).toThrow(ValidationError);
          expect(() => der.ia5(v)).toThrow('cannot be encoded as an IA5String');
        }
      }),
      { numRuns: 60 },
    );
  });

  it('a root with country "Ü@*" carries a UTF8String that openssl x509 reads', async () => {
    const res = await t.pki('POST', 'root/generate/internal', {
      common_name: 'Country',
      key_type: 'ec',
      country: 'Ü@*',
    });
    expect(res.status, res.text).toBe(200);
    const pemFile = dir.path('country.pem', res.data.certificate as string);
    const text = openssl(['x509', '-in', pemFile, '-noout', '-subject', '-nameopt', 'utf8']);
    expect(text.ok, text.out).toBe(true);
    expect(text.out).toContain('C=Ü@*');
    const parsed = openssl(['asn1parse', '-in', pemFile]);
    expect(parsed.out).toMatch(/UTF8STRING\s*:Ü@\*/);
    expect(parsed.out).not.toMatch(/PRINTABLESTRING\s*:Ü/);
  });
});
