import { createHmac, randomBytes } from 'node:crypto';
import { safeEqual } from '../core/seal.js';

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 without padding, the form authenticator apps read. */
export function base32Encode(buf: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  return out;
}

/** The inverse of {@link base32Encode}. */
export function base32Decode(text: string): Buffer {
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of text.replace(/=+$/, '').toUpperCase()) {
    const idx = B32.indexOf(ch);
    if (idx < 0) throw new RangeError(`not base32: ${ch}`);
    value = (value << 5) | idx;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A fresh 40-character base32 seed (25 random bytes → 40 chars, no padding). */
export const newSeed = (): string => base32Encode(randomBytes(25));

/** RFC 6238 TOTP: HMAC-SHA1, 30-second steps, 6 digits. `step` offsets the window. */
export function totp(seed: string, at: Date, step = 0): string {
  const counter = Math.floor(at.getTime() / 30_000) + step;
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', base32Decode(seed)).update(msg).digest();
  const offset = (mac[mac.length - 1] ?? 0) & 15;
  const code = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000;
  return code.toString().padStart(6, '0');
}

/** Accepts the current code or its neighbours, as AWS tolerates one step of drift. */
export const totpMatches = (seed: string, at: Date, code: string): boolean =>
  [-1, 0, 1].some((s) => safeEqual(totp(seed, at, s), code));
