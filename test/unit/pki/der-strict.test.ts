import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DerError, parseDer } from '../../../src/x509/der-read.js';

/**
 * Keel's DER reader against an oracle it did not write: trees generated with a record of every
 * non-canonical encoding put into them (by construction, from the X.690 §8/§10 and Go
 * encoding/asn1 rules), and random byte mutations judged by a second, independent decoder
 * written here from the same rules.
 */

/** One generated value: its bytes, and why it is not DER (empty when it is). */
interface Encoded {
  bytes: number[];
  faults: string[];
}

/** The length octets of `n`, minimal or (mutated) in a longer form. */
function lengthOctets(n: number, form: 'minimal' | 'long' | 'padded'): Encoded {
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  if (form === 'minimal') {
    return { bytes: n < 0x80 ? [n] : [0x80 | bytes.length, ...bytes], faults: [] };
  }
  if (form === 'long') {
    if (n >= 0x80) return lengthOctets(n, 'padded');
    return { bytes: [0x81, n], faults: ['long form for a short length'] };
  }
  const padded = [0, ...bytes];
  return { bytes: [0x80 | padded.length, ...padded], faults: ['leading zero in the length'] };
}

type LengthForm = 'minimal' | 'long' | 'padded';

function tlv(tag: number, content: Encoded, form: LengthForm): Encoded {
  const len = lengthOctets(content.bytes.length, form);
  return {
    bytes: [tag, ...len.bytes, ...content.bytes],
    faults: [...len.faults, ...content.faults],
  };
}

const lengthForm: fc.Arbitrary<LengthForm> = fc.oneof(
  { weight: 12, arbitrary: fc.constant('minimal' as const) },
  { weight: 1, arbitrary: fc.constant('long' as const) },
  { weight: 1, arbitrary: fc.constant('padded' as const) },
);

const boolean: fc.Arbitrary<Encoded> = fc
  .tuple(fc.integer({ min: 0, max: 255 }), lengthForm)
  .map(([v, form]) =>
    tlv(0x01, { bytes: [v], faults: v === 0 || v === 0xff ? [] : ['BER boolean'] }, form),
  );

const integer: fc.Arbitrary<Encoded> = fc
  .tuple(fc.uint8Array({ minLength: 1, maxLength: 9 }), fc.boolean(), lengthForm)
  .map(([raw, pad, form]) => {
    const bytes = [...raw];
    const first = bytes[0]!;
    // A leading 00 before a byte < 0x80, or ff before one >= 0x80, is not minimal.
    if (pad) bytes.unshift(first & 0x80 ? 0xff : 0x00);
    const second = bytes[1];
    const minimal =
      bytes.length === 1 ||
      !(
        (bytes[0] === 0x00 && second !== undefined && second < 0x80) ||
        (bytes[0] === 0xff && second !== undefined && second >= 0x80)
      );
    return tlv(0x02, { bytes, faults: minimal ? [] : ['non-minimal INTEGER'] }, form);
  });

const oid: fc.Arbitrary<Encoded> = fc
  .tuple(
    fc.array(fc.integer({ min: 0, max: 2 ** 28 }), { minLength: 1, maxLength: 6 }),
    fc.boolean(),
    lengthForm,
  )
  .map(([arcs, padArc, form]) => {
    const bytes: number[] = [];
    arcs.forEach((arc, i) => {
      const chunk = [arc & 0x7f];
      for (let v = arc >>> 7; v > 0; v >>>= 7) chunk.unshift(0x80 | (v & 0x7f));
      if (padArc && i === arcs.length - 1) chunk.unshift(0x80);
      bytes.push(...chunk);
    });
    return tlv(0x06, { bytes, faults: padArc ? ['non-minimal OID arc'] : [] }, form);
  });

const bitString: fc.Arbitrary<Encoded> = fc
  .tuple(fc.uint8Array({ maxLength: 6 }), fc.integer({ min: 0, max: 9 }), lengthForm)
  .map(([raw, unused, form]) => {
    const faults: string[] = [];
    if (unused > 7) faults.push('unused bits above 7');
    else if (raw.length === 0 && unused !== 0) faults.push('unused bits in an empty BIT STRING');
    else if (unused > 0 && (raw[raw.length - 1]! & ((1 << unused) - 1)) !== 0)
      faults.push('non-zero padding bits');
    return tlv(0x03, { bytes: [unused, ...raw], faults }, form);
  });

const octets: fc.Arbitrary<Encoded> = fc
  .tuple(fc.uint8Array({ maxLength: 140 }), lengthForm)
  .map(([raw, form]) => tlv(0x04, { bytes: [...raw], faults: [] }, form));

const nul: fc.Arbitrary<Encoded> = fc
  .tuple(fc.boolean(), lengthForm)
  .map(([content, form]) =>
    tlv(0x05, { bytes: content ? [0] : [], faults: content ? ['NULL with content'] : [] }, form),
  );

const text = (s: string) => [...Buffer.from(s, 'latin1')];

const utcTime: fc.Arbitrary<Encoded> = fc
  .tuple(
    fc.date({
      min: new Date('1950-01-01T00:00:00Z'),
      max: new Date('2049-12-31T23:59:59Z'),
      noInvalidDate: true,
    }),
    fc.constantFrom('canonical', 'no seconds', 'offset', 'fraction'),
    lengthForm,
  )
  .map(([d, shape, form]) => {
    const iso = d.toISOString();
    const base = `${iso.slice(2, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}`;
    const s = iso.slice(17, 19);
    const value =
      shape === 'canonical'
        ? `${base}${s}Z`
        : shape === 'no seconds'
          ? `${base}Z`
          : shape === 'offset'
            ? `${base}${s}+0100`
            : `${base}${s}.5Z`;
    return tlv(
      0x17,
      { bytes: text(value), faults: shape === 'canonical' ? [] : [`UTCTime ${shape}`] },
      form,
    );
  });

const printable: fc.Arbitrary<Encoded> = fc
  .tuple(fc.string({ maxLength: 12 }), lengthForm)
  .map(([s, form]) => {
    const bytes = [...Buffer.from(s, 'utf8')];
    const ok = /^[A-Za-z0-9 '()+,\-./:=?*&]*$/.test(s);
    return tlv(0x13, { bytes, faults: ok ? [] : ['PrintableString character'] }, form);
  });

const utf8: fc.Arbitrary<Encoded> = fc
  .tuple(fc.string({ maxLength: 12 }), fc.boolean(), lengthForm)
  .map(([s, broken, form]) => {
    const bytes = [...Buffer.from(s, 'utf8')];
    if (broken) bytes.push(0xc3); // a lead byte with no continuation
    return tlv(0x0c, { bytes, faults: broken ? ['invalid UTF-8'] : [] }, form);
  });

const primitive = fc.oneof(boolean, integer, oid, bitString, octets, nul, utcTime, printable, utf8);

const tree: fc.Arbitrary<Encoded> = fc.letrec<{ node: Encoded }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    primitive,
    fc
      .tuple(
        fc.constantFrom(0x30, 0x31, 0xa0, 0xa3),
        fc.array(tie('node'), { maxLength: 4 }),
        lengthForm,
        fc.boolean(),
      )
      .map(([tag, items, form, indefinite]) => {
        const content = {
          bytes: items.flatMap((i) => i.bytes),
          faults: items.flatMap((i) => i.faults),
        };
        if (indefinite && items.length > 0) {
          return {
            bytes: [tag, 0x80, ...content.bytes, 0x00, 0x00],
            faults: [...content.faults, 'indefinite length'],
          };
        }
        return tlv(tag, content, form);
      }),
  ),
})).node;

/** What Keel's reader says of some bytes: accepted, or the message it refused with. */
function keel(bytes: Buffer): true | string {
  try {
    parseDer(bytes);
    return true;
  } catch (e) {
    if (!(e instanceof DerError)) throw e;
    return e.message;
  }
}

/**
 * An independent strict decoder, written from X.690 for this test: it returns the first rule
 * broken, or undefined for canonical DER. It shares no code with Keel's reader.
 */
function oracle(b: Uint8Array): string | undefined {
  const problem: string[] = [];
  const node = (at: number, end: number, depth: number): number => {
    if (depth > 32) throw new Error('too deep');
    if (end - at < 2) throw new Error('short');
    const tag = b[at]!;
    if ((tag & 0x1f) === 0x1f) throw new Error('high tag');
    let i = at + 1;
    const first = b[i++]!;
    let len: number;
    if (first < 0x80) len = first;
    else if (first === 0x80) throw new Error('indefinite');
    else {
      const count = first - 0x80;
      if (count > 4 || i + count > end) throw new Error('length octets');
      if (b[i] === 0) throw new Error('padded length');
      len = 0;
      for (let k = 0; k < count; k++) len = len * 256 + b[i++]!;
      if (len < 0x80) throw new Error('long form short length');
    }
    if (i + len > end) throw new Error('overrun');
    const c = b.subarray(i, i + len);
    const constructed = (tag & 0x20) !== 0;
    const universal = (tag & 0xc0) === 0;
    if (constructed) {
      if (universal && tag !== 0x30 && tag !== 0x31) throw new Error('constructed universal');
      let p = i;
      while (p < i + len) p = node(p, i + len, depth + 1);
    } else if (universal) {
      switch (tag) {
        case 0x01:
          if (len !== 1 || (c[0] !== 0 && c[0] !== 0xff)) throw new Error('boolean');
          break;
        case 0x02:
        case 0x0a:
          if (len === 0) throw new Error('empty int');
          if (len > 1 && c[0] === 0 && c[1]! < 0x80) throw new Error('int pad 00');
          if (len > 1 && c[0] === 0xff && c[1]! >= 0x80) throw new Error('int pad ff');
          break;
        case 0x03:
          if (len === 0 || c[0]! > 7 || (len === 1 && c[0] !== 0)) throw new Error('bits');
          if (len > 1 && (c[len - 1]! & ((1 << c[0]!) - 1)) !== 0) throw new Error('padding');
          break;
        case 0x05:
          if (len !== 0) throw new Error('null');
          break;
        case 0x06: {
          if (len === 0 || c[len - 1]! >= 0x80) throw new Error('oid end');
          let start = true;
          for (const x of c) {
            if (start && x === 0x80) throw new Error('oid pad');
            start = x < 0x80;
          }
          break;
        }
        case 0x0c:
          if (!Buffer.from(Buffer.from(c).toString('utf8'), 'utf8').equals(Buffer.from(c)))
            throw new Error('utf8');
          break;
        case 0x13:
          for (const x of c)
            if (!/[A-Za-z0-9 '()+,\-./:=?*&]/.test(String.fromCharCode(x)))
              throw new Error('printable');
          break;
        case 0x12:
          for (const x of c) if (x !== 0x20 && (x < 0x30 || x > 0x39)) throw new Error('numeric');
          break;
        case 0x16:
          for (const x of c) if (x >= 0x80) throw new Error('ia5');
          break;
        case 0x1c:
          if (len % 4 !== 0) throw new Error('universal string');
          break;
        case 0x1e:
          if (len % 2 !== 0) throw new Error('bmp string');
          break;
        case 0x17:
        case 0x18: {
          const s = Buffer.from(c).toString('latin1');
          const m =
            tag === 0x17
              ? /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s)
              : /^(\d\d\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s);
          if (!m) throw new Error('time');
          const [yy = 0, mo = 0, dd = 0, hh = 0, mi = 0, ss = 0] = m.slice(1).map(Number);
          const year = tag === 0x18 ? yy : yy < 50 ? 2000 + yy : 1900 + yy;
          const days = new Date(Date.UTC(year, mo, 0)).getUTCDate();
          if (mo < 1 || mo > 12 || dd < 1 || dd > days || hh > 23 || mi > 59 || ss > 59)
            throw new Error('utctime range');
          break;
        }
        default:
          break;
      }
    }
    return i + len;
  };
  try {
    if (node(0, b.length, 0) !== b.length) problem.push('trailing');
  } catch (e) {
    problem.push((e as Error).message);
  }
  return problem[0];
}

describe('the strict DER reader', () => {
  it('accepts exactly the generated trees that have no fault, and names a fault for the rest', () => {
    fc.assert(
      fc.property(tree, fc.boolean(), (t, trailing) => {
        const bytes = Buffer.from(trailing ? [...t.bytes, 0x05, 0x00] : t.bytes);
        const canonical = t.faults.length === 0 && !trailing;
        const verdict = keel(bytes);
        if (canonical) expect(verdict).toBe(true);
        else expect(verdict, `faults: ${t.faults.join('; ')}`).toEqual(expect.any(String));
      }),
      { numRuns: 2000 },
    );
  });

  it('agrees with the independent decoder on random mutations of canonical trees', () => {
    const canonicalTree = tree.filter((t) => t.faults.length === 0 && t.bytes.length > 0);
    fc.assert(
      fc.property(
        canonicalTree,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), {
          minLength: 1,
          maxLength: 3,
        }),
        (t, edits) => {
          const bytes = Buffer.from(t.bytes);
          for (const [at, v] of edits) bytes[at % bytes.length] = v;
          const theirs = oracle(bytes);
          const ours = keel(bytes);
          expect(ours === true, `oracle: ${theirs ?? 'canonical'}, keel: ${String(ours)}`).toBe(
            theirs === undefined,
          );
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('names the rule broken, with its offset', () => {
    const cases: [number[], RegExp][] = [
      [[0x30, 0x03, 0x01, 0x01, 0x01], /BOOLEAN is not DER.*offset 2/],
      [[0x04, 0x81, 0x01, 0x00], /long form where the short form fits/],
      [[0x04, 0x82, 0x00, 0x81, ...Array<number>(0x81).fill(0)], /superfluous leading zero/],
      [[0x30, 0x80, 0x00, 0x00], /indefinite length/],
      [[0x02, 0x02, 0x00, 0x01], /INTEGER is not minimally encoded/],
      [[0x06, 0x02, 0x80, 0x01], /OBJECT IDENTIFIER arc is not minimally encoded/],
      [[0x03, 0x02, 0x01, 0x01], /non-zero padding bits/],
      [[0x05, 0x00, 0x00], /1 trailing bytes/],
      [[0x24, 0x03, 0x04, 0x01, 0x00], /constructed form of tag 0x24/],
      [[0x1f, 0x21, 0x00], /high-tag-number form/],
    ];
    for (const [bytes, message] of cases) expect(keel(Buffer.from(bytes))).toMatch(message);
  });
});
