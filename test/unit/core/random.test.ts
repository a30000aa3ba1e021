import { describe, expect, it } from 'vitest';
import { pooledRandomBytes } from '../../../src/core/random.js';

describe('pooledRandomBytes', () => {
  it('hands out each byte of its pool once, across refills', () => {
    const views = Array.from({ length: 600 }, () => pooledRandomBytes(20));
    // 600 × 20 bytes: three refills of 4 KiB. Views of one pool never overlap.
    for (let i = 1; i < views.length; i++) {
      const [a, b] = [views[i - 1]!, views[i]!];
      if (a.buffer === b.buffer) expect(b.byteOffset).toBeGreaterThanOrEqual(a.byteOffset + 20);
    }
    expect(new Set(views.map((v) => v.toString('hex'))).size).toBe(600);
    expect(new Set(views.map((v) => v.buffer)).size).toBeGreaterThanOrEqual(3);
  });

  it('asks OpenSSL directly for more than a pool holds', () => {
    const big = pooledRandomBytes(10_000);
    expect(big).toHaveLength(10_000);
    expect(big.byteOffset).toBe(0);
  });
});
