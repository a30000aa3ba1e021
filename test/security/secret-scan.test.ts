import {
  CreateAccessKeyCommand,
  CreateUserCommand,
  IAMClient,
  PutUserPolicyCommand,
} from '@aws-sdk/client-iam';
import { createHash, createPrivateKey } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/core/database.js';
import { httpRequest } from '../support/app.js';
import { eventually, keel, startDaemon, type RunningDaemon } from '../support/daemon.js';
import { daemonTarget, Flow } from '../support/executor-flow.js';
import { filesUnder, findSecrets, secretForms } from '../support/secret-scan.js';

/**
 * The real daemon is given secrets of every kind — a sensitive Terraform variable through plan and
 * apply, the cloud engine's root key and dynamic keys, a CA key and an issued key, tokens — then
 * stopped, and every byte of every file in its data directory (the database, its WAL, the cloud's
 * file, logs, everything) is searched for each secret in clear, hex and base64. None is found,
 * every file is the owner's alone, `keel events` shows sealed fields as `hmac:…`, and `keel replay`
 * rebuilds the read models byte for byte.
 */

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});
const TF_SECRET = 'tf-sensitive-Vb7q2LmX9w';
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

/**
 * A PEM private key as the secrets it holds: the whole DER in base64, its first line (where the
 * private scalar sits) and the scalar itself (JWK `d`). Its last lines encode the public key,
 * which certificates rightly carry, so they are no secret.
 */
const pemSecrets = (pem: string): string[] => {
  const lines = pem.split('\n').filter((l) => l !== '' && !l.startsWith('-----'));
  const jwk = createPrivateKey(pem).export({ format: 'jwk' });
  return [lines.join(''), lines[0]!, jwk.d!];
};

async function terraformRun(flow: Flow): Promise<void> {
  const { org, ws } = await flow.workspace({ 'auto-apply': true });
  await flow.sensitiveVariable(ws, 'db_password', TF_SECRET);
  secrets.push(TF_SECRET);
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

async function cloudCredentials(v1: (m: string, p: string, b?: unknown) => Promise<unknown>) {
  const boot = daemon.bootstrap();
  // A root key of the engine's own, made in the embedded cloud with the bootstrap administrator.
  const iam = new IAMClient({
    region: boot.cloud.region,
    endpoint: boot.cloud.iam_endpoint,
    credentials: {
      accessKeyId: boot.cloud.access_key_id,
      secretAccessKey: boot.cloud.secret_access_key,
    },
    maxAttempts: 1,
  });
  await iam.send(new CreateUserCommand({ UserName: 'engine-root' }));
  await iam.send(
    new PutUserPolicyCommand({
      UserName: 'engine-root',
      PolicyName: 'all',
      PolicyDocument: ALLOW_ALL,
    }),
  );
  const root = (await iam.send(new CreateAccessKeyCommand({ UserName: 'engine-root' }))).AccessKey!;
  secrets.push(root.SecretAccessKey!);
  await v1('POST', 'aws/config/root', {
    access_key: root.AccessKeyId,
    secret_key: root.SecretAccessKey,
    iam_endpoint: boot.cloud.iam_endpoint,
    sts_endpoint: boot.cloud.sts_endpoint,
    region: boot.cloud.region,
  });
  await v1('POST', 'aws/roles/dev', { credential_type: 'iam_user', policy_document: ALLOW_ALL });
  const dynamic = (await v1('GET', 'aws/creds/dev')) as { data: { secret_key: string } };
  secrets.push(dynamic.data.secret_key);
}

async function certificates(v1: (m: string, p: string, b?: unknown) => Promise<unknown>) {
  const ca = (await v1('POST', 'pki/root/generate/exported', {
    common_name: 'Scan Root',
    key_type: 'ec',
    ttl: '8760h',
  })) as { data: { private_key: string } };
  secrets.push(...pemSecrets(ca.data.private_key));
  await v1('POST', 'pki/roles/web', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
    ttl: '1h',
  });
  const leaf = (await v1('POST', 'pki/issue/web', { common_name: 'a.example.com' })) as {
    data: { private_key: string };
  };
  secrets.push(...pemSecrets(leaf.data.private_key));
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
    const root = daemon.bootstrap().secrets.root_token;
    const v1 = async (method: string, path: string, body?: unknown) => {
      const res = await httpRequest(daemon.url, method, `/v1/${path}`, {
        token: root,
        tokenHeader: 'x-vault-token',
        ...(body === undefined ? {} : { body }),
      });
      expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
      return res.json;
    };
    await terraformRun(flow);
    await cloudCredentials(v1);
    await certificates(v1);
    const token = (await v1('POST', 'auth/token/create', { policies: ['default'] })) as {
      auth: { client_token: string };
    };
    secrets.push(token.auth.client_token);

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

    const before = readModels(daemon.dataDir);
    const replay = keel(['replay', '--data', daemon.dataDir]);
    expect(replay.status, replay.stderr).toBe(0);
    expect(readModels(daemon.dataDir)).toEqual(before);
  });
});
