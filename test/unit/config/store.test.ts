import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';

const problems = (store: string): string[] => {
  try {
    loadConfig({ store }, {});
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
};

describe('--store / KEEL_STORE', () => {
  it('is the SQLite file unless told; the flag wins over the environment', () => {
    expect(loadConfig({}, {}).store).toEqual({ kind: 'sqlite' });
    const url = 'postgresql://keel@db.internal/keel?sslmode=require';
    expect(loadConfig({}, { KEEL_STORE: url }).store).toEqual({ kind: 'postgres', url });
    expect(loadConfig({ store: 'sqlite' }, { KEEL_STORE: url }).store).toEqual({ kind: 'sqlite' });
    expect(loadConfig({ store: 'postgres://k@h/d' }, {}).store).toEqual({
      kind: 'postgres',
      url: 'postgres://k@h/d',
    });
  });

  it('refuses anything else, and never repeats a password it was given', () => {
    expect(problems('mysql://keel:hunter2@db/keel')).toEqual([
      'KEEL_STORE (--store) must be sqlite or a postgres://… URL, got "mysql://keel:***@db/keel"',
    ]);
    expect(problems('pg://x?password=hunter2')).toEqual([
      'KEEL_STORE (--store) must be sqlite or a postgres://… URL, got "pg://x?password=***"',
    ]);
  });
});
