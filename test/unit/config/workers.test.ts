import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';

describe('--workers / KEEL_WORKERS', () => {
  it('is 1 unless told; the flag wins over the environment', () => {
    expect(loadConfig({}, {}).workers).toBe(1);
    expect(loadConfig({}, { KEEL_WORKERS: '3' }).workers).toBe(3);
    expect(loadConfig({ workers: '2' }, { KEEL_WORKERS: '3' }).workers).toBe(2);
  });

  it('refuses anything but a whole number from 1', () => {
    const problems = (workers: string): string[] => {
      try {
        loadConfig({ workers }, {});
        return [];
      } catch (e) {
        if (e instanceof ConfigError) return e.problems;
        throw e;
      }
    };
    for (const bad of ['0', '-1', '1.5', 'two']) {
      expect(problems(bad)).toEqual([
        `KEEL_WORKERS (--workers) must be an integer ≥ 1, got ${JSON.stringify(bad)}`,
      ]);
    }
  });
});
