import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.js';
import { ManualClock } from '../../../src/core/clock.js';
import { openDatabase } from '../../../src/core/database.js';
import { silentLogger } from '../../../src/core/logger.js';
import { testConfig, type Config } from '../../../src/config.js';
import { listen } from '../../../src/http/server.js';
import { httpRequest, TEST_SEAL_KEY } from '../../support/app.js';
import { freshDatabase } from '../../support/store.js';
import { keel } from '../../support/cli.js';

const KEY_HEX = TEST_SEAL_KEY.toString('hex');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'keel-copy-'));
  dirs.push(d);
  return d;
};

const openApp = (dataDir: string, store: Partial<Config> = {}) =>
  createApp(testConfig(dataDir, store), {
    clock: new ManualClock('2026-01-01T00:00:00.000Z'),
    logger: silentLogger(),
    sealKey: TEST_SEAL_KEY,
  });

/**
 * A data directory written through the API across contexts (policies, a PKI mount with a CA and
 * an issued certificate, a token made and revoked), its reactors settled so they hold checkpoints, and closed; its
 * keyring is the test key, as a file.
 */
async function written(): Promise<string> {
  const dataDir = tempDir();
  writeFileSync(join(dataDir, 'keyring'), `${KEY_HEX}\n`, { mode: 0o600 });
  const app = openApp(dataDir);
  const tokens = app.bootstrap();
  if (tokens === null) throw new Error('a fresh directory bootstraps');
  const server = await listen(app.callback, '127.0.0.1', 0);
  const v1 = async (method: string, path: string, body: unknown) => {
    const res = await httpRequest(server.url, method, `/v1/${path}`, {
      token: tokens.secrets.root_token,
      body,
    });
    expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
    return res.json as { auth?: { client_token: string } } | undefined;
  };
  await v1('PUT', 'sys/policies/acl/readers', {
    policy: 'path "pki/*" { capabilities = ["read"] }',
  });
  await v1('POST', 'sys/mounts/ca', { type: 'pki' });
  await v1('POST', 'ca/root/generate/internal', { common_name: 'Copy CA', key_type: 'ec' });
  await v1('POST', 'ca/roles/web', { allowed_domains: 'example.com', allow_subdomains: true });
  await v1('POST', 'ca/issue/web', { common_name: 'a.example.com', ttl: '1h' });
  const created = await v1('POST', 'auth/token/create', { policies: ['readers'], ttl: '1h' });
  // A revoked token moves the credentials engine's reactor, which then holds a checkpoint.
  await v1('POST', 'auth/token/revoke', { token: created?.auth?.client_token });
  await app.settle();
  await server.close();
  await app.close();
  return dataDir;
}

const logOf = (dataDir: string) => {
  const db = openDatabase(join(dataDir, 'keel.sqlite'));
  try {
    return {
      events: db.prepare('SELECT * FROM events ORDER BY position').all(),
      chain: db.prepare('SELECT * FROM audit_chain').all(),
      anchors: db.prepare('SELECT * FROM audit_anchors ORDER BY position').all(),
      checkpoints: db.prepare('SELECT * FROM checkpoints ORDER BY name').all(),
    };
  } finally {
    db.close();
  }
};

/** Every read model as the app on `dataDir` (and `store`) holds it after start. */
async function readModels(dataDir: string, store: Partial<Config> = {}) {
  const app = openApp(dataDir, store);
  try {
    return app.projections.dump();
  } finally {
    await app.close();
  }
}

describe('keel copy between data directories', () => {
  it('moves the log with its chain, anchors, checkpoints and keyring; the target verifies and rebuilds the same read models', async () => {
    const from = await written();
    const to = join(tempDir(), 'new');
    const before = logOf(from);
    expect(before.checkpoints.length).toBeGreaterThan(0);

    const r = await keel(['copy', '--from', from, '--to', to]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`copied ${before.events.length} events`);
    expect(r.stdout).toContain(`the keyring was copied to ${join(to, 'keyring')}`);

    const after = logOf(to);
    expect(after.events).toEqual(before.events);
    expect(after.chain).toEqual(before.chain);
    expect(after.checkpoints).toEqual(before.checkpoints);
    // Every source anchor, and the head signed for the target (head.json agrees with it).
    expect(after.anchors.slice(0, before.anchors.length)).toEqual(before.anchors);
    const head = JSON.parse(readFileSync(join(to, 'audit', 'head.json'), 'utf8')) as {
      position: number;
    };
    expect(head.position).toBe(before.events.length);
    expect(readFileSync(join(to, 'keyring'), 'utf8').trim()).toBe(KEY_HEX);
    expect(statSync(to).mode & 0o777).toBe(0o700);
    expect(statSync(join(to, 'keyring')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(to, 'keel.lock'))).toBe(false);
    // No read model travels: none is in the target until a daemon starts on it.
    const raw = openDatabase(join(to, 'keel.sqlite'));
    expect(raw.prepare("SELECT name FROM sqlite_master WHERE name = 'schedule'").get()).toBe(
      undefined,
    );
    raw.close();

    const verified = await keel(['audit', 'verify', '--data', to]);
    expect(verified.stderr).toBe('');
    expect(verified.stdout).toContain(`chain verified: ${before.events.length} events`);
    expect(await readModels(to)).toEqual(await readModels(from));
  });

  it('leaves the keyring where it is under KEEL_SEAL_KEY, and copies back again', async () => {
    const from = await written();
    rmSync(join(from, 'keyring'));
    const env = { KEEL_SEAL_KEY: KEY_HEX };
    const there = join(tempDir(), 'there');
    const back = join(tempDir(), 'back');
    expect((await keel(['copy', '--from', from, '--to', there], env)).status).toBe(0);
    expect(existsSync(join(there, 'keyring'))).toBe(false);
    const r = await keel(['copy', '--from', there, '--to', back], env);
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain('keyring');
    expect(logOf(back).events).toEqual(logOf(from).events);
    expect((await keel(['audit', 'verify', '--data', back], env)).status).toBe(0);
  });

  it('refuses a target that holds a log, and changes nothing there', async () => {
    const from = await written();
    const other = await written();
    const held = logOf(other);
    const r = await keel(['copy', '--from', from, '--to', other]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(
      /is not empty \(\d+ events rows, 1 audit_chain rows.*keel copy writes only into an empty store/,
    );
    expect(logOf(other)).toEqual(held);
  });

  it('refuses a source whose chain is broken (exit 1, naming the position) and writes nothing', async () => {
    const from = await written();
    const db = openDatabase(join(from, 'keel.sqlite'));
    db.prepare("UPDATE events SET data = '{}' WHERE position = 3").run();
    db.close();
    const to = join(tempDir(), 'new');
    const r = await keel(['copy', '--from', from, '--to', to]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("the source's chain is broken at position 3");
    expect(logOf(to).events).toEqual([]);
    expect(existsSync(join(to, 'keyring'))).toBe(false);
  });

  it('refuses a target keyed with another keyring, a missing keyring, a missing log and bad arguments', async () => {
    const from = await written();
    const elsewhere = tempDir();
    writeFileSync(join(elsewhere, 'keyring'), `${'ab'.repeat(32)}\n`, { mode: 0o600 });
    const cases: [string[], string][] = [
      [['--from', from, '--to', elsewhere], 'holds another key than the source'],
      [['--from', from], 'keel copy needs --from and --to'],
      [['--from', from, '--to', tempDir(), '--store', 'sqlite'], '--store is not used'],
      [['--from', from, '--to', `${from}/.`], '--from and --to name the same store'],
      [['--from', tempDir(), '--to', tempDir()], 'no event log at'],
    ];
    for (const [args, message] of cases) {
      const r = await keel(['copy', ...args]);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toContain(message);
    }
    expect(logOf(elsewhere).events).toEqual([]);
    rmSync(join(from, 'keyring'));
    const none = await keel(['copy', '--from', from, '--to', tempDir()]);
    expect(none.status).toBe(2);
    expect(none.stderr).toContain(`no keyring at ${join(from, 'keyring')} and no KEEL_SEAL_KEY`);
  });

  it('refuses a source a running daemon holds', async () => {
    const from = await written();
    // pid 1 is alive: the lock is held, not stale.
    writeFileSync(join(from, 'keel.lock'), '1\n');
    const r = await keel(['copy', '--from', from, '--to', join(tempDir(), 'new')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('another Keel process (pid 1) is using the data directory');
    rmSync(join(from, 'keel.lock'));
  });

  /**
   * The round trip through the run's store: on PostgreSQL (`integration-pg`) from a directory to
   * a database and back; on SQLite through a second directory.
   */
  it('round-trips through the test store with the chain intact and the same read models', async () => {
    const from = await written();
    // A home that does not exist yet: the copy makes it for the keyring and the audit head.
    const home = join(tempDir(), 'home');
    const pg = process.env.KEEL_TEST_STORE === 'postgres' ? freshDatabase() : null;
    try {
      const middle = pg?.url ?? join(home, 'middle');
      const store: Partial<Config> =
        pg === null ? {} : { store: { kind: 'postgres', url: pg.url } };
      const env = pg === null ? {} : { KEEL_STORE: pg.url };
      const there = await keel(['copy', '--from', from, '--to', middle, '--data', home]);
      expect(there.stderr).toBe('');
      expect(there.status).toBe(0);
      const verified = await keel(['audit', 'verify', '--data', pg === null ? middle : home], env);
      expect(verified.stderr).toBe('');
      expect(verified.status).toBe(0);
      // The head was signed into the middle store's home, beside its keyring.
      expect(existsSync(join(pg === null ? middle : home, 'audit', 'head.json'))).toBe(true);
      expect(await readModels(pg === null ? middle : home, store)).toEqual(await readModels(from));

      const back = join(tempDir(), 'back');
      const again = await keel(['copy', '--from', middle, '--to', back, '--data', home]);
      expect(again.stderr).toBe('');
      expect(again.status).toBe(0);
      const [before, after] = [logOf(from), logOf(back)];
      expect(after.events).toEqual(before.events);
      expect(after.chain).toEqual(before.chain);
      expect(after.checkpoints).toEqual(before.checkpoints);
      expect((await keel(['audit', 'verify', '--data', back])).status).toBe(0);
      expect(await readModels(back)).toEqual(await readModels(from));
    } finally {
      pg?.drop();
    }
  });
});
