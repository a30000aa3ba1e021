import { spawnSync } from 'node:child_process';
import { createECDH } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { P256Reservoir } from '../../../src/x509/p256-reservoir.js';

const open: P256Reservoir[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
});
const reservoir = (options: { chunk?: number; low?: number }) => {
  const r = new P256Reservoir(options);
  open.push(r);
  return r;
};

describe('P256Reservoir', () => {
  it('hands out valid, distinct P-256 pairs made on its thread, across chunks', async () => {
    const r = reservoir({ chunk: 8, low: 4 });
    // Nothing is ready before the first chunk arrives: the caller makes its own.
    expect(r.take()).toBeUndefined();
    const seen = new Set<string>();
    while (seen.size < 40) {
      expect(await r.whenReady()).toBe(true);
      const pair = r.take()!;
      expect(pair.d).toHaveLength(32);
      expect(pair.point).toHaveLength(65);
      // OpenSSL, given the scalar alone, derives the same public point.
      const check = createECDH('prime256v1');
      check.setPrivateKey(pair.d);
      expect(check.getPublicKey().equals(pair.point)).toBe(true);
      seen.add(pair.d.toString('hex'));
    }
    expect(seen.size).toBe(40);
  });

  it('asks for more while it holds fewer than its low mark, and stops when closed', async () => {
    const r = reservoir({ chunk: 4, low: 2 });
    expect(await r.whenReady()).toBe(true);
    expect(r.ready).toBe(4);
    r.take();
    r.take();
    expect(r.ready).toBe(2);
    // Below the mark: the next chunk is asked for, and comes when these are gone.
    r.take();
    r.take();
    expect(await r.whenReady()).toBe(true);
    expect(r.ready).toBe(4);
    await r.close();
    expect(r.ready).toBe(0);
    expect(r.take()).toBeUndefined();
    expect(await r.whenReady()).toBe(false);
  });

  it('does not keep its process alive: a process that used it exits on its own', () => {
    const root = join(import.meta.dirname, '../../..');
    const script = [
      "import { P256Reservoir } from './src/x509/p256-reservoir.ts';",
      // The worker does not hold the process while it waits for the first chunk either: a
      // timer does, until it has come.
      'const alive = setTimeout(() => {}, 60_000);',
      'const r = new P256Reservoir();',
      'r.take();',
      'console.log(await r.whenReady(), r.take() !== undefined);',
      'clearTimeout(alive);',
    ].join('\n');
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '--eval', script],
      { cwd: root, encoding: 'utf8', timeout: 30_000 },
    );
    // Killed at the timeout, it would have no status (a worker's port held its event loop open).
    expect(run.signal, run.stderr).toBeNull();
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('true true');
  });
});
