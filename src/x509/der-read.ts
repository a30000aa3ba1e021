/**
 * The strict DER reader every byte a caller sends goes through (ADR 0094). It refuses what Go's
 * `encoding/asn1` and `cryptobyte` refuse — indefinite and non-minimal lengths, BOOLEANs other
 * than 00/ff, non-minimal INTEGERs and OID arcs, BIT STRINGs with bad padding, malformed times and
 * strings, trailing bytes — and a little more that X.509 never uses (high tag numbers, constructed
 * strings). Decisions are taken on values read here, never on byte searches.
 */

/** Input that is not canonical DER; the message names what is wrong and where. */
export class DerError extends Error {}

/** One element found by the reader. */
export interface Element {
  tag: number;
  /** offset of the tag byte */
  start: number;
  /** offset of the first content byte */
  contentStart: number;
  /** offset just past the content */
  end: number;
}

const fail = (what: string, at: number): never => {
  throw new DerError(`${what} at offset ${at}`);
};

/** True for a constructed element (SEQUENCE, SET, explicit tags). */
export const isConstructed = (el: Element): boolean => (el.tag & 0x20) !== 0;

/**
 * Reads the element at `offset`, which must end by `limit` (the end of its parent). Only the
 * definite, minimal length forms of DER are accepted.
 */
export function read(buf: Buffer, offset = 0, limit = buf.length): Element {
  const tag = buf[offset];
  const first = buf[offset + 1];
  if (tag === undefined || first === undefined || offset + 2 > limit) fail('truncated DER', offset);
  if (((tag as number) & 0x1f) === 0x1f) fail('high-tag-number form is not used by X.509', offset);
  let pos = offset + 2;
  let len = first as number;
  if (len === 0x80) fail('indefinite length is not DER', offset);
  if (len > 0x80) {
    const n = len & 0x7f;
    if (n > 4) fail('length too large', offset);
    if (buf[pos] === 0) fail('length has a superfluous leading zero (not DER)', offset);
    len = 0;
    for (let i = 0; i < n; i++) {
      const b = buf[pos++];
      if (b === undefined || pos > limit) fail('truncated DER', offset);
      len = len * 256 + (b as number);
    }
    if (len < 0x80) fail('length in long form where the short form fits (not DER)', offset);
  }
  const end = pos + len;
  if (end > limit) fail('truncated DER', offset);
  return { tag: tag as number, start: offset, contentStart: pos, end };
}

/** The children of a constructed element; they must fill it exactly. */
export function children(buf: Buffer, parent: Element): Element[] {
  if (!isConstructed(parent)) fail('a primitive element has no children', parent.start);
  const out: Element[] = [];
  for (let pos = parent.contentStart; pos < parent.end;) {
    const el = read(buf, pos, parent.end);
    out.push(el);
    pos = el.end;
  }
  return out;
}

export const whole = (buf: Buffer, el: Element): Buffer => buf.subarray(el.start, el.end);
export const content = (buf: Buffer, el: Element): Buffer => buf.subarray(el.contentStart, el.end);

/** Dotted text of an OID's content bytes (use `oidOf` on untrusted input: it checks them). */
export function oidText(bytes: Buffer): string {
  const arcs: bigint[] = [];
  let v = 0n;
  for (const byte of bytes) {
    v = (v << 7n) | BigInt(byte & 0x7f);
    if (!(byte & 0x80)) {
      arcs.push(v);
      v = 0n;
    }
  }
  const first = arcs.shift() ?? 0n;
  const head = first < 80n ? [first / 40n, first % 40n] : [2n, first - 80n];
  return [...head, ...arcs].join('.');
}

const expectTag = (el: Element, tag: number, what: string): void => {
  if (el.tag !== tag) fail(`expected ${what}, found tag 0x${el.tag.toString(16)}`, el.start);
};

/** A BOOLEAN: one byte, 00 or ff. */
export function boolean(buf: Buffer, el: Element): boolean {
  expectTag(el, 0x01, 'BOOLEAN');
  checkPrimitive(buf, el);
  return buf[el.contentStart] === 0xff;
}

/** An INTEGER's two's-complement bytes, checked minimal. */
export function integer(buf: Buffer, el: Element): Buffer {
  expectTag(el, 0x02, 'INTEGER');
  checkPrimitive(buf, el);
  return content(buf, el);
}

/** A small non-negative INTEGER (a path length, a version). */
export function smallInt(buf: Buffer, el: Element): number {
  const bytes = integer(buf, el);
  if ((bytes[0] ?? 0) & 0x80) fail('negative INTEGER', el.start);
  if (bytes.length > 4) fail('INTEGER too large', el.start);
  return bytes.readUIntBE(0, bytes.length);
}

/** An OBJECT IDENTIFIER's dotted text, its arcs checked minimal. */
export function oidOf(buf: Buffer, el: Element): string {
  expectTag(el, 0x06, 'OBJECT IDENTIFIER');
  checkPrimitive(buf, el);
  return oidText(content(buf, el));
}

/** A BIT STRING's bytes (without the unused-bits octet) and its unused-bit count. */
export function bitString(buf: Buffer, el: Element): { bytes: Buffer; unused: number } {
  expectTag(el, 0x03, 'BIT STRING');
  checkPrimitive(buf, el);
  return { bytes: buf.subarray(el.contentStart + 1, el.end), unused: buf[el.contentStart] ?? 0 };
}

/** An OCTET STRING's bytes. */
export function octetString(buf: Buffer, el: Element): Buffer {
  expectTag(el, 0x04, 'OCTET STRING');
  return content(buf, el);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const TIME_UTC = /^\d{12}Z$/;
const TIME_GENERALIZED = /^\d{14}Z$/;

/** The Date a UTCTime or GeneralizedTime element holds (DER: seconds, `Z`, no fraction). */
export function time(buf: Buffer, el: Element): Date {
  if (el.tag !== 0x17 && el.tag !== 0x18) fail('expected a time', el.start);
  checkPrimitive(buf, el);
  const t = content(buf, el).toString('latin1');
  const full = el.tag === 0x17 ? `${Number(t.slice(0, 2)) >= 50 ? '19' : '20'}${t}` : t;
  const n = (from: number, to: number) => Number(full.slice(from, to));
  return new Date(Date.UTC(n(0, 4), n(4, 6) - 1, n(6, 8), n(8, 10), n(10, 12), n(12, 14)));
}

function validTime(text: string, generalized: boolean): boolean {
  if (!(generalized ? TIME_GENERALIZED : TIME_UTC).test(text)) return false;
  const full = generalized ? text : `${Number(text.slice(0, 2)) >= 50 ? '19' : '20'}${text}`;
  const n = (from: number, to: number) => Number(full.slice(from, to));
  const d = new Date(Date.UTC(n(0, 4), n(4, 6) - 1, n(6, 8), n(8, 10), n(10, 12), n(12, 14)));
  return (
    d.getUTCFullYear() === n(0, 4) &&
    d.getUTCMonth() === n(4, 6) - 1 &&
    d.getUTCDate() === n(6, 8) &&
    d.getUTCHours() === n(8, 10) &&
    d.getUTCMinutes() === n(10, 12) &&
    d.getUTCSeconds() === n(12, 14)
  );
}

/** PrintableString's characters as Go parses them (`*` and `&` tolerated, as Go does). */
const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?*&]*$/;

/** Universal primitive tags and the check each one's content must pass. */
function checkPrimitive(buf: Buffer, el: Element): void {
  const c = content(buf, el);
  const bad = (what: string) => fail(what, el.start);
  if (el.tag & 0xc0) return; // context, application and private tags: the schema decides
  if (isConstructed(el)) {
    if (el.tag !== 0x30 && el.tag !== 0x31) bad(`constructed form of tag 0x${el.tag.toString(16)}`);
    return;
  }
  switch (el.tag) {
    case 0x01:
      if (c.length !== 1 || (c[0] !== 0x00 && c[0] !== 0xff))
        bad('BOOLEAN is not DER (one byte, 00 or ff)');
      return;
    case 0x02:
    case 0x0a:
      if (c.length === 0) bad('empty INTEGER');
      if (c.length > 1 && ((c[0] === 0x00 && !(c[1]! & 0x80)) || (c[0] === 0xff && c[1]! & 0x80)))
        bad('INTEGER is not minimally encoded');
      return;
    case 0x03: {
      const unused = c[0];
      if (unused === undefined) bad('empty BIT STRING');
      else if (unused > 7 || (c.length === 1 && unused !== 0))
        bad('BIT STRING has an invalid unused-bits count');
      else if (unused && ((c[c.length - 1] ?? 0) & ((1 << unused) - 1)) !== 0)
        bad('BIT STRING has non-zero padding bits');
      return;
    }
    case 0x05:
      if (c.length !== 0) bad('NULL with content');
      return;
    case 0x06:
      if (c.length === 0) bad('empty OBJECT IDENTIFIER');
      for (let i = 0; i < c.length; i++)
        if (c[i] === 0x80 && (i === 0 || !(c[i - 1]! & 0x80)))
          bad('OBJECT IDENTIFIER arc is not minimally encoded');
      if (c[c.length - 1]! & 0x80) bad('OBJECT IDENTIFIER is truncated');
      return;
    case 0x0c:
      try {
        utf8.decode(c);
      } catch {
        bad('UTF8String is not valid UTF-8');
      }
      return;
    case 0x12:
      if (!/^[0-9 ]*$/.test(c.toString('latin1'))) bad('NumericString has other characters');
      return;
    case 0x13:
      if (!PRINTABLE.test(c.toString('latin1'))) bad('PrintableString has other characters');
      return;
    case 0x16:
      if (c.some((b) => b > 0x7f)) bad('IA5String has non-ASCII bytes');
      return;
    case 0x17:
    case 0x18:
      if (!validTime(c.toString('latin1'), el.tag === 0x18))
        bad(`${el.tag === 0x17 ? 'UTCTime' : 'GeneralizedTime'} is not DER (YYMMDDHHMMSSZ)`);
      return;
    case 0x1e:
      if (c.length % 2) bad('BMPString has an odd length');
      return;
    case 0x1c:
      if (c.length % 4) bad('UniversalString length is not a multiple of four');
      return;
    default:
      return;
  }
}

/** How deep structures may nest: far beyond any X.509 structure, far below the stack's limit. */
const MAX_DEPTH = 32;

/** Checks an element and everything inside it. */
export function walk(buf: Buffer, el: Element, depth = 0): void {
  if (depth > MAX_DEPTH) fail('structure nested too deeply', el.start);
  checkPrimitive(buf, el);
  if (isConstructed(el)) for (const child of children(buf, el)) walk(buf, child, depth + 1);
}

/** Reads one whole DER value: the element must fill `buf` exactly and be canonical throughout. */
export function parseDer(buf: Buffer): Element {
  const top = read(buf, 0);
  if (top.end !== buf.length)
    fail(`${buf.length - top.end} trailing bytes after the value`, top.end);
  walk(buf, top);
  return top;
}
