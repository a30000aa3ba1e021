import { describe, expect, it } from 'vitest';
import { vaultAwsSettings } from '../../../src/runs/executor/vault-aws.js';
import type { WorkspaceVariable } from '../../../src/runs/executor/types.js';

/** The reference's variables for Vault-backed AWS credentials, read or refused by name. */

const KEEL = 'https://keel.example:8420';
const env = (vars: Record<string, string>): WorkspaceVariable[] =>
  Object.entries(vars).map(([key, value]) => ({
    key,
    value,
    category: 'env',
    hcl: false,
    sensitive: false,
  }));
const BASE = {
  TFC_VAULT_BACKED_AWS_AUTH: 'true',
  TFC_VAULT_BACKED_AWS_AUTH_TYPE: 'assumed_role',
  TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE: 'deploy',
  TFC_VAULT_RUN_ROLE: 'run',
};
const refused = (vars: Record<string, string>) => {
  try {
    vaultAwsSettings(env(vars), KEEL);
  } catch (err) {
    return (err as Error).message;
  }
  return 'not refused';
};

describe('Vault-backed AWS settings', () => {
  it('are off unless TFC_VAULT_BACKED_AWS_AUTH is true (env variables only)', () => {
    expect(vaultAwsSettings([], KEEL)).toBeNull();
    expect(vaultAwsSettings(env({ ...BASE, TFC_VAULT_BACKED_AWS_AUTH: 'false' }), KEEL)).toBeNull();
    const asTerraformVar = env(BASE).map((v) => ({ ...v, category: 'terraform' as const }));
    expect(vaultAwsSettings(asTerraformVar, KEEL)).toBeNull();
  });

  it('take the reference defaults: Keel as Vault, auth path jwt, mount aws, the Vault audience', () => {
    expect(vaultAwsSettings(env(BASE), KEEL)).toEqual({
      addr: KEEL,
      authPath: 'jwt',
      runRole: 'run',
      audience: 'vault.workload.identity',
      mount: 'aws',
      awsRole: 'deploy',
      authType: 'assumed_role',
      roleArn: null,
      ca: null,
      // No wait after the credentials unless TFC_VAULT_BACKED_AWS_SLEEP_SECONDS asks for one.
      sleepSeconds: 0,
    });
    const ca = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    expect(
      vaultAwsSettings(
        env({
          ...BASE,
          TFC_VAULT_ADDR: 'https://vault.example:8200/',
          TFC_VAULT_AUTH_PATH: '/auth-ci/',
          TFC_VAULT_BACKED_AWS_MOUNT_PATH: 'cloud/aws',
          TFC_VAULT_WORKLOAD_IDENTITY_AUDIENCE: 'keel',
          TFC_VAULT_BACKED_AWS_RUN_ROLE_ARN: 'arn:aws:iam::123456789012:role/deploy',
          TFC_VAULT_ENCODED_CACERT: Buffer.from(ca).toString('base64'),
          TFC_VAULT_BACKED_AWS_SLEEP_SECONDS: ' 30 ',
        }),
        KEEL,
      ),
    ).toMatchObject({
      addr: 'https://vault.example:8200',
      authPath: 'auth-ci',
      mount: 'cloud/aws',
      audience: 'keel',
      roleArn: 'arn:aws:iam::123456789012:role/deploy',
      ca,
      sleepSeconds: 30,
    });
  });

  it('refuse what is missing, wrong, or not served, naming it', () => {
    expect(refused({ ...BASE, TFC_VAULT_RUN_ROLE: '' })).toContain(
      'TFC_VAULT_RUN_ROLE is required',
    );
    const { TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE: _role, ...noRole } = BASE;
    expect(refused(noRole)).toContain('TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE is required');
    expect(refused({ ...BASE, TFC_VAULT_BACKED_AWS_AUTH_TYPE: 'session_token' })).toContain(
      'TFC_VAULT_BACKED_AWS_AUTH_TYPE must be one of iam_user, assumed_role, federation_token',
    );
    expect(refused({ ...BASE, TFC_VAULT_NAMESPACE: 'admin' })).toContain(
      'TFC_VAULT_NAMESPACE is not supported',
    );
    expect(refused({ ...BASE, TFC_VAULT_BACKED_AWS_AUTH_PROD: 'true' })).toContain(
      'TFC_VAULT_BACKED_AWS_AUTH_PROD is not supported by Keel',
    );
    expect(refused({ ...BASE, TFC_VAULT_PROVIDER_AUTH: 'true' })).toContain(
      'TFC_VAULT_PROVIDER_AUTH',
    );
    expect(refused({ ...BASE, TFC_VAULT_AUTH_PATH: '../sys' })).toContain(
      'TFC_VAULT_AUTH_PATH is not a mount path',
    );
    expect(refused({ ...BASE, TFC_VAULT_ADDR: 'ftp://vault' })).toContain(
      'TFC_VAULT_ADDR is not an http(s) address',
    );
    for (const message of [refused({ ...BASE, TFC_VAULT_RUN_ROLE: '' })])
      expect(message).toMatch(/^Vault-backed AWS credentials: /);
  });
});
