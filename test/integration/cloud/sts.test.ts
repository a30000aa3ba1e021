import {
  AttachRolePolicyCommand,
  CreateAccessKeyCommand,
  CreateRoleCommand,
  CreateUserCommand,
  CreateVirtualMFADeviceCommand,
  DeleteUserCommand,
  EnableMFADeviceCommand,
  GetRoleCommand,
  GetUserCommand,
  ListMFADevicesCommand,
  ListUsersCommand,
  PutRolePolicyCommand,
  PutUserPolicyCommand,
} from '@aws-sdk/client-iam';
import {
  AssumeRoleCommand,
  GetCallerIdentityCommand,
  GetFederationTokenCommand,
  GetSessionTokenCommand,
} from '@aws-sdk/client-sts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { totp } from '../../../src/cloud/mfa.js';
import { ManualClock } from '../../../src/core/clock.js';
import { clientsFor, failure } from '../../support/cloud-clients.js';
import type { Creds } from '../../support/cloud-clients.js';
import { startCloud } from '../../support/cloud-server.js';
import type { CloudServer } from '../../support/cloud-server.js';

const ACCOUNT = '123456789012';
const ROLE_ARN = `arn:aws:iam::${ACCOUNT}:role/deploy`;
const allow = (action: string | string[], resource = '*') =>
  JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Action: action, Resource: resource }],
  });
const trust = (condition?: object) =>
  JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Action: 'sts:AssumeRole',
        Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` },
        ...(condition ? { Condition: condition } : {}),
      },
    ],
  });

let clock: ManualClock;
let server: CloudServer;
let root: ReturnType<typeof clientsFor>;
const as = (creds: Creds) => clientsFor(server, clock, creds);
const credsOf = (
  c: { AccessKeyId?: string; SecretAccessKey?: string; SessionToken?: string } | undefined,
): Creds => ({
  accessKeyId: c?.AccessKeyId ?? '',
  secretAccessKey: c?.SecretAccessKey ?? '',
  ...(c?.SessionToken ? { sessionToken: c.SessionToken } : {}),
});

beforeEach(async () => {
  clock = new ManualClock(Date.now());
  server = await startCloud(clock);
  root = as(server.root);
  await root.iam.send(
    new CreateRoleCommand({
      RoleName: 'deploy',
      AssumeRolePolicyDocument: trust(),
      MaxSessionDuration: 7200,
    }),
  );
  await root.iam.send(
    new PutRolePolicyCommand({
      RoleName: 'deploy',
      PolicyName: 'iam-read',
      PolicyDocument: allow(['iam:Get*', 'iam:List*']),
    }),
  );
});
afterEach(async () => {
  await server.close();
});

describe('STS through @aws-sdk/client-sts', () => {
  it('assumes a role whose credentials authenticate until they expire', async () => {
    const role = await root.iam.send(new GetRoleCommand({ RoleName: 'deploy' }));
    expect(role.Role).toMatchObject({ Arn: ROLE_ARN, MaxSessionDuration: 7200 });
    expect(role.Role?.RoleId).toMatch(/^AROA[A-Z0-9]{17}$/);
    const out = await root.sts.send(
      new AssumeRoleCommand({
        RoleArn: ROLE_ARN,
        RoleSessionName: 'ci-run_1@x',
        DurationSeconds: 900,
        Tags: [{ Key: 'k', Value: 'v' }],
      }),
    );
    expect(out.Credentials?.AccessKeyId).toMatch(/^ASIA[A-Z0-9]{16}$/);
    expect(out.Credentials?.Expiration?.getTime()).toBe(clock.now().getTime() + 900_000);
    expect(out.AssumedRoleUser).toEqual({
      AssumedRoleId: `${role.Role?.RoleId}:ci-run_1@x`,
      Arn: `arn:aws:sts::${ACCOUNT}:assumed-role/deploy/ci-run_1@x`,
    });
    const session = as(credsOf(out.Credentials));
    expect(await session.sts.send(new GetCallerIdentityCommand({}))).toMatchObject({
      Arn: out.AssumedRoleUser?.Arn,
      UserId: out.AssumedRoleUser?.AssumedRoleId,
      Account: ACCOUNT,
    });
    // The role's own policies apply: it may read IAM but not write it.
    expect((await session.iam.send(new ListUsersCommand({}))).Users?.length).toBe(1);
    expect((await failure(session.iam.send(new CreateUserCommand({ UserName: 'x' })))).code).toBe(
      'AccessDenied',
    );

    const wrongToken = as({ ...credsOf(out.Credentials), sessionToken: 'forged' });
    expect(await failure(wrongToken.sts.send(new GetCallerIdentityCommand({})))).toMatchObject({
      code: 'InvalidClientTokenId',
      status: 403,
    });
    clock.advance(900_000);
    expect(
      await failure(as(credsOf(out.Credentials)).sts.send(new GetCallerIdentityCommand({}))),
    ).toMatchObject({
      code: 'ExpiredToken',
      status: 403,
      message: 'The security token included in the request is expired',
    });
    // A day after expiry the credentials are forgotten once new ones are issued.
    clock.advance(86_400_001);
    await as(server.root).sts.send(
      new AssumeRoleCommand({ RoleArn: ROLE_ARN, RoleSessionName: 'later' }),
    );
    expect(
      (await failure(as(credsOf(out.Credentials)).sts.send(new GetCallerIdentityCommand({})))).code,
    ).toBe('InvalidClientTokenId');
  });

  it('narrows an assumed role with session policies (Policy and PolicyArns)', async () => {
    const out = await root.sts.send(
      new AssumeRoleCommand({
        RoleArn: ROLE_ARN,
        RoleSessionName: 'narrow',
        Policy: allow('iam:GetRole'),
      }),
    );
    expect(out.PackedPolicySize).toBeGreaterThan(0);
    const s = as(credsOf(out.Credentials));
    expect((await s.iam.send(new GetRoleCommand({ RoleName: 'deploy' }))).Role?.RoleName).toBe(
      'deploy',
    );
    expect((await failure(s.iam.send(new ListUsersCommand({})))).code).toBe('AccessDenied');

    await root.iam.send(
      new AttachRolePolicyCommand({
        RoleName: 'deploy',
        PolicyArn: 'arn:aws:iam::aws:policy/IAMFullAccess',
      }),
    );
    const viaArn = await root.sts.send(
      new AssumeRoleCommand({
        RoleArn: ROLE_ARN,
        RoleSessionName: 'arns',
        PolicyArns: [{ arn: 'arn:aws:iam::aws:policy/IAMReadOnlyAccess' }],
      }),
    );
    const t = as(credsOf(viaArn.Credentials));
    expect((await t.iam.send(new ListUsersCommand({}))).Users).toBeDefined();
    expect((await failure(t.iam.send(new CreateUserCommand({ UserName: 'y' })))).code).toBe(
      'AccessDenied',
    );
  });

  it('validates AssumeRole: existence, durations, session names, external id, identity policy', async () => {
    const bad = (input: Partial<ConstructorParameters<typeof AssumeRoleCommand>[0]>) =>
      failure(
        root.sts.send(
          new AssumeRoleCommand({ RoleArn: ROLE_ARN, RoleSessionName: 'ok', ...input }),
        ),
      );
    expect(await bad({ RoleArn: `arn:aws:iam::${ACCOUNT}:role/missing` })).toMatchObject({
      code: 'AccessDenied',
      status: 403,
    });
    expect(await bad({ DurationSeconds: 899 })).toMatchObject({
      code: 'ValidationError',
      status: 400,
      message:
        "1 validation error detected: Value '899' at 'durationSeconds' failed to satisfy constraint: Member must have value greater than or equal to 900",
    });
    expect(await bad({ DurationSeconds: 43201 })).toMatchObject({ code: 'ValidationError' });
    expect((await bad({ DurationSeconds: 7201 })).message).toMatch(
      /exceeds the MaxSessionDuration set for this role/,
    );
    expect(
      (
        await root.sts.send(
          new AssumeRoleCommand({
            RoleArn: ROLE_ARN,
            RoleSessionName: 'ok',
            DurationSeconds: 7200,
          }),
        )
      ).Credentials,
    ).toBeDefined();
    expect(await bad({ RoleSessionName: 'a' })).toMatchObject({
      code: 'ValidationError',
      message:
        "1 validation error detected: Value 'a' at 'roleSessionName' failed to satisfy constraint: Member must have length greater than or equal to 2",
    });
    expect(await bad({ RoleSessionName: 'x'.repeat(65) })).toMatchObject({
      code: 'ValidationError',
      message: expect.stringMatching(/'roleSessionName' .*less than or equal to 64$/) as string,
    });
    expect(await bad({ RoleSessionName: 'has space' })).toMatchObject({
      code: 'ValidationError',
      message:
        "1 validation error detected: Value 'has space' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]*",
    });
    expect(await bad({ Policy: '{"nope"' })).toMatchObject({
      code: 'MalformedPolicyDocumentException',
      status: 400,
    });

    await root.iam.send(
      new CreateRoleCommand({
        RoleName: 'partner',
        AssumeRolePolicyDocument: trust({ StringEquals: { 'sts:ExternalId': 'abc123' } }),
      }),
    );
    const partner = `arn:aws:iam::${ACCOUNT}:role/partner`;
    expect(await bad({ RoleArn: partner })).toMatchObject({ code: 'AccessDenied' });
    expect(await bad({ RoleArn: partner, ExternalId: 'wrong' })).toMatchObject({
      code: 'AccessDenied',
    });
    const withId = await root.sts.send(
      new AssumeRoleCommand({ RoleArn: partner, RoleSessionName: 'ss', ExternalId: 'abc123' }),
    );
    expect(withId.AssumedRoleUser?.Arn).toBe(`arn:aws:sts::${ACCOUNT}:assumed-role/partner/ss`);

    // A user without sts:AssumeRole in its policies is refused even when the trust policy allows the account.
    await root.iam.send(new CreateUserCommand({ UserName: 'plain' }));
    const k = await root.iam.send(new CreateAccessKeyCommand({ UserName: 'plain' }));
    const plain = as(credsOf(k.AccessKey));
    expect(
      (
        await failure(
          plain.sts.send(new AssumeRoleCommand({ RoleArn: ROLE_ARN, RoleSessionName: 'p' })),
        )
      ).code,
    ).toBe('AccessDenied');
    // Role chaining is capped at one hour.
    await root.iam.send(
      new PutRolePolicyCommand({
        RoleName: 'deploy',
        PolicyName: 'chain',
        PolicyDocument: allow('sts:AssumeRole'),
      }),
    );
    const first = await root.sts.send(
      new AssumeRoleCommand({ RoleArn: ROLE_ARN, RoleSessionName: 'one' }),
    );
    const chained = as(credsOf(first.Credentials));
    expect(
      (
        await failure(
          chained.sts.send(
            new AssumeRoleCommand({
              RoleArn: ROLE_ARN,
              RoleSessionName: 'two',
              DurationSeconds: 3601,
            }),
          ),
        )
      ).message,
    ).toMatch(/role chaining/);
  });

  it('issues federation tokens limited to their policy, from long-term keys only', async () => {
    const out = await root.sts.send(
      new GetFederationTokenCommand({
        Name: 'bob',
        Policy: allow('iam:ListUsers'),
        DurationSeconds: 129600,
      }),
    );
    expect(out.FederatedUser).toEqual({
      FederatedUserId: `${ACCOUNT}:bob`,
      Arn: `arn:aws:sts::${ACCOUNT}:federated-user/bob`,
    });
    expect(out.Credentials?.Expiration?.getTime()).toBe(clock.now().getTime() + 129_600_000);
    const fed = as(credsOf(out.Credentials));
    expect((await fed.sts.send(new GetCallerIdentityCommand({}))).Arn).toBe(
      `arn:aws:sts::${ACCOUNT}:federated-user/bob`,
    );
    expect((await fed.iam.send(new ListUsersCommand({}))).Users).toBeDefined();
    expect((await failure(fed.iam.send(new GetUserCommand({ UserName: 'keel-root' })))).code).toBe(
      'AccessDenied',
    );
    expect(
      (
        await failure(
          fed.sts.send(new GetFederationTokenCommand({ Name: 'again', Policy: allow('*') })),
        )
      ).message,
    ).toBe('Cannot call GetFederationToken with session credentials');

    const none = await root.sts.send(new GetFederationTokenCommand({ Name: 'nopolicy' }));
    expect(
      (await failure(as(credsOf(none.Credentials)).iam.send(new ListUsersCommand({})))).code,
    ).toBe('AccessDenied');
    expect(
      await failure(root.sts.send(new GetFederationTokenCommand({ Name: 'x' }))),
    ).toMatchObject({ code: 'ValidationError', status: 400 });
    expect(
      await failure(root.sts.send(new GetFederationTokenCommand({ Name: 'x'.repeat(33) }))),
    ).toMatchObject({
      code: 'ValidationError',
      message: expect.stringMatching(/at 'name' .*less than or equal to 32$/) as string,
    });
    expect(
      await failure(root.sts.send(new GetFederationTokenCommand({ Name: 'bad name' }))),
    ).toMatchObject({
      code: 'ValidationError',
      message: expect.stringMatching(/at 'name' .*pattern: \[\\w\+=,\.@-\]\*$/) as string,
    });
    expect(
      await failure(
        root.sts.send(new GetFederationTokenCommand({ Name: 'okname', DurationSeconds: 129601 })),
      ),
    ).toMatchObject({ code: 'ValidationError' });
    expect(
      await failure(
        root.sts.send(
          new GetFederationTokenCommand({
            Name: 'okname',
            PolicyArns: [{ arn: 'arn:aws:iam::aws:policy/Nope' }],
          }),
        ),
      ),
    ).toMatchObject({ code: 'NoSuchEntity', status: 404 });
  });

  it('checks GetSessionToken MFA codes against the user’s virtual MFA device', async () => {
    await root.iam.send(new CreateUserCommand({ UserName: 'mfa-user' }));
    await root.iam.send(
      new PutUserPolicyCommand({
        UserName: 'mfa-user',
        PolicyName: 'p',
        PolicyDocument: allow('iam:GetUser'),
      }),
    );
    const device = await root.iam.send(
      new CreateVirtualMFADeviceCommand({ VirtualMFADeviceName: 'mfa-user' }),
    );
    const serial = device.VirtualMFADevice?.SerialNumber ?? '';
    expect(serial).toBe(`arn:aws:iam::${ACCOUNT}:mfa/mfa-user`);
    const seed = Buffer.from(
      device.VirtualMFADevice?.Base32StringSeed ?? new Uint8Array(),
    ).toString();
    expect(seed).toMatch(/^[A-Z2-7]{40}$/);
    const now = clock.now();
    expect(
      await failure(
        root.iam.send(
          new EnableMFADeviceCommand({
            UserName: 'mfa-user',
            SerialNumber: serial,
            AuthenticationCode1: '000000',
            AuthenticationCode2: '000001',
          }),
        ),
      ),
    ).toMatchObject({ code: 'InvalidAuthenticationCodeException', status: 403 });
    await root.iam.send(
      new EnableMFADeviceCommand({
        UserName: 'mfa-user',
        SerialNumber: serial,
        AuthenticationCode1: totp(seed, now, -1),
        AuthenticationCode2: totp(seed, now),
      }),
    );
    expect(
      (await root.iam.send(new ListMFADevicesCommand({ UserName: 'mfa-user' }))).MFADevices?.[0]
        ?.SerialNumber,
    ).toBe(serial);
    expect(
      (await failure(root.iam.send(new DeleteUserCommand({ UserName: 'mfa-user' })))).message,
    ).toBe('Cannot delete entity, must delete policies first.');

    const key = await root.iam.send(new CreateAccessKeyCommand({ UserName: 'mfa-user' }));
    const user = as(credsOf(key.AccessKey));
    clock.advance(60_000);
    const wrong = totp(seed, clock.now()) === '123456' ? '654321' : '123456';
    expect(
      await failure(
        user.sts.send(new GetSessionTokenCommand({ SerialNumber: serial, TokenCode: wrong })),
      ),
    ).toMatchObject({
      code: 'AccessDenied',
      status: 403,
      message: 'MultiFactorAuthentication failed with invalid MFA one time pass code.',
    });
    expect(
      (
        await failure(
          as(credsOf(key.AccessKey)).sts.send(
            new GetSessionTokenCommand({
              SerialNumber: `arn:aws:iam::${ACCOUNT}:mfa/other`,
              TokenCode: '123456',
            }),
          ),
        )
      ).code,
    ).toBe('AccessDenied');
    const ok = await as(credsOf(key.AccessKey)).sts.send(
      new GetSessionTokenCommand({
        SerialNumber: serial,
        TokenCode: totp(seed, clock.now()),
        DurationSeconds: 900,
      }),
    );
    const session = as(credsOf(ok.Credentials));
    expect((await session.sts.send(new GetCallerIdentityCommand({}))).Arn).toBe(
      `arn:aws:iam::${ACCOUNT}:user/mfa-user`,
    );
    expect((await session.iam.send(new GetUserCommand({}))).User?.UserName).toBe('mfa-user');
    expect((await failure(session.sts.send(new GetSessionTokenCommand({})))).message).toBe(
      'Cannot call GetSessionToken with session credentials',
    );
    expect(
      await failure(root.sts.send(new GetSessionTokenCommand({ DurationSeconds: 899 }))),
    ).toMatchObject({ code: 'ValidationError' });
  });
});
