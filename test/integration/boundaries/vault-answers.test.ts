import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
let vault: Server;
let addr = '';
beforeAll(async () => {
  vault = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = (req.url ?? '').replace(/^\/v1\//, '');
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
