import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CreateRoleCommand,
  CreateUserCommand,
  CreateAccessKeyCommand,
  PutUserPolicyCommand,
} from '@aws-sdk/client-iam';
import { startAws } from '../../support/aws.js';
import type { AwsHarness } from '../../support/aws.js';

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});
type Env = {
  data: Record<string, unknown>;
  lease_id: string;
  lease_duration: number;
  renewable: boolean;
};

let h: AwsHarness;
let roleA: string;
let roleB: string;
beforeAll(async () => {
  h = await startAws();
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
  roleA =
    (
      await h.cloud
        .iam()
        .send(new CreateRoleCommand({ RoleName: 'a', AssumeRolePolicyDocument: trust }))
    ).Role?.Arn ?? '';
  roleB =
    (
      await h.cloud
        .iam()
        .send(new CreateRoleCommand({ RoleName: 'b', AssumeRolePolicyDocument: trust }))
    ).Role?.Arn ?? '';
});
afterAll(() => h.close());

describe('assumed_role', () => {
  it('issues working credentials with an arn; the only role arn is picked; STS leases are not renewable', async () => {
    await h.v1('POST', 'aws/roles/one', {
      body: { credential_type: 'assumed_role', role_arns: [roleA], default_sts_ttl: '15m' },
    });
    const res = await h.v1('POST', 'aws/sts/one', { body: { role_session_name: 'x'.repeat(80) } });
    expect(res.status).toBe(200);
    const env = res.json as Env;
    expect(env).toMatchObject({ renewable: false, lease_duration: 900 });
    expect(env.data).toMatchObject({
      arn: `arn:aws:sts::${h.cloud.cloud.accountId}:assumed-role/a/${'x'.repeat(64)}`,
      ttl: 900,
    });
    expect(env.data.security_token).toBe(env.data.session_token);
    expect(await h.works(env.data as never)).toBe(true);
    const renew = await h.v1('PUT', 'sys/leases/renew', { body: { lease_id: env.lease_id } });
    expect(renew).toMatchObject({ status: 400, json: { errors: ['lease is not renewable'] } });
  });

  it('takes parameters from the query string on GET creds/, caps ttl at max_sts_ttl', async () => {
    await h.v1('POST', 'aws/roles/two', {
      body: { credential_type: 'assumed_role', role_arns: `${roleA},${roleB}`, max_sts_ttl: '20m' },
    });
    const res = await h.v1('GET', `aws/creds/two?role_arn=${encodeURIComponent(roleB)}&ttl=1h`);
    expect(res.status).toBe(200);
    expect((res.json as Env).data.arn).toMatch(/assumed-role\/b\//);
    expect((res.json as Env).lease_duration).toBe(1200);
  });

  it('refuses an ambiguous or foreign role_arn', async () => {
    expect(await h.v1('POST', 'aws/sts/two')).toMatchObject({
      status: 400,
      json: { errors: ['did not supply a role_arn parameter and unable to determine one'] },
    });
    expect(
      await h.v1('POST', 'aws/sts/two', { body: { role_arn: 'arn:aws:iam::1:role/z' } }),
    ).toMatchObject({
      status: 400,
      json: {
        errors: ['role_arn "arn:aws:iam::1:role/z" not in allowed role arns for Vault role "two"'],
      },
    });
  });

  it('reports provider errors as 400 with the step', async () => {
    const res = await h.v1('POST', 'aws/sts/one', { body: { ttl: 60 } });
    expect(res.status).toBe(400);
    expect((res.json as { errors: string[] }).errors[0]).toMatch(
      /^Error assuming role: ValidationError: /,
    );
  });
});

describe('federation_token and session_token', () => {
  it('federation tokens carry a generated name of at most 32 characters', async () => {
    await h.v1('POST', 'aws/roles/fed', {
      body: { credential_type: 'federation_token', policy_document: ALLOW_ALL },
    });
    const env = (await h.v1('GET', 'aws/sts/fed')).json as Env;
    expect(env.data).toMatchObject({ ttl: 3600 });
    expect(await h.works(env.data as never)).toBe(true);
  });

  it('session tokens work; mfa_code is required when the role sets a serial', async () => {
    await h.v1('POST', 'aws/roles/sess', { body: { credential_type: 'session_token' } });
    const env = (await h.v1('POST', 'aws/creds/sess', { body: { ttl: '900s' } })).json as Env;
    expect(env.data).not.toHaveProperty('security_token');
    expect(await h.works(env.data as never)).toBe(true);
    await h.v1('POST', 'aws/roles/mfa', {
      body: {
        credential_type: 'session_token',
        mfa_serial_number: 'arn:aws:iam::000000000000:mfa/x',
      },
    });
    expect(await h.v1('GET', 'aws/creds/mfa')).toMatchObject({
      status: 400,
      json: { errors: ['mfa_code is required when the role sets mfa_serial_number'] },
    });
  });

  it('STS revocation ends the lease only', async () => {
    const env = (await h.v1('GET', 'aws/creds/sess')).json as Env;
    expect(
      (await h.v1('PUT', 'sys/leases/revoke', { body: { lease_id: env.lease_id } })).status,
    ).toBe(204);
    expect(await h.works(env.data as never)).toBe(true);
  });
});

describe('rotate-root', () => {
  it('replaces the root key: the new one works, the old one stops', async () => {
    await h.cloud.iam().send(new CreateUserCommand({ UserName: 'engine' }));
    await h.cloud.iam().send(
      new PutUserPolicyCommand({
        UserName: 'engine',
        PolicyName: 'all',
        PolicyDocument: ALLOW_ALL,
      }),
    );
    const k = (await h.cloud.iam().send(new CreateAccessKeyCommand({ UserName: 'engine' })))
      .AccessKey;
    await h.v1('POST', 'aws/config/root', {
      body: { access_key: k?.AccessKeyId, secret_key: k?.SecretAccessKey },
    });
    const res = await h.v1('POST', 'aws/config/rotate-root');
    expect(res.status).toBe(200);
    const next = (res.json as Env).data.access_key as string;
    expect(next).not.toBe(k?.AccessKeyId);
    expect(
      await h.works({ access_key: k?.AccessKeyId ?? '', secret_key: k?.SecretAccessKey ?? '' }),
    ).toBe(false);
    expect(((await h.v1('GET', 'aws/config/root')).json as Env).data.access_key).toBe(next);
    // The engine still works with the new key.
    expect((await h.v1('GET', 'aws/creds/sess')).status).toBe(200);
  });

  it('refuses without static credentials', async () => {
    const bare = await startAws({ configureRoot: false });
    try {
      expect(await bare.v1('POST', 'aws/config/rotate-root')).toMatchObject({
        status: 500,
        json: { errors: ['1 error occurred:\n\t* no configuration found for config/root\n\n'] },
      });
      await bare.v1('POST', 'aws/config/root', { body: { region: 'us-east-1' } });
      expect(await bare.v1('POST', 'aws/config/rotate-root')).toMatchObject({
        status: 400,
        json: {
          errors: ['Cannot call config/rotate-root when either access_key or secret_key is empty'],
        },
      });
    } finally {
      await bare.close();
    }
  });
});
