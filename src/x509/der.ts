import { ValidationError } from '../core/errors.js';

/**
 * A minimal DER writer (the strict reader is `der-read.ts`, re-exported here). Certificates, CRLs and extensions are assembled here directly
 * instead of through a schema library: the structures are few and fixed, and building them by hand
 * keeps issuing at a fraction of a millisecond (the schema route costs ~3 ms a certificate).
 */

/** Bytes taken by the length octets of a content of `n` bytes. */
export const lengthSize = (n: number): number =>
  n < 0x80 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x1000000 ? 4 : 5;

/**
 * Writes tag and length at `at` in `out`; returns where the content begins. Each TLV is one
 * allocation: certificates are built from dozens of them on every request.
 */
export function header(out: Buffer, tag: number, n: number, at = 0): number {
  out[at] = tag;
  const size = lengthSize(n);
  if (size === 1) {
    out[at + 1] = n;
    return at + 2;
  }
  out[at + 1] = 0x80 | (size - 1);
  for (let i = size - 1, v = n; i >= 1; i--, v = Math.floor(v / 256)) out[at + 1 + i] = v & 0xff;
  return at + 1 + size;
}

/** One TLV with the given tag byte. */
export function tlv(tag: number, content: Buffer): Buffer {
  const out = Buffer.allocUnsafe(1 + lengthSize(content.length) + content.length);
  content.copy(out, header(out, tag, content.length));
  return out;
}

/** One constructed TLV whose content is `items` one after another. */
function constructed(tag: number, items: readonly Buffer[]): Buffer {
  let n = 0;
  for (const item of items) n += item.length;
  const out = Buffer.allocUnsafe(1 + lengthSize(n) + n);
  let at = header(out, tag, n);
  for (const item of items) at += item.copy(out, at);
  return out;
}

export const seq = (...items: readonly Buffer[]): Buffer => constructed(0x30, items);
export const set = (...items: readonly Buffer[]): Buffer => constructed(0x31, items);
export const nul = (): Buffer => Buffer.from([0x05, 0x00]);
export const bool = (b: boolean): Buffer => Buffer.from([0x01, 0x01, b ? 0xff : 0x00]);
export const octets = (b: Buffer): Buffer => tlv(0x04, b);
export function bits(b: Buffer, unused = 0): Buffer {
  const out = Buffer.allocUnsafe(1 + lengthSize(b.length + 1) + b.length + 1);
  const at = header(out, 0x03, b.length + 1);
  out[at] = unused;
  b.copy(out, at + 1);
  return out;
}
export const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));

/**
 * PrintableString's characters as Go's encoding/asn1 writes them (it refuses `*` and `&` there):
 * letters, digits, space and `'()+,-./:=?`.
 */
export const isPrintable = (s: string): boolean => /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(s);

/** A PrintableString, or a UTF8String when `s` has other characters, as Go's asn1 falls back. */
export const printable = (s: string): Buffer =>
  isPrintable(s) ? tlv(0x13, Buffer.from(s, 'latin1')) : utf8(s);

/** IA5String's bytes (ASCII); anything else is refused as Go's x509 refuses it. */
export function ia5Bytes(s: string): Buffer {
  if (!/^[\x00-\x7f]*$/.test(s))
    throw new ValidationError(`x509: ${JSON.stringify(s)} cannot be encoded as an IA5String`);
  return Buffer.from(s, 'latin1');
}
export const ia5 = (s: string): Buffer => tlv(0x16, ia5Bytes(s));
export const enumerated = (n: number): Buffer => tlv(0x0a, Buffer.from([n]));

/** `[n]` context tag: explicit (constructed, wraps a whole TLV) or implicit primitive (raw content). */
export const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 | n, inner);
export const implicit = (n: number, content: Buffer): Buffer => tlv(0x80 | n, content);
export const implicitConstructed = (n: number, content: Buffer): Buffer => tlv(0xa0 | n, content);

/** A non-negative INTEGER from a bigint or from its unsigned big-endian magnitude. */
export function int(value: bigint | number | Buffer): Buffer {
  let mag: Buffer;
  if (Buffer.isBuffer(value)) {
    let i = 0;
    while (i < value.length - 1 && value[i] === 0) i++;
    mag = value.subarray(i);
  } else {
    let hex = BigInt(value).toString(16);
    if (hex.length % 2) hex = '0' + hex;
    mag = Buffer.from(hex, 'hex');
  }
  if (mag.length === 0) mag = Buffer.from([0]);
  if ((mag[0] ?? 0) & 0x80) mag = Buffer.concat([Buffer.from([0]), mag]);
  return tlv(0x02, mag);
}

const oidCache = new Map<string, Buffer>();

/** An OBJECT IDENTIFIER from dotted text. */
export function oid(dotted: string): Buffer {
  const hit = oidCache.get(dotted);
  if (hit) return hit;
  const arcs = dotted.split('.').map((a) => BigInt(a));
  if (arcs.length < 2 || arcs.some((a) => a < 0n)) throw new Error(`invalid OID ${dotted}`);
  const out: number[] = [];
  const push = (v: bigint) => {
    const chunk: number[] = [Number(v & 0x7fn)];
    for (v >>= 7n; v > 0n; v >>= 7n) chunk.unshift(Number(v & 0x7fn) | 0x80);
    out.push(...chunk);
  };
  push((arcs[0] ?? 0n) * 40n + (arcs[1] ?? 0n));
  for (const a of arcs.slice(2)) push(a);
  const encoded = tlv(0x06, Buffer.from(out));
  oidCache.set(dotted, encoded);
  return encoded;
}

/** A time as RFC 5280 wants it: UTCTime through 2049, GeneralizedTime from 2050. */
export function time(d: Date): Buffer {
  const y = d.getUTCFullYear();
  const p = (n: number) => String(n).padStart(2, '0');
  const rest = `${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  if (y >= 1950 && y < 2050) return tlv(0x17, Buffer.from(`${p(y % 100)}${rest}`, 'latin1'));
  return tlv(0x18, Buffer.from(`${String(y).padStart(4, '0')}${rest}`, 'latin1'));
}

/** A GeneralizedTime to the second, as OCSP writes every time (RFC 6960 §4.2.2.1). */
export function generalizedTime(d: Date): Buffer {
  const iso = d.toISOString();
  const text = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return tlv(0x18, Buffer.from(text, 'latin1'));
}

export { children, content, oidText, read, whole, type Element } from './der-read.js';
