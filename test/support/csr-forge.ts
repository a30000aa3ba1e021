import { createPublicKey, sign, type KeyObject } from 'node:crypto';

/**
 * Certificate requests assembled byte by byte, so a test can put any encoding in them (BER
 * booleans, long-form lengths, duplicate or malformed extensions) and still sign them with a real
 * key. It shares no code with Keel's DER writer or reader.
 */

/** Tag, length (minimal, or a longer form on request) and content. */
export function tlv(tag: number, content: readonly number[], longLength = false): number[] {
  const n = content.length;
  const octets: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) octets.unshift(v & 0xff);
  const length =
    n < 0x80 && !longLength ? [n] : [0x80 | Math.max(octets.length, 1), ...(n ? octets : [0])];
  return [tag, ...length, ...content];
}

export const seq = (...items: number[][]): number[] => tlv(0x30, items.flat());
export const set = (...items: number[][]): number[] => tlv(0x31, items.flat());

/** An OBJECT IDENTIFIER from dotted text. */
export function oid(dotted: string): number[] {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const out: number[] = [];
  for (const arc of [a * 40 + b, ...rest]) {
    const chunk = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128))
      chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return tlv(0x06, out);
}

/** An Extension `{id, [critical], OCTET STRING value}`; `value` is the bytes inside. */
export const extension = (id: string, value: number[], critical?: number[]): number[] =>
  seq(oid(id), ...(critical ? [critical] : []), tlv(0x04, value));

/** A Name with one CN (UTF8String). */
export const nameWithCn = (cn: string): number[] =>
  seq(set(seq(oid('2.5.4.3'), tlv(0x0c, [...Buffer.from(cn, 'utf8')]))));

/**
 * A PKCS#10 request over the key's public half, with the given extensions (already encoded) in
 * one extensionRequest attribute, signed ECDSA-SHA256 by the key.
 */
export function forgeCsr(key: KeyObject, subject: number[], extensions: number[][]): Buffer {
  const spki = [...createPublicKey(key).export({ type: 'spki', format: 'der' })];
  const attributes = extensions.length
    ? [seq(oid('1.2.840.113549.1.9.14'), set(seq(...extensions)))]
    : [];
  const info = Buffer.from(seq(tlv(0x02, [0]), subject, spki, tlv(0xa0, attributes.flat())));
  const signature = [...sign('sha256', info, key)];
  const alg = seq(oid('1.2.840.10045.4.3.2'));
  return Buffer.from(seq([...info], alg, tlv(0x03, [0, ...signature])));
}

/** PEM of request DER. */
export const csrPem = (der: Buffer): string =>
  `-----BEGIN CERTIFICATE REQUEST-----\n${der
    .toString('base64')
    .replace(/.{64}/g, '$&\n')
    .trim()}\n-----END CERTIFICATE REQUEST-----\n`;
