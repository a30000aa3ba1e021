import { randomBytes } from 'node:crypto';

/** How much OpenSSL's generator is asked for at a time. */
const POOL_BYTES = 4096;

const pool = { bytes: Buffer.alloc(0), at: 0 };

/**
 * `n` bytes from OpenSSL's generator, handed out from a pool it fills 4 KiB at a time, as Node's
 * `randomUUID` does: a call into it costs several microseconds, so ids, secrets and serials take
 * one call per hundreds of them instead of one each. Each byte is handed out once. The answer is
 * a view of the pool: copy what is kept, and do not hand it on.
 */
export function pooledRandomBytes(n: number): Buffer {
  if (n > POOL_BYTES) return randomBytes(n);
  if (pool.at + n > pool.bytes.length) {
    pool.bytes = randomBytes(POOL_BYTES);
    pool.at = 0;
  }
  const out = pool.bytes.subarray(pool.at, pool.at + n);
  pool.at += n;
  return out;
}
