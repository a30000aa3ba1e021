import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';
import { issueRunToken, readRunToken } from '../../../src/runs/executor/run-token.js';
import { tokenVariable } from '../../../src/runs/executor/run-env.js';
import { withoutBackendLines } from '../../../src/runs/executor/command/index.js';

/**
 * The environment a command-engine phase gets and the token for Keel it carries: TFC_* variables,
 * ATLAS_TOKEN and TF_TOKEN_<host>, a token that reads only state shared with the run's workspace
 * and stops working when the phase ends. The engine here is a script that records its environment
 * and holds the plan open until the test lets it go.
 */

const scratch = mkdtempSync(join(tmpdir(), 'keel-run-token-'));
const ENGINE = join(scratch, 'engine.sh');
// A node script, not a shell one: a shell drops variables whose names it cannot take
// (`TF_TOKEN_localhost:8443`), and terraform, which Keel starts directly, gets them all.
writeFileSync(
  ENGINE,
  `#!/usr/bin/env node
const fs = require('node:fs');
const say = (line) => process.stdout.write(line + '\\n');
switch (process.argv[2]) {
  case 'init':
    say('Initializing the backend...');
    say('Successfully configured the backend "local"! Terraform will automatically');
    say('use this backend unless the backend configuration changes.');
    say('Terraform has been successfully initialized!');
    break;
  case 'plan': {
    fs.writeFileSync(process.env.KEEL_TEST_DUMP, JSON.stringify(process.env));
    say('the token is ' + process.env.ATLAS_TOKEN);
    say('ready');
    const wait = setInterval(() => {
      if (!fs.existsSync(process.env.KEEL_TEST_RELEASE)) return;
      clearInterval(wait);
      say('Error: released by the test');
      process.exitCode = 1;
    }, 20);
    break;
  }
  default:
    process.exitCode = 1;
}
`,
);
chmodSync(ENGINE, 0o755);

let t: TestApp;
let flow: Flow;
beforeAll(async () => {
  t = await startTestApp({ config: { engineBin: ENGINE } });
  flow = new Flow(t);
});
afterAll(async () => {
  await t.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Resolves when a phase's live log receives a line matching `pattern`. */
function logged(pattern: RegExp): Promise<void> {
  const logs = t.app.executor.liveLogs;
  const append = logs.append.bind(logs);
  return new Promise((done) => {
    logs.append = (id, line) => {
      append(id, line);
      if (pattern.test(line)) {
        logs.append = append;
        done();
      }
    };
  });
}

const as = (token: string, path: string) => t.request('GET', `/api/v2${path}`, { token });

/** A workspace of `org` on the builtin engine with one applied output. */
async function withState(org: string, name: string, shared: boolean): Promise<string> {
  const res = await flow.call(
    'POST',
    `/organizations/${org}/workspaces`,
    {
      data: {
        type: 'workspaces',
        attributes: { name, 'execution-engine': 'builtin', 'global-remote-state': shared },
      },
    },
    201,
  );
  const ws = res.doc.data.id;
  const cv = await flow.upload(ws, { 'main.tf': `output "greeting" {\n  value = "${name}"\n}\n` });
  const run = await flow.run(ws, { 'auto-apply': true }, cv);
  await t.settle();
  expect(await flow.status(run)).toBe('applied');
  return ws;
}

describe('a command-engine phase', () => {
  it('gets TFC_* and a token that reads shared state only, until the phase ends', async () => {
    const { org, ws, name } = await flow.workspace();
    const shared = await withState(org, 'shared', true);
    const unshared = await withState(org, 'unshared', false);
    const dump = join(scratch, `${ws}.env`);
    const release = join(scratch, `${ws}.release`);
    for (const [key, value] of [
      ['KEEL_TEST_DUMP', dump],
      ['KEEL_TEST_RELEASE', release],
    ] as const)
      await flow.call(
        'POST',
        `/workspaces/${ws}/vars`,
        { data: { type: 'vars', attributes: { key, value, category: 'env' } } },
        201,
      );
    const cv = await flow.upload(ws, { 'main.tf': '' });
    const ready = logged(/^ready$/);
    const run = await flow.run(ws, {}, cv);
    await ready;
    expect(await flow.status(run)).toBe('planning');

    const env = JSON.parse(readFileSync(dump, 'utf8')) as Record<string, string>;
    expect(env).toMatchObject({
      TFC_RUN_ID: run,
      TFC_WORKSPACE_NAME: name,
      TFC_WORKSPACE_SLUG: `${org}/${name}`,
      TFC_PROJECT_NAME: 'Default Project',
    });
    expect(Object.keys(env).filter((k) => k.startsWith('TFC_CONFIGURATION_VERSION_GIT'))).toEqual(
      [],
    );
    const token = String(env.ATLAS_TOKEN);
    expect(token).toMatch(/^keel-run\./);
    // for the public address's host, and localhost (a name of the listener)
    const { host, port } = new URL(t.config.publicAddress);
    expect(env[tokenVariable(host)]).toBe(token);
    expect(env[tokenVariable(port === '' ? 'localhost' : `localhost:${port}`)]).toBe(token);
    // the listener speaks plain HTTP here: no CA bundle
    expect(env.SSL_CERT_FILE).toBeUndefined();

    // what terraform_remote_state reads, for a workspace that shares its state
    const found = await as(token, `/organizations/${org}/workspaces/shared`);
    expect(found.status, found.text).toBe(200);
    // it may read the state, and nothing more
    expect(
      (found.json as { data: { attributes: { permissions: Record<string, boolean> } } }).data
        .attributes.permissions,
    ).toMatchObject({
      'can-read-state-versions': true,
      'can-create-state-versions': false,
      'can-queue-run': false,
      'can-lock': false,
    });
    const current = await as(token, `/workspaces/${shared}/current-state-version`);
    expect(current.status, current.text).toBe(200);
    const download = await as(
      token,
      `/state-versions/${(current.json as { data: { id: string } }).data.id}/download`,
    );
    expect(download.status).toBe(200);
    expect(download.text).toContain('"greeting"');
    const outputs = await as(token, `/workspaces/${shared}/current-state-version-outputs`);
    expect(outputs.status).toBe(200);
    expect(await as(token, `/organizations/${org}/entitlement-set`)).toMatchObject({ status: 200 });
    // its own workspace, too (it has no state yet)
    expect((await as(token, `/organizations/${org}/workspaces/${name}`)).status).toBe(200);

    // a workspace that does not share: refused, saying why
    const refused = await as(token, `/organizations/${org}/workspaces/unshared`);
    expect(refused.status, refused.text).toBe(403);
    expect(refused.text).toContain(
      `workspace ${org}/unshared does not share its state with workspace ${org}/${name}`,
    );
    expect((await as(token, `/workspaces/${unshared}/current-state-version`)).status).toBe(403);
    expect((await as(token, `/workspaces/${unshared}/current-state-version-outputs`)).status).toBe(
      403,
    );
    // nothing else: not the run, not the workspace's runs or variables, not another organization
    for (const path of [`/runs/${run}`, `/workspaces/${ws}/runs`, `/workspaces/${ws}/vars`])
      expect((await as(token, path)).status, path).toBe(401);
    expect(
      (await t.request('POST', `/api/v2/workspaces/${shared}/actions/lock`, { token, body: {} }))
        .status,
    ).toBe(401);
    expect((await as(token, '/organizations/other/entitlement-set')).status).toBe(404);

    // the token never reaches the log; the local backend's lines neither
    const live = await flow.phase(run, 'plan');
    expect(live.log).toContain('the token is (sensitive value)');
    expect(live.log).not.toContain(token);
    expect(live.log).not.toContain('Successfully configured the backend "local"!');
    expect(live.log).not.toContain('use this backend unless the backend configuration changes');
    expect(live.log).toContain('Terraform has been successfully initialized!');

    // the phase ends: the token with it
    writeFileSync(release, '');
    await t.app.executor.executor.idle();
    await t.settle();
    expect(await flow.status(run)).toBe('errored');
    expect((await as(token, `/workspaces/${shared}/current-state-version`)).status).toBe(401);
  });

  it('a token is refused when tampered with or past its bound', () => {
    const core = t.app.core;
    const token = issueRunToken(core, { run: 'run-x', phase: 'plan', exp: 1 });
    expect(readRunToken(core, token)).toEqual({ run: 'run-x', phase: 'plan', exp: 1 });
    const [prefix, payload, mac] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ run: 'run-x', phase: 'apply', exp: 1 })).toString(
      'base64url',
    );
    expect(readRunToken(core, `${prefix}.${forged}.${mac}`)).toBeNull();
    expect(readRunToken(core, `${prefix}.${payload}.${'0'.repeat(64)}`)).toBeNull();
    expect(readRunToken(core, 'not-a-run-token')).toBeNull();
  });
});

describe('withoutBackendLines', () => {
  it('drops the two lines init prints about the local backend, and nothing else', () => {
    const out: string[] = [];
    const log = withoutBackendLines((l) => out.push(l));
    for (const line of [
      'Initializing the backend...',
      '',
      'Successfully configured the backend "local"! Terraform will automatically',
      'use this backend unless the backend configuration changes.',
      'Initializing provider plugins...',
      'use this backend unless the backend configuration changes.',
    ])
      log(line);
    expect(out).toEqual([
      'Initializing the backend...',
      '',
      'Initializing provider plugins...',
      'use this backend unless the backend configuration changes.',
    ]);
  });
});
