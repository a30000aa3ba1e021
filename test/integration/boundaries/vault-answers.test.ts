import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/daemon.js';
import { flowApp, planWith as planWithEnv } from '../../support/executor-flow.js';

/**
 * A Vault's answers are JSON from outside Keel: a login or a credentials answer that parses but
 * does not fit (a token that is a number, keys missing) fails the phase before terraform starts,
 * naming the field, and hands nothing to terraform.
 */

const app = flowApp({ config: { engineBin: resolve('test/fixtures/fake-terraform') } });
const CONFIG = { 'main.tf': 'resource "terraform_data" "a" {\n  input = "one"\n}\n' };

/** What the fake Vault answers, by path; each test sets it. */
let answers: Record<string, unknown> = {};
/** The paths the fake Vault was asked for, in order, and who waits for one of them. */
const asked: string[] = [];
const waiters: { path: string; done: () => void }[] = [];
const askedFor = (path: string) =>
  new Promise<void>((done) => {
    if (asked.includes(path)) done();
    else waiters.push({ path, done });
  });
let vault: Server;
let addr = '';
beforeAll(async () => {
  vault = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = (req.url ?? '').replace(/^\/v1\//, '');
      asked.push(path);
      for (const w of waiters.filter((x) => x.path === path)) w.done();
      const body = answers[path];
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body === undefined ? { errors: [`no ${path}`] } : body));
    });
  });
  await new Promise<void>((done) => vault.listen(0, '127.0.0.1', done));
  addr = `http://127.0.0.1:${(vault.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((done) => vault.close(done));
});

const planWith = (env: Record<string, string>) => planWithEnv(app, env, CONFIG);

const VAULT = () => ({
  TFC_VAULT_ADDR: addr,
  TFC_VAULT_BACKED_AWS_AUTH: 'true',
  TFC_VAULT_BACKED_AWS_AUTH_TYPE: 'iam_user',
  TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE: 'dev',
  TFC_VAULT_RUN_ROLE: 'run',
});

describe("a Vault's answers that are JSON but do not fit", () => {
  it('a login whose token is not a string fails the plan, naming auth/client_token', async () => {
    answers = { 'auth/jwt/login': { auth: { client_token: 5 } } };
    const { status, log } = await planWith(VAULT());
    expect(status).toBe('errored');
    expect(log).toContain('login at auth/jwt with role run failed: the answer does not fit:');
    expect(log).toContain('/auth/client_token:');
    expect(log).not.toContain('Terraform has been successfully initialized!');
  });

  it('a login answer that is a list fails the plan the same way', async () => {
    answers = { 'auth/jwt/login': [{ auth: { client_token: 'tok' } }] };
    const { status, log } = await planWith(VAULT());
    expect(status).toBe('errored');
    expect(log).toContain('the answer does not fit: the document:');
  });

  it('credentials without a secret key and with a nested lease id fail the plan, naming both', async () => {
    answers = {
      'auth/jwt/login': { auth: { client_token: 'tok' } },
      'aws/creds/dev': { lease_id: { id: 'x' }, data: { access_key: 'AKIA' } },
      'auth/token/revoke-self': {},
    };
    const { status, log } = await planWith(VAULT());
    expect(status).toBe('errored');
    expect(log).toContain(
      'reading iam_user credentials of role dev at aws failed: the answer does not fit:',
    );
    expect(log).toContain('/lease_id:');
    expect(log).toContain('/data/secret_key:');
    expect(log).not.toContain('Terraform has been successfully initialized!');
  });

  it("a refusal still shows Vault's own errors", async () => {
    answers = {};
    const { status, log } = await planWith(VAULT());
    expect(status).toBe('errored');
    expect(log).toContain('failed: no auth/jwt/login');
  });
});

describe('TFC_VAULT_BACKED_AWS_SLEEP_SECONDS', () => {
  it('holds terraform back after the credentials are read; a cancel meanwhile ends the phase canceled and revokes them', async () => {
    answers = {
      'auth/jwt/login': { auth: { client_token: 'tok' } },
      'aws/creds/dev': {
        lease_id: 'aws/creds/dev/abc',
        data: { access_key: 'AKIAWAITING', secret_key: 'secret-while-waiting' },
      },
      'auth/token/revoke-self': {},
    };
    asked.length = 0;
    const { flow, t } = app;
    const { ws } = await flow.workspace();
    const env = { ...VAULT(), TFC_VAULT_BACKED_AWS_SLEEP_SECONDS: '3600' };
    for (const [key, value] of Object.entries(env)) await flow.envVar(ws, key, value);
    const read = askedFor('aws/creds/dev');
    const run = await flow.run(ws, {}, await flow.upload(ws, CONFIG));
    await read;
    // The credentials are read, and the phase says it waits the hour before terraform starts.
    const waiting = await eventually(async () => {
      const { log } = await flow.phase(run, 'plan');
      return log.includes('Waiting 3600 s before terraform starts') ? log : undefined;
    });
    expect(waiting).toContain('(TFC_VAULT_BACKED_AWS_SLEEP_SECONDS)');
    expect(waiting).not.toContain('Terraform has been successfully initialized!');
    expect(await flow.status(run)).toBe('planning');
    await flow.action(run, 'cancel');
    await t.settle();
    expect(await flow.status(run)).toBe('canceled');
    const plan = await flow.phase(run, 'plan');
    expect(plan.attributes.status).toBe('canceled');
    expect(plan.log).not.toContain('Terraform has been successfully initialized!');
    // The token the credentials were read with is revoked, and with it their lease.
    expect(asked).toEqual(['auth/jwt/login', 'aws/creds/dev', 'auth/token/revoke-self']);
  });

  it('is refused, naming it, when it is not a whole number of seconds up to a day', async () => {
    for (const value of ['-1', '1.5', '30s', '86401']) {
      const { status, log } = await planWith({
        ...VAULT(),
        TFC_VAULT_BACKED_AWS_SLEEP_SECONDS: value,
      });
      expect(status).toBe('errored');
      expect(log).toContain(
        `TFC_VAULT_BACKED_AWS_SLEEP_SECONDS must be a whole number of seconds from 0 to 86400, got ${JSON.stringify(value)}`,
      );
    }
  });
});
