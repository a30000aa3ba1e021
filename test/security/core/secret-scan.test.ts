import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/core/database.js';
import { eventually, keel, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { daemonTarget, Flow } from '../../support/executor-flow.js';
import { filesUnder, findSecrets, secretForms } from '../../support/secret-scan.js';
import { certificates, cloudCredentials, rootV1 } from '../../support/secret-sources.js';

/**
 * The real daemon is given secrets of every kind — a sensitive Terraform variable through plan and
 * apply, a variable set's sensitive value, a webhook's signing token, the cloud engine's root key and dynamic keys, a CA key and an issued key, tokens — then
 * stopped, and every byte of every file in its data directory (the database, its WAL, the cloud's
 * file, logs, everything) is searched for each secret in clear, hex and base64. None is found,
 * every file is the owner's alone, `keel events` shows sealed fields as `hmac:…`, and `keel replay`
 * rebuilds the read models byte for byte.
 */

const TF_SECRET = 'tf-sensitive-Vb7q2LmX9w';
const VARSET_SECRET = 'varset-sensitive-Qx81LmZ0rT';
const HOOK_TOKEN = 'hook-token-Hm29XcVb71Pq';
const CONFIG = {
  'main.tf': [
    'variable "db_password" {',
    '  sensitive = true',
    '}',
    'resource "aws_db_instance" "db" {',
    '  password = var.db_password',
    '  note = "pw=${var.db_password}"',
    '}',
    'output "password" {',
    '  value = var.db_password',
    '  sensitive = true',
    '}',
    '',
  ].join('\n'),
};

let daemon: RunningDaemon;
let stopped = false;
/** Every secret the daemon was given or handed out. */
const secrets: string[] = [];

beforeAll(async () => {
  daemon = await startDaemon({ env: { KEEL_LOG_LEVEL: 'debug' } });
});
afterAll(async () => {
  await daemon.stop();
});

async function terraformRun(flow: Flow): Promise<void> {
  const { org, ws } = await flow.workspace({ 'auto-apply': true });
  await flow.sensitiveVariable(ws, 'db_password', TF_SECRET);
  secrets.push(TF_SECRET);
  // A variable set's sensitive value (which reaches the run) and a webhook's signing token.
  await flow.call(
    'POST',
    `/organizations/${org}/varsets`,
    {
      data: {
        type: 'varsets',
        attributes: { name: 'shared', global: true },
        relationships: {
          vars: {
            data: [
              // Asks for a workload identity token: the issuer's signing key is made.
              {
                type: 'vars',
                attributes: {
                  key: 'TFC_WORKLOAD_IDENTITY_AUDIENCE',
                  value: 'scan',
                  category: 'env',
                },
              },
              {
                type: 'vars',
                attributes: {
                  key: 'SHARED_SECRET',
                  value: VARSET_SECRET,
                  category: 'env',
                  sensitive: true,
                },
              },
            ],
          },
        },
      },
    },
    201,
  );
  secrets.push(VARSET_SECRET);
  await flow.call(
    'POST',
    `/workspaces/${ws}/notification-configurations`,
    {
      data: {
        type: 'notification-configurations',
        attributes: {
          'destination-type': 'generic',
          name: 'hook',
          url: 'http://127.0.0.1:9/hook',
          token: HOOK_TOKEN,
        },
      },
    },
    201,
  );
  secrets.push(HOOK_TOKEN);
  const run = await flow.run(ws, {}, await flow.upload(ws, CONFIG));
  const done = ['applied', 'errored', 'canceled', 'discarded'];
  const final = await eventually(async () => {
    const s = await flow.status(run);
    return done.includes(s) ? s : undefined;
  }, 30_000);
  expect(final, (await flow.phase(run, 'plan')).log).toBe('applied');
  const plan = await flow.call('GET', `/runs/${run}/plan/json-output`, undefined, 200);
  expect(plan.text).toContain(TF_SECRET);
  secrets.push(await flow.teamToken(org, ws, 'read'));
}

/** Every table but the log itself, row by row in a stable order, as a digest per table. */
function readModels(dir: string): Record<string, string> {
  const db = openDatabase(join(dir, 'keel.sqlite'));
  try {
    const tables = db
      .prepare<[], { name: string }>(
        `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`,
      )
      .all()
      .map((t) => t.name);
    return Object.fromEntries(
      tables.map((t) => [
        t,
        createHash('sha256')
          .update(JSON.stringify(db.prepare(`SELECT * FROM "${t}" ORDER BY 1, 2`).all()))
          .digest('hex'),
      ]),
    );
  } finally {
    db.close();
  }
}

describe('a data directory after real use', () => {
  it('holds no secret in any file, and every file is private', async () => {
    const flow = new Flow(daemonTarget(daemon));
    const v1 = rootV1(daemon);
    await terraformRun(flow);
    await cloudCredentials(daemon, v1, secrets);
    await certificates(v1, secrets);
    const token = (await v1('POST', 'auth/token/create', { policies: ['default'] })) as {
      auth: { client_token: string };
    };
    secrets.push(token.auth.client_token);
    // A userpass password is kept only as a salted hash; the token its login gets as an HMAC.
    const password = 'userpass-Pa55-kept-nowhere';
    await v1('POST', 'sys/auth/userpass', { type: 'userpass' });
    await v1('POST', 'auth/userpass/users/scan', { password, token_policies: 'default' });
    const login = (await v1('POST', 'auth/userpass/login/scan', { password })) as {
      auth: { client_token: string };
    };
    secrets.push(password, login.auth.client_token);

    // While running, the WAL holds the freshest pages; after the stop, the checkpointed files.
    expect(findSecrets(daemon.dataDir, secrets)).toEqual([]);
    expect(await daemon.stop()).toBe(0);
    stopped = true;
    expect(findSecrets(daemon.dataDir, secrets)).toEqual([]);
    // Nor in what it printed (logged at debug level).
    const printed = daemon.output();
    expect(secrets.flatMap(secretForms).filter((form) => printed.includes(form))).toEqual([]);

    const modes = filesUnder(daemon.dataDir).map((f) => {
      const st = statSync(f);
      return [f.slice(daemon.dataDir.length), (st.mode & 0o777).toString(8)];
    });
    expect(modes.length).toBeGreaterThan(3);
    for (const [file, mode] of modes)
      expect(`${file} ${mode}`).toBe(
        `${file} ${statSync(join(daemon.dataDir, file!)).isDirectory() ? '700' : '600'}`,
      );
    expect((statSync(daemon.dataDir).mode & 0o777).toString(8)).toBe('700');
  });

  it('shows sealed Terraform values as hmac in keel events, and replays them byte for byte', () => {
    expect(stopped, 'the daemon ran and stopped').toBe(true);
    const events = keel(['events', '--data', daemon.dataDir, '--type', 'RunPlanFinished']);
    expect(events.status, events.stderr).toBe(0);
    const finished = JSON.parse(events.stdout.trim().split('\n')[0]!) as {
      data: { log: string; jsonOutput: string; jsonOutputRedacted: object };
    };
    expect(finished.data.log).toMatch(/^hmac:[0-9a-f]{64}$/);
    expect(finished.data.jsonOutput).toMatch(/^hmac:[0-9a-f]{64}$/);
    expect(JSON.stringify(finished.data.jsonOutputRedacted)).not.toContain(TF_SECRET);
    const state = keel(['events', '--data', daemon.dataDir, '--type', 'StateVersionCreated']);
    expect(JSON.parse(state.stdout.trim().split('\n')[0]!)).toMatchObject({
      data: { state: expect.stringMatching(/^hmac:/) as unknown },
    });

    const keys = keel(['events', '--data', daemon.dataDir, '--type', 'OidcSigningKeyCreated']);
    expect(JSON.parse(keys.stdout.trim().split('\n')[0]!)).toMatchObject({
      data: { privateKey: expect.stringMatching(/^hmac:/) as unknown },
    });
    const before = readModels(daemon.dataDir);
    const replay = keel(['replay', '--data', daemon.dataDir]);
    expect(replay.status, replay.stderr).toBe(0);
    expect(readModels(daemon.dataDir)).toEqual(before);
  });
});
