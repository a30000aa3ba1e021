import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makePrivate } from '../../../src/daemon.js';

/** What an older Keel (or a copy) left with loose modes is tightened when the daemon opens it. */

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe('makePrivate', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('makes the data directory and every directory in it 0700 and every file 0600', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-private-'));
    dirs.push(dir);
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, 'keel.sqlite'), 'x', { mode: 0o644 });
    writeFileSync(join(dir, 'keel.sqlite-wal'), 'x', { mode: 0o666 });
    mkdirSync(join(dir, 'tls'), { mode: 0o755 });
    writeFileSync(join(dir, 'tls', 'ca.pem'), 'x', { mode: 0o644 });
    mkdirSync(join(dir, 'logs', 'deep'), { recursive: true, mode: 0o777 });
    writeFileSync(join(dir, 'logs', 'deep', 'plan-x.log'), 'x', { mode: 0o640 });
    chmodSync(join(dir, 'keel.sqlite-wal'), 0o666);

    makePrivate(dir);

    expect(
      [
        '.',
        'keel.sqlite',
        'keel.sqlite-wal',
        'tls',
        'tls/ca.pem',
        'logs',
        'logs/deep',
        'logs/deep/plan-x.log',
      ].map((p) => `${p} ${mode(join(dir, p))}`),
    ).toEqual([
      '. 700',
      'keel.sqlite 600',
      'keel.sqlite-wal 600',
      'tls 700',
      'tls/ca.pem 600',
      'logs 700',
      'logs/deep 700',
      'logs/deep/plan-x.log 600',
    ]);
  });

  it('creates a missing data directory as 0700', () => {
    const parent = mkdtempSync(join(tmpdir(), 'keel-private-'));
    dirs.push(parent);
    makePrivate(join(parent, 'data', 'nested'));
    expect(mode(join(parent, 'data', 'nested'))).toBe('700');
  });
});
