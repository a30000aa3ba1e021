import { randomUUID } from 'node:crypto';
import { pooledRandomBytes } from './random.js';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random base62 text of the given length (rejection sampling keeps it unbiased). */
export function base62(length: number, random: (n: number) => Buffer = pooledRandomBytes): string {
  let out = '';
  while (out.length < length) {
    for (const byte of random(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

/** Ids are injected like time, so tests can make them predictable. */
export interface Ids {
  /** `prefix-` followed by 16 base62 characters, e.g. `run-CZcmD7eagjhyX0vN`. */
  id(prefix: string): string;
  uuid(): string;
  /** Random text for secrets and tokens. */
  secret(length: number): string;
}

export const randomIds: Ids = {
  id: (prefix) => `${prefix}-${base62(16)}`,
  uuid: () => randomUUID(),
  secret: (length) => base62(length),
};

/** Deterministic ids for tests: `run-0000000000000001`, ... */
export function sequentialIds(): Ids {
  let n = 0;
  const next = () => (++n).toString().padStart(16, '0');
  return {
    id: (prefix) => `${prefix}-${next()}`,
    uuid: () => {
      const h = next().padStart(32, '0');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20)}`;
    },
    secret: (length) => next().padStart(length, 's').slice(-length),
  };
}
