import { describe, expect, it } from 'vitest';
import { flowApp, planWith as planWithEnv } from '../../support/executor-flow.js';

/**
 * Vault-backed AWS credentials are refused, failing the plan before anything runs, where Keel
 * cannot give them: the builtin engine (it runs no provider) and settings it does not serve.
 */

const app = flowApp();
const CONFIG = { 'main.tf': 'resource "terraform_data" "a" {\n  input = "one"\n}\n' };

const planWith = (env: Record<string, string>) => planWithEnv(app, env, CONFIG);

const VAULT = {
  TFC_VAULT_BACKED_AWS_AUTH: 'true',
  TFC_VAULT_BACKED_AWS_AUTH_TYPE: 'iam_user',
  TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE: 'dev',
  TFC_VAULT_RUN_ROLE: 'run',
};

describe('Vault-backed AWS credentials refused', () => {
  it('on the builtin engine, naming the command engine', async () => {
    const { status, log } = await planWith(VAULT);
    expect(status).toBe('errored');
    expect(log).toContain(
      'Error: plan failed inside Keel: Vault-backed AWS credentials: they reach terraform only on the command engine',
    );
  });

  it('when a required variable is missing or a setting is not served, naming it', async () => {
    const missing = await planWith({ ...VAULT, TFC_VAULT_RUN_ROLE: '' });
    expect(missing.status).toBe('errored');
    expect(missing.log).toContain('TFC_VAULT_RUN_ROLE is required');
    const namespace = await planWith({ ...VAULT, TFC_VAULT_NAMESPACE: 'admin' });
    expect(namespace.status).toBe('errored');
    expect(namespace.log).toContain('TFC_VAULT_NAMESPACE is not supported');
  });

  it('a workspace without them plans as before', async () => {
    const { status } = await planWith({ TFC_VAULT_BACKED_AWS_AUTH: 'false' });
    expect(status).toBe('planned');
  });
});
