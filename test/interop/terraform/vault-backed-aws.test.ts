import { execFile } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { httpsCall } from '../../support/https.js';
import {
  cloudBlock,
  type TerraformHost,
  TERRAFORM_BIN,
  TerraformWorkdir,
  useTerraformHost,
} from '../../support/terraform.js';

/**
 * No static secret anywhere: a workspace set up with the reference's variables for Vault-backed
 * AWS credentials runs the real terraform on the command engine; in its apply a `local-exec`
 * provisioner runs the real aws CLI (`sts get-caller-identity`) against Keel's embedded STS with
 * the credentials the phase was given. They came from Keel's own AWS engine, read with a token
 * that the phase's workload identity token got from Keel's JWT auth method; once the phase ends,
 * that token and its lease are revoked (the IAM user is gone). A role or auth path that does not
 * exist fails the plan, naming it.
 */

const run = promisify(execFile);
const AWS = '/usr/bin/aws';
const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});

const terraformHost = useTerraformHost(
  async (h) => {
    await h.organization('acme');
    await configureSecrets(h);
  },
  { env: { KEEL_ENGINE_BIN: TERRAFORM_BIN } },
);

/** A Vault API call with the bootstrap root token. */
async function v1(h: TerraformHost, method: string, path: string, body?: unknown) {
  const res = await httpsCall(method, `${h.url}/v1/${path}`, readFileSync(h.caFile, 'utf8'), {
    headers: {
      'x-vault-token': h.daemon.bootstrap().secrets.root_token,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (res.body === '' ? {} : JSON.parse(res.body)) as Json };
}
type Json = Record<string, unknown> & { data?: Record<string, unknown> };

/**
 * Keel's JWT auth method trusts Keel's own issuer (its JWKS keys as PEM), with a role bound to
 * the organization `acme`; the AWS role `dev` issues IAM users; a policy lets the role read them.
 */
async function configureSecrets(h: TerraformHost): Promise<void> {
  const ca = readFileSync(h.caFile, 'utf8');
  const doc = JSON.parse(
    (await httpsCall('GET', `${h.url}/.well-known/openid-configuration`, ca)).body,
  ) as { issuer: string };
  const jwks = JSON.parse((await httpsCall('GET', `${h.url}/.well-known/jwks`, ca)).body) as {
    keys: Record<string, string>[];
  };
  const pems = jwks.keys.map((k) =>
    createPublicKey({ key: k, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString(),
  );
  const steps: [string, string, unknown][] = [
    ['POST', 'sys/auth/jwt', { type: 'jwt' }],
    ['POST', 'auth/jwt/config', { jwt_validation_pubkeys: pems, bound_issuer: doc.issuer }],
    [
      'POST',
      'sys/policies/acl/aws-dev',
      {
        policy:
          'path "aws/creds/dev" { capabilities = ["read"] }\npath "aws/sts/deploy" { capabilities = ["update"] }',
      },
    ],
    [
      'POST',
      'auth/jwt/role/run',
      {
        role_type: 'jwt',
        bound_audiences: ['vault.workload.identity'],
        user_claim: 'terraform_full_workspace',
        bound_claims: { terraform_organization_name: 'acme' },
        token_policies: ['aws-dev'],
        token_ttl: '30m',
      },
    ],
    ['POST', 'aws/roles/dev', { credential_type: 'iam_user', policy_document: ALLOW_ALL }],
  ];
  for (const [method, path, body] of steps) {
    const res = await v1(h, method, path, body);
    if (res.status >= 300)
      throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.json)}`);
  }
}

/** A workspace on the command engine with the given environment variables. */
async function workspace(h: TerraformHost, name: string, env: Record<string, string>) {
  const ws = await h.api('POST', '/organizations/acme/workspaces', {
    data: { type: 'workspaces', attributes: { name, 'execution-engine': 'default' } },
  });
  expect(ws.status, ws.text).toBe(201);
  const id = (ws.json as { data: { id: string } }).data.id;
  for (const [key, value] of Object.entries(env)) {
    const v = await h.api('POST', `/workspaces/${id}/vars`, {
      data: { type: 'vars', attributes: { key, value, category: 'env' } },
    });
    expect(v.status, v.text).toBe(201);
  }
  return id;
}

const VAULT_ENV = {
  TFC_VAULT_BACKED_AWS_AUTH: 'true',
  TFC_VAULT_BACKED_AWS_AUTH_TYPE: 'iam_user',
  TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE: 'dev',
  TFC_VAULT_RUN_ROLE: 'run',
  TFC_VAULT_AUTH_PATH: 'jwt',
};

/** The aws CLI with only these keys (no files, the listener CA trusted). */
const callerIdentity = (h: TerraformHost, id: string, secret: string) =>
  awsCli(h, { id, secret }, ['sts', 'get-caller-identity'], `${h.url}/cloud/sts`);

async function awsCli(
  h: TerraformHost,
  { id, secret }: { id: string; secret: string },
  args: string[],
  endpoint: string,
) {
  try {
    const { stdout } = await run(
      AWS,
      [...args, '--endpoint-url', endpoint, '--region', 'us-east-1', '--output', 'json'],
      {
        timeout: 30_000,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          AWS_CONFIG_FILE: '/dev/null',
          AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
          AWS_CA_BUNDLE: h.caFile,
          AWS_MAX_ATTEMPTS: '1',
          AWS_ACCESS_KEY_ID: id,
          AWS_SECRET_ACCESS_KEY: secret,
        },
      },
    );
    return { ok: true, out: stdout };
  } catch (e) {
    return { ok: false, out: String((e as { stderr?: string }).stderr ?? e) };
  }
}

describe('Vault-backed AWS credentials from Keel itself', () => {
  it('has the aws CLI to drive (.ci/run installs Debian awscli)', () => {
    expect(existsSync(AWS), `${AWS} is missing: install Debian's awscli`).toBe(true);
  });

  it('an apply proves its credentials with the aws CLI, and they are revoked after the phase', async () => {
    const host = terraformHost();
    await workspace(host, 'dyn', VAULT_ENV);
    const out = mkdtempSync(join(tmpdir(), 'keel-vault-aws-'));
    const command = [
      `AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_CA_BUNDLE=${host.caFile}`,
      `${AWS} sts get-caller-identity --endpoint-url ${host.url}/cloud/sts --region us-east-1`,
      `--output json > ${out}/identity.json`,
      `&& printf '%s\\n%s\\n%s' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$\${AWS_SESSION_TOKEN:-none}" > ${out}/keys`,
    ].join(' ');
    // the reference's variable: the same keys in a shared credentials file, as a provider's
    // shared_credentials_files would read them (the environment's keys taken away)
    const fromFile = [
      'env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN',
      `AWS_CONFIG_FILE=/dev/null AWS_CA_BUNDLE=${host.caFile}`,
      'AWS_SHARED_CREDENTIALS_FILE=${var.tfc_vault_backed_aws_dynamic_credentials.default.shared_credentials_file}',
      `${AWS} sts get-caller-identity --endpoint-url ${host.url}/cloud/sts --region us-east-1`,
      `--output json > ${out}/from-file.json`,
      '&& printf %s ${var.tfc_vault_backed_aws_dynamic_credentials.default.shared_credentials_file}',
      `> ${out}/credentials-path`,
    ].join(' ');
    const config = `variable "tfc_vault_backed_aws_dynamic_credentials" {
  type = object({
    default = object({ shared_credentials_file = string })
    aliases = map(object({ shared_credentials_file = string }))
  })
}
resource "terraform_data" "a" {
  input = "x"
  provisioner "local-exec" {
    command = ${JSON.stringify(command)}
  }
  provisioner "local-exec" {
    command = ${JSON.stringify(fromFile)}
  }
}
`;
    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': `${cloudBlock(host, 'acme', 'dyn')}\n${config}` },
    });
    const init = await work.run(['init', '-input=false', '-no-color']);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(apply.code, apply.stdout + apply.stderr).toBe(0);

    const identity = JSON.parse(readFileSync(join(out, 'identity.json'), 'utf8')) as {
      Arn: string;
      Account: string;
    };
    // an IAM user the AWS engine made, named after the JWT login (the workspace's full name)
    expect(identity.Arn).toMatch(/^arn:aws:iam::\d{12}:user\/vault-jwt-organization_acme_project_/);
    const [id, secret, session] = readFileSync(join(out, 'keys'), 'utf8').split('\n') as [
      string,
      string,
      string,
    ];
    expect(id).toMatch(/^AKIA/);
    expect(session).toBe('none');
    const fromFileIdentity = JSON.parse(readFileSync(join(out, 'from-file.json'), 'utf8')) as {
      Arn: string;
    };
    expect(fromFileIdentity.Arn).toBe(identity.Arn);
    // the file is Keel's own (under its data directory) and goes with the phase
    const credentialsPath = readFileSync(join(out, 'credentials-path'), 'utf8');
    expect(credentialsPath).toContain('/phase-credentials/run-');
    await expect.poll(() => existsSync(credentialsPath), { timeout: 20_000 }).toBe(false);
    // the keys never show in the log the CLI printed
    expect(apply.stdout).not.toContain(secret);
    expect(apply.stdout).not.toContain(id);

    // after the phase: the lease is revoked, so the user and its keys are gone
    await expect
      .poll(async () => (await callerIdentity(host, id, secret)).ok, { timeout: 20_000 })
      .toBe(false);
    const leases = await v1(host, 'LIST', 'sys/leases/lookup/aws/creds/dev/');
    expect((leases.json.data?.keys as string[] | undefined) ?? []).toEqual([]);
  });

  it('assumed_role: the phase gets a session in the role, and no lease outlives the phase', async () => {
    const host = terraformHost();
    const boot = host.daemon.bootstrap();
    const me = await callerIdentity(host, boot.cloud.access_key_id, boot.cloud.secret_access_key);
    expect(me.ok, me.out).toBe(true);
    const account = (JSON.parse(me.out) as { Account: string }).Account;
    const trust = JSON.stringify({
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: { AWS: `arn:aws:iam::${account}:root` },
          Action: 'sts:AssumeRole',
        },
      ],
    });
    const role = await awsCli(
      host,
      { id: boot.cloud.access_key_id, secret: boot.cloud.secret_access_key },
      ['iam', 'create-role', '--role-name', 'deployer', '--assume-role-policy-document', trust],
      `${host.url}/cloud/iam`,
    );
    expect(role.ok, role.out).toBe(true);
    const arn = (JSON.parse(role.out) as { Role: { Arn: string } }).Role.Arn;
    const made = await v1(host, 'POST', 'aws/roles/deploy', {
      credential_type: 'assumed_role',
      role_arns: [arn],
    });
    expect(made.status, JSON.stringify(made.json)).toBe(204);
    await workspace(host, 'assumed', {
      ...VAULT_ENV,
      TFC_VAULT_BACKED_AWS_AUTH_TYPE: 'assumed_role',
      TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE: 'deploy',
      TFC_VAULT_BACKED_AWS_RUN_ROLE_ARN: arn,
    });
    const out = mkdtempSync(join(tmpdir(), 'keel-vault-sts-'));
    const command = [
      `AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_CA_BUNDLE=${host.caFile}`,
      `${AWS} sts get-caller-identity --endpoint-url ${host.url}/cloud/sts --region us-east-1`,
      `--output json > ${out}/identity.json`,
      `&& test -n "$AWS_SESSION_TOKEN"`,
    ].join(' ');
    const work = new TerraformWorkdir(host, {
      files: {
        'main.tf': `${cloudBlock(host, 'acme', 'assumed')}\nresource "terraform_data" "a" {\n  input = "x"\n  provisioner "local-exec" {\n    command = ${JSON.stringify(command)}\n  }\n}\n`,
      },
    });
    const init = await work.run(['init', '-input=false', '-no-color']);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(apply.code, apply.stdout + apply.stderr).toBe(0);
    const identity = JSON.parse(readFileSync(join(out, 'identity.json'), 'utf8')) as {
      Arn: string;
    };
    expect(identity.Arn).toMatch(/:assumed-role\/deployer\//);
    await expect
      .poll(
        async () =>
          ((await v1(host, 'LIST', 'sys/leases/lookup/aws/sts/deploy/')).json.data?.keys as
            string[] | undefined) ?? [],
        { timeout: 20_000 },
      )
      .toEqual([]);
  });

  it('an unknown role or auth path fails the plan closed, naming it', async () => {
    const host = terraformHost();
    for (const [name, change, expected] of [
      ['badrole', { TFC_VAULT_RUN_ROLE: 'nope' }, 'login at auth/jwt with role nope failed'],
      ['badpath', { TFC_VAULT_AUTH_PATH: 'nowhere' }, 'login at auth/nowhere with role run failed'],
      [
        'badawsrole',
        { TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE: 'ghost' },
        'reading iam_user credentials of role ghost at aws failed',
      ],
    ] as const) {
      await workspace(host, name, { ...VAULT_ENV, ...change });
      const work = new TerraformWorkdir(host, {
        files: {
          'main.tf': `${cloudBlock(host, 'acme', name)}\nresource "terraform_data" "a" {\n  input = "x"\n}\n`,
        },
      });
      expect((await work.run(['init', '-input=false', '-no-color'])).code).toBe(0);
      const plan = await work.run(['plan', '-input=false', '-no-color']);
      expect(plan.code, name).not.toBe(0);
      const said = plan.stdout + plan.stderr;
      expect(said, name).toContain('Vault-backed AWS credentials:');
      expect(said, name).toContain(expected);
    }
  });
});
