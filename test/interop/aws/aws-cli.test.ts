import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateRoleCommand, CreateUserCommand } from '@aws-sdk/client-iam';
import { ManualClock } from '../../../src/core/clock.js';
import { startAws } from '../../support/aws.js';
import type { AwsHarness } from '../../support/aws.js';

const run = promisify(execFile);
const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});

/** `aws sts get-caller-identity` with only the given key: the ARN, or null when refused. */
async function whoami(
  h: AwsHarness,
  key: { access_key: string; secret_key: string; session_token?: unknown },
): Promise<string | null> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: '/nonexistent',
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_MAX_ATTEMPTS: '1',
    AWS_ACCESS_KEY_ID: key.access_key,
    AWS_SECRET_ACCESS_KEY: key.secret_key,
    ...(typeof key.session_token === 'string' ? { AWS_SESSION_TOKEN: key.session_token } : {}),
  };
  try {
    const { stdout } = await run(
      '/usr/bin/aws',
      [
        'sts',
        'get-caller-identity',
        '--endpoint-url',
        h.cloud.stsEndpoint,
        '--region',
        'us-east-1',
        '--output',
        'json',
      ],
      { env, timeout: 30_000 },
    );
    return (JSON.parse(stdout) as { Arn: string }).Arn;
  } catch (e) {
    const stderr = (e as { stderr?: string }).stderr ?? '';
    if (/InvalidClientTokenId|ExpiredToken/.test(stderr)) return null;
    throw e;
  }
}

type Env = { data: Record<string, unknown>; lease_id: string };
let h: AwsHarness;
beforeAll(async () => {
  // The CLI signs with the host's time, so the shared clock starts at it.
  h = await startAws({ clock: new ManualClock(Date.now()) });
});
afterAll(() => h.close());

describe('the aws CLI against credentials Keel issues', () => {
  it('an iam_user credential authenticates until its lease is revoked', async () => {
    await h.v1('POST', 'aws/roles/dev', {
      body: { credential_type: 'iam_user', policy_document: ALLOW_ALL },
    });
    const env = (await h.v1('GET', 'aws/creds/dev')).json as Env;
    const key = env.data as { access_key: string; secret_key: string };
    expect(await whoami(h, key)).toMatch(
      new RegExp(`^arn:aws:iam::${h.cloud.cloud.accountId}:user/vault-root-dev-\\d+-\\w{20}$`),
    );
    await h.v1('PUT', 'sys/leases/revoke', { body: { lease_id: env.lease_id } });
    expect(await whoami(h, key)).toBeNull();
  });

  it('an assumed-role credential authenticates as the assumed role', async () => {
    const trust = JSON.stringify({
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: { AWS: `arn:aws:iam::${h.cloud.cloud.accountId}:root` },
          Action: 'sts:AssumeRole',
        },
      ],
    });
    const arn =
      (
        await h.cloud
          .iam()
          .send(new CreateRoleCommand({ RoleName: 'ops', AssumeRolePolicyDocument: trust }))
      ).Role?.Arn ?? '';
    await h.v1('POST', 'aws/roles/ops', {
      body: { credential_type: 'assumed_role', role_arns: arn },
    });
    const data = (
      (await h.v1('POST', 'aws/sts/ops', { body: { role_session_name: 'cli' } })).json as Env
    ).data;
    expect(await whoami(h, data as never)).toBe(data.arn);
  });

  it('a rotated static key stops working one rotation after it was replaced', async () => {
    await h.cloud.iam().send(new CreateUserCommand({ UserName: 'svc' }));
    await h.v1('POST', 'aws/static-roles/svc', { body: { username: 'svc', rotation_period: 60 } });
    const creds = async () =>
      ((await h.v1('GET', 'aws/static-creds/svc')).json as Env).data as {
        access_key: string;
        secret_key: string;
      };
    const first = await creds();
    expect(await whoami(h, first)).toMatch(/:user\/svc$/);
    h.clock.advance(61_000);
    await h.settle();
    const second = await creds();
    expect(second.access_key).not.toBe(first.access_key);
    expect(await whoami(h, first)).toMatch(/:user\/svc$/); // replaced, still valid for one period
    h.clock.advance(61_000);
    await h.settle();
    expect(await whoami(h, first)).toBeNull();
    expect(await whoami(h, await creds())).toMatch(/:user\/svc$/);
  });
});
