import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/core/database.js';
import { httpRequest, startTestApp, type TestResponse } from '../../support/app.js';
import { LEDGER_MAIN, ROOT, eventually, keel, startDaemon } from '../../support/daemon.js';
import { configTarball } from '../../support/runs-harness.js';
import { testExecutorContext } from '../../support/runs-test-executor.js';

describe('keel replay on the real daemon', () => {
  it('keel replay rebuilds identical read models; --until builds the past into a new file', async () => {
    const d = await startDaemon({ entry: LEDGER_MAIN });
    const token = d.bootstrap().runs.user_token;
    await httpRequest(d.url, 'POST', '/api/v2/ledger/r1', {
      token,
      body: { owner: 'x', pin: '1' },
    });
    await httpRequest(d.url, 'POST', '/api/v2/ledger/r1/deposits', { token, body: { amount: 10 } });
    const db0 = openDatabase(join(d.dataDir, 'keel.sqlite'));
    const cutoff = (db0.prepare('SELECT max(time) AS t FROM events').get() as { t: string }).t;
    db0.close();
    await new Promise((r) => setTimeout(r, 5)); // the next event gets a later timestamp
    await httpRequest(d.url, 'POST', '/api/v2/ledger/r1/deposits', { token, body: { amount: 5 } });
    await d.stop();

    const dump = () => {
      const db = openDatabase(join(d.dataDir, 'keel.sqlite'));
      try {
        return JSON.stringify(
          [
            'ledger_accounts',
            'ledger_entries',
            'users',
            'auth_tokens',
            'secrets_tokens',
            'mounts',
            'schedule',
          ].map((t) => db.prepare(`SELECT * FROM ${t} ORDER BY 1`).all()),
        );
      } finally {
        db.close();
      }
    };
    const before = dump();
    const replay = keel(['replay', '--data', d.dataDir], {}, LEDGER_MAIN);
    expect(replay.status).toBe(0);
    expect(replay.stdout).toMatch(/rebuilt \d+ read models from \d+ events/);
    expect(dump()).toBe(before);

    const past = join(d.dataDir, 'past.sqlite');
    const r = keel(
      ['replay', '--data', d.dataDir, '--until', cutoff, '--into', past],
      {},
      LEDGER_MAIN,
    );
    expect(r.status).toBe(0);
    const pastDb = openDatabase(past);
    try {
      expect(pastDb.prepare(`SELECT count(*) AS n FROM events WHERE time > ?`).get(cutoff)).toEqual(
        { n: 0 },
      );
      expect(pastDb.prepare('SELECT balance FROM ledger_accounts').get()).toEqual({ balance: 10 });
    } finally {
      pastDb.close();
    }
    expect(
      keel(['replay', '--data', d.dataDir, '--until', 'yesterday-ish', '--into', past]).status,
    ).toBe(2);
  });

  it('keel replay rebuilds every table of every read model as the live daemon wrote it', async () => {
    // The projections the daemon registers (the runs e2e daemon: `keel serve` and a test executor).
    const extraContexts: NonNullable<Parameters<typeof startTestApp>[0]>['deps'] = {
      extraContexts: (core) => [testExecutorContext(core)],
    };
    const probe = await startTestApp({ deps: extraContexts });
    const owned = probe.app.projections.list.map((p) => ({ name: p.name, tables: [...p.tables] }));
    await probe.close();
    const entry = join(ROOT, 'test', 'support', 'runs-daemon.ts');

    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });
    const d = await startDaemon({
      entry,
      args: ['--listen', `127.0.0.1:${port}`, '--public-address', `http://127.0.0.1:${port}`],
    });
    const boot = d.bootstrap();
    const v1 = async (method: string, path: string, body?: unknown): Promise<TestResponse> => {
      const r = await httpRequest(d.url, method, `/v1/${path}`, {
        token: boot.secrets.root_token,
        tokenHeader: 'x-vault-token',
        body,
      });
      expect(r.status, `${method} ${path}: ${r.text}`).toBeLessThan(300);
      return r;
    };
    const api = async (method: string, path: string, body?: unknown): Promise<TestResponse> => {
      const r = await httpRequest(d.url, method, `/api/v2/${path}`, {
        token: boot.runs.user_token,
        body,
        headers: { 'content-type': 'application/vnd.api+json' },
      });
      expect(r.status, `${method} ${path}: ${r.text}`).toBeLessThan(300);
      return r;
    };
    try {
      // sys: a policy and a token under it.
      await v1('PUT', 'sys/policies/acl/reader', {
        policy: 'path "pki/cert/*" { capabilities = ["read"] }',
      });
      await v1('POST', 'auth/token/create', { policies: ['reader'], ttl: '1h' });
      // sys: a tuned auth method, a userpass user and its login, a limited token used once.
      await v1('POST', 'sys/auth/userpass', { type: 'userpass' });
      await v1('POST', 'sys/auth/userpass/tune', {
        default_lease_ttl: '2h',
        description: 'people',
      });
      await v1('POST', 'auth/userpass/users/ann', { password: 'pw', token_policies: 'reader' });
      await v1('POST', 'auth/userpass/login/ann', { password: 'pw' });
      const limited = await v1('POST', 'auth/token/create', { num_uses: 3 });
      const used = (limited.json as { auth: { client_token: string } }).auth.client_token;
      await httpRequest(d.url, 'GET', '/v1/auth/token/lookup-self', { token: used });
      // pki: a root, a role, a certificate issued and revoked (the CRL rebuilt).
      await v1('POST', 'pki/root/generate/internal', {
        common_name: 'Root',
        key_type: 'ec',
        ttl: '87600h',
      });
      await v1('POST', 'pki/roles/web', { allow_any_name: true, key_type: 'ec' });
      const cert = await v1('POST', 'pki/issue/web', { common_name: 'a.example.com', ttl: '1h' });
      await v1('POST', 'pki/revoke', {
        serial_number: (cert.json as { data: { serial_number: string } }).data.serial_number,
      });
      // aws: a role and credentials from the embedded cloud.
      await v1('POST', 'aws/roles/dev', {
        credential_type: 'iam_user',
        policy_document: JSON.stringify({
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Action: 'iam:GetUser', Resource: '*' }],
        }),
      });
      await v1('GET', 'aws/creds/dev');
      // runs: an organization, a workspace and a run planned and applied.
      await api('POST', 'organizations', {
        data: { type: 'organizations', attributes: { name: 'acme', email: 'ops@acme.test' } },
      });
      const ws = await api('POST', 'organizations/acme/workspaces', {
        data: { type: 'workspaces', attributes: { name: 'prod' } },
      });
      const wsId = (ws.json as { data: { id: string } }).data.id;
      const cv = await api('POST', `workspaces/${wsId}/configuration-versions`, {
        data: { type: 'configuration-versions', attributes: {} },
      });
      const put = await fetch(
        (cv.json as { data: { attributes: { 'upload-url': string } } }).data.attributes[
          'upload-url'
        ],
        {
          method: 'PUT',
          headers: { 'content-type': 'application/octet-stream' },
          body: new Uint8Array(configTarball()),
        },
      );
      expect(put.status).toBe(200);
      const runId = await eventually(async () => {
        const list = await api('GET', `workspaces/${wsId}/runs`);
        return (list.json as { data: { id: string }[] }).data[0]?.id;
      });
      const status = (want: string) =>
        eventually(async () => {
          const one = await api('GET', `runs/${runId}`);
          return (one.json as { data: { attributes: { status: string } } }).data.attributes
            .status === want
            ? true
            : undefined;
        }, 30_000);
      await status('planned');
      await api('POST', `runs/${runId}/actions/apply`, { comment: 'ship it' });
      await status('applied');
    } finally {
      await d.stop();
    }

    const dump = () => {
      const db = openDatabase(join(d.dataDir, 'keel.sqlite'));
      try {
        return Object.fromEntries(
          owned.flatMap((p) =>
            p.tables.map((t) => [
              t,
              db
                .prepare(`SELECT * FROM "${t}"`)
                .all()
                .map((r) => JSON.stringify(r))
                .sort(),
            ]),
          ),
        );
      } finally {
        db.close();
      }
    };
    const live = dump();
    // Every context wrote to its read models: the comparison below is not of empty tables.
    const written = owned
      .filter((p) => p.tables.some((t) => live[t]!.length > 0))
      .map((p) => p.name);
    for (const name of ['runs', 'pki', 'aws', 'sys'])
      expect(written.join(' ')).toMatch(new RegExp(`\\b${name}`));

    const replay = keel(['replay', '--data', d.dataDir], {}, entry);
    expect(replay.status, replay.stderr).toBe(0);
    const rebuilt = dump();
    for (const p of owned)
      for (const t of p.tables) expect(rebuilt[t], `${p.name}: ${t}`).toEqual(live[t]);
  });
});
