import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CreateAccessKeyCommand,
  CreateRoleCommand,
  CreateUserCommand,
  DeleteUserCommand,
  PutRolePolicyCommand,
} from '@aws-sdk/client-iam';
import { startAws } from '../../support/aws.js';
import type { AwsHarness } from '../../support/aws.js';

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});
type Env = { data: Record<string, unknown>; lease_id: string; warnings: string[] | null };
const errorsOf = (res: { json: unknown }) => (res.json as { errors: string[] }).errors;

let h: AwsHarness;
beforeAll(async () => {
  h = await startAws();
});
afterAll(() => h.close());

describe('error rows of the reference', () => {
  it('legacy roles keep creds/ and sts/ apart', async () => {
    await h.v1('POST', 'aws/roles/lp', { body: { arn: 'arn:aws:iam::aws:policy/ReadOnlyAccess' } });
    expect(errorsOf(await h.v1('POST', 'aws/sts/lp'))).toEqual([
      'attempted to retrieve iam_user credentials through the sts path; this is not allowed for legacy roles',
    ]);
    await h.v1('POST', 'aws/roles/lr', { body: { arn: 'arn:aws:iam::000000000000:role/x' } });
    expect(errorsOf(await h.v1('GET', 'aws/creds/lr'))).toEqual([
      'attempted to retrieve assumed_role credentials through the creds path; this is not allowed for legacy roles',
    ]);
    expect(
      await h.v1('POST', 'aws/roles/both', {
        body: { policy: ALLOW_ALL, arn: 'arn:aws:iam::000000000000:role/x' },
      }),
    ).toMatchObject({
      status: 500,
      json: { errors: ['1 error occurred:\n\t* only one of policy or arn should be provided\n\n'] },
    });
  });

  it('a template that does not parse is a 500 at creds time, not at config write', async () => {
    const root = { access_key: h.cloud.root.accessKeyId, secret_key: h.cloud.root.secretAccessKey };
    expect(
      (await h.v1('POST', 'aws/config/root', { body: { ...root, username_template: '{{ if }}' } }))
        .status,
    ).toBe(204);
    await h.v1('POST', 'aws/roles/t', {
      body: { credential_type: 'iam_user', policy_document: ALLOW_ALL },
    });
    const res = await h.v1('GET', 'aws/creds/t');
    expect(res.status).toBe(500);
    expect(errorsOf(res)[0]).toMatch(
      /unable to initialize username template: unable to parse template: template: username:1: missing value for command/,
    );
    await h.v1('POST', 'aws/config/root', { body: root });
  });

  it('unknown parameters are named in a warning on responses that have a body', async () => {
    const res = await h.v1('GET', 'aws/creds/t?color=blue&ttl=1h');
    expect((res.json as Env).warnings).toEqual([
      'Endpoint ignored these unrecognized parameters: [color]',
    ]);
    await h.v1('PUT', 'sys/leases/revoke', { body: { lease_id: (res.json as Env).lease_id } });
  });

  it('a static role whose IAM user was replaced refuses the update', async () => {
    await h.cloud.iam().send(new CreateUserCommand({ UserName: 'swap' }));
    await h.v1('POST', 'aws/static-roles/swap', {
      body: { username: 'swap', rotation_period: '1h' },
    });
    const key = ((await h.v1('GET', 'aws/static-creds/swap')).json as Env).data
      .access_key as string;
    await h.cloud.iam().send(
      new (await import('@aws-sdk/client-iam')).DeleteAccessKeyCommand({
        UserName: 'swap',
        AccessKeyId: key,
      }),
    );
    await h.cloud.iam().send(new DeleteUserCommand({ UserName: 'swap' }));
    await h.cloud.iam().send(new CreateUserCommand({ UserName: 'swap' }));
    const res = await h.v1('POST', 'aws/static-roles/swap', { body: { rotation_period: '2h' } });
    expect(res.status).toBe(400);
    expect(errorsOf(res)[0]).toMatch(
      /^AWS GetUser returned a user, but the ID did not match: "AIDA\w+" was requested, but "AIDA\w+" was returned$/,
    );
    expect(((await h.v1('GET', 'aws/static-roles/swap')).json as Env).data.rotation_period).toBe(
      3600,
    );
  });

  it('rotate-root fails with 500 when the user already has two keys', async () => {
    // No retries: the SDK classes LimitExceeded as throttling and would back off first.
    await h.v1('POST', 'aws/config/root', {
      body: {
        access_key: h.cloud.root.accessKeyId,
        secret_key: h.cloud.root.secretAccessKey,
        max_retries: 0,
      },
    });
    await h.cloud.iam().send(new CreateAccessKeyCommand({}));
    const res = await h.v1('POST', 'aws/config/rotate-root');
    expect(res.status).toBe(500);
    expect(errorsOf(res)[0]).toMatch(
      /^1 error occurred:\n\t\* error calling CreateAccessKey: LimitExceeded: Cannot exceed quota for AccessKeysPerUser: 2/,
    );
    expect(((await h.v1('GET', 'aws/config/root')).json as Env).data.access_key).toBe(
      h.cloud.root.accessKeyId,
    );
  });

  it('revoke-prefix revokes every lease of a role', async () => {
    await h.v1('POST', 'aws/roles/many', {
      body: { credential_type: 'iam_user', policy_document: ALLOW_ALL },
    });
    const keys: { access_key: string; secret_key: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const data = ((await h.v1('GET', 'aws/creds/many')).json as Env).data;
      keys.push({ access_key: String(data.access_key), secret_key: String(data.secret_key) });
    }
    expect((await h.v1('PUT', 'sys/leases/revoke-prefix/aws/creds/many')).status).toBe(204);
    for (const key of keys) expect(await h.works(key)).toBe(false);
  });

  it('names that do not match the name pattern are unknown paths', async () => {
    expect((await h.v1('GET', 'aws/roles/-bad-')).status).toBe(404);
    expect((await h.v1('GET', 'aws/nothing/here')).status).toBe(404);
  });
});

describe('edition-restricted parameters', () => {
  it('scheduled root rotation (rotation_period) rotates the root key from the schedule', async () => {
    const h2 = await startAws();
    try {
      await h2.cloud.iam().send(new CreateUserCommand({ UserName: 'eng' }));
      await h2.cloud.iam().send(
        new (await import('@aws-sdk/client-iam')).PutUserPolicyCommand({
          UserName: 'eng',
          PolicyName: 'all',
          PolicyDocument: ALLOW_ALL,
        }),
      );
      const k = (await h2.cloud.iam().send(new CreateAccessKeyCommand({ UserName: 'eng' })))
        .AccessKey;
      const first = { access_key: k?.AccessKeyId ?? '', secret_key: k?.SecretAccessKey ?? '' };
      expect(
        (await h2.v1('POST', 'aws/config/root', { body: { ...first, rotation_period: '1h' } }))
          .status,
      ).toBe(204);
      expect(((await h2.v1('GET', 'aws/config/root')).json as Env).data).toMatchObject({
        rotation_period: 3600,
        rotation_schedule: '',
      });
      h2.clock.advance(3600_000);
      await h2.settle();
      const next = ((await h2.v1('GET', 'aws/config/root')).json as Env).data.access_key;
      expect(next).not.toBe(first.access_key);
      expect(await h2.works(first)).toBe(false);
      // disable_automated_rotation stops it.
      await h2.v1('POST', 'aws/config/root', { body: { disable_automated_rotation: true } });
      h2.clock.advance(7200_000);
      await h2.settle();
      expect(((await h2.v1('GET', 'aws/config/root')).json as Env).data.access_key).toBe(next);
    } finally {
      await h2.close();
    }
  });

  it('rotation_schedule rotates on the cron; an occurrence found past its window is skipped', async () => {
    const h3 = await startAws();
    try {
      await h3.cloud.iam().send(new CreateUserCommand({ UserName: 'eng' }));
      await h3.cloud.iam().send(
        new (await import('@aws-sdk/client-iam')).PutUserPolicyCommand({
          UserName: 'eng',
          PolicyName: 'all',
          PolicyDocument: ALLOW_ALL,
        }),
      );
      const k = (await h3.cloud.iam().send(new CreateAccessKeyCommand({ UserName: 'eng' })))
        .AccessKey;
      const body = {
        access_key: k?.AccessKeyId,
        secret_key: k?.SecretAccessKey,
        rotation_schedule: '0 * * * *',
        rotation_window: '1h',
      };
      expect((await h3.v1('POST', 'aws/config/root', { body })).status).toBe(204);
      // Down for three hours: the 01:00 occurrence is found at 03:30, outside its one-hour window.
      await h3.restart();
      h3.clock.advance(3.5 * 3600_000);
      await h3.restart();
      await h3.settle();
      const kinds = h3.app.core.store.readAll(0, 100_000).map((e) => e.type);
      expect(kinds).toContain('AwsRootRotationSkipped');
      expect(((await h3.v1('GET', 'aws/config/root')).json as Env).data.access_key).toBe(
        k?.AccessKeyId,
      );
      // The next occurrence (04:00) is inside its window and rotates.
      h3.clock.advance(30 * 60_000);
      await h3.settle();
      expect(((await h3.v1('GET', 'aws/config/root')).json as Env).data.access_key).not.toBe(
        k?.AccessKeyId,
      );
    } finally {
      await h3.close();
    }
  });

  it('cross-account static roles manage the user through an assumed role', async () => {
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
          .send(new CreateRoleCommand({ RoleName: 'manager', AssumeRolePolicyDocument: trust }))
      ).Role?.Arn ?? '';
    await h.cloud.iam().send(
      new PutRolePolicyCommand({
        RoleName: 'manager',
        PolicyName: 'all',
        PolicyDocument: ALLOW_ALL,
      }),
    );
    await h.cloud.iam().send(new CreateUserCommand({ UserName: 'remote' }));
    const res = await h.v1('POST', 'aws/static-roles/remote', {
      body: {
        username: 'remote',
        rotation_period: '1h',
        assume_role_arn: arn,
        assume_role_session_name: 'keel',
      },
    });
    expect(res.status).toBe(200);
    expect((res.json as Env).data).toMatchObject({
      assume_role_arn: arn,
      assume_role_session_name: 'keel',
      external_id: '',
    });
    expect(
      await h.works(((await h.v1('GET', 'aws/static-creds/remote')).json as Env).data as never),
    ).toBe(true);
  });

  it('plugin workload identity federation is refused with a clear 400', async () => {
    const res = await h.v1('POST', 'aws/config/root', {
      body: { identity_token_audience: 'sts', role_arn: 'arn:aws:iam::1:role/wif' },
    });
    expect(res.status).toBe(400);
    expect(errorsOf(res)[0]).toMatch(/not supported by Keel/);
  });
});
