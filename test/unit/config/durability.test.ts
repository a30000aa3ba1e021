import { describe, expect, it } from 'vitest';
import type { SqliteDb } from '../../../src/core/database.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../../../src/app.js';
import { ConfigError, loadConfig, testConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/core/logger.js';

const problems = (flags: Record<string, string>, env: NodeJS.ProcessEnv = {}): string[] => {
  try {
    loadConfig(flags, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('durability and listener configuration', () => {
  it('syncs every commit unless told otherwise; the flag wins over KEEL_SYNC', () => {
    expect(loadConfig({}, {}).sync).toBe('full');
    expect(loadConfig({}, { KEEL_SYNC: 'normal' }).sync).toBe('normal');
    expect(loadConfig({ sync: 'full' }, { KEEL_SYNC: 'normal' }).sync).toBe('full');
    expect(problems({ sync: 'off' })).toEqual([
      'KEEL_SYNC (--sync) must be full or normal, got "off"',
    ]);
  });

  it('takes the listener timeouts and the anchor interval, and refuses headers outlasting the request', () => {
    const c = loadConfig(
      { 'headers-timeout-ms': '500', 'request-timeout-ms': '900', 'anchor-interval-ms': '2000' },
      {},
    );
    expect([c.headersTimeoutMs, c.requestTimeoutMs, c.anchorIntervalMs]).toEqual([500, 900, 2000]);
    expect(loadConfig({}, {})).toMatchObject({
      headersTimeoutMs: 20_000,
      requestTimeoutMs: 300_000,
      anchorIntervalMs: 10_000,
    });
    expect(problems({ 'headers-timeout-ms': '5000', 'request-timeout-ms': '1000' })).toEqual([
      'KEEL_HEADERS_TIMEOUT_MS (--headers-timeout-ms) cannot be longer than KEEL_REQUEST_TIMEOUT_MS (--request-timeout-ms)',
    ]);
  });

  it('opens the log with the chosen sync mode (SQLite: FULL is 2, NORMAL is 1)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-sync-'));
    try {
      for (const [sync, level] of [
        ['full', 2],
        ['normal', 1],
      ] as const) {
        const app = createApp(testConfig(dir, { sync }), {
          logger: silentLogger(),
          sealKey: Buffer.alloc(32, 3),
          executor: false,
        });
        expect((app.core.db as SqliteDb).pragma('synchronous', { simple: true })).toBe(level);
        await app.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
