import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { testConfig, type Config } from '../../../src/config.js';
import { ManualClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/logger.js';
import { checkReadModels } from '../../../src/core/read-model-check.js';
import { openStore } from '../../../src/core/store/open.js';
import { TEST_SEAL_KEY } from '../../support/app.js';
import { testStore } from '../../support/store.js';

/**
 * The read-model check of ADR 0094 on the run's store: SQLite here, PostgreSQL in `integration-pg`.
 * A row changed behind the log, or an event changed in the middle of it, stops the app from
 * opening, named; the untouched store opens.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A data directory on the run's store with a bootstrapped log and two tokens, closed. */
async function written(): Promise<{ config: Config; accessors: string[] }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-read-models-'));
  const database = testStore();
  cleanups.push(() => {
    database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const config = testConfig(dataDir, database.config);
  const app = open(config);
  app.bootstrap();
  app.tokens.secretsToken(['default'], 0);
  app.tokens.secretsToken(['default'], 3600);
  const accessors = (
    app.core.db
      .prepare(`SELECT accessor FROM secrets_tokens WHERE policies = '["default"]'`)
      .all() as { accessor: string }[]
  ).map((r) => r.accessor);
  await app.close();
  return { config, accessors };
}

const open = (config: Config): App =>
  createApp(config, {
    clock: new ManualClock('2026-01-01T00:00:00.000Z'),
    logger: silentLogger(),
    sealKey: TEST_SEAL_KEY,
  });

/** Run `sql` on the closed store, as someone with the database but not the keyring would. */
function tamper(config: Config, sql: string, ...params: unknown[]): number {
  const { db } = openStore(config.store, join(config.dataDir, 'keel.sqlite'));
  try {
    return db.prepare(sql).run(...params).changes;
  } finally {
    db.close();
  }
}

describe('the guarded read models are checked against the log before they are read', () => {
  it('an untouched store opens, and the check counts the rows it compared', async () => {
    const { config } = await written();
    const app = open(config);
    const verdict = checkReadModels(app.core.db, app.core.store.chain, app.projections.list);
    expect(verdict).toMatchObject({ ok: true, events: app.core.store.lastPosition() });
    expect(verdict.ok && verdict.rows).toBeGreaterThanOrEqual(4);
    await app.close();
  });

  it('a token row given the root policy stops the app from opening, naming the row', async () => {
    const { config, accessors } = await written();
    const accessor = accessors[0]!;
    expect(
      tamper(
        config,
        'UPDATE secrets_tokens SET policies = ? WHERE accessor = ?',
        '["root"]',
        accessor,
      ),
    ).toBe(1);
    expect(() => open(config)).toThrow(
      `the read model table secrets_tokens does not match the event log: the row accessor "${accessor}" differs in policies`,
    );
  });

  it('a token row removed is named as missing', async () => {
    const { config, accessors } = await written();
    const accessor = [...accessors].sort()[1]!;
    tamper(config, 'DELETE FROM secrets_tokens WHERE accessor = ?', accessor);
    expect(() => open(config)).toThrow(`the row accessor "${accessor}" is missing`);
  });

  it('an event edited in the middle of the log stops the app from opening, naming its position', async () => {
    const { config } = await written();
    const { db } = openStore(config.store, join(config.dataDir, 'keel.sqlite'));
    const target = db
      .prepare(
        `SELECT position, data FROM events WHERE type = 'SecretsTokenCreated' AND data LIKE '%"policies":["default"]%' ORDER BY position LIMIT 1`,
      )
      .get() as { position: number; data: string };
    db.close();
    // Only the event is changed: its keyed link no longer holds. The rows still hash as sealed at
    // the clean stop, so a SQLite store would open on its seal (keel audit verify names the event);
    // after a crash, as here, or on PostgreSQL, start-up rebuilds and names it.
    if (config.store.kind === 'sqlite') tamper(config, 'DELETE FROM read_model_seal');
    tamper(
      config,
      'UPDATE events SET data = ? WHERE position = ?',
      target.data.replace('"policies":["default"]', '"policies":["root"]'),
      target.position,
    );
    expect(() => open(config)).toThrow(
      `the event log is broken at position ${target.position} (its hash does not match the event)`,
    );
  });
});
