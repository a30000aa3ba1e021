import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CreateGroupCommand,
  CreatePolicyCommand,
  CreateRoleCommand,
  CreateUserCommand,
  GetUserCommand,
  ListAccessKeysCommand,
  PutGroupPolicyCommand,
  PutUserPolicyCommand,
} from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import {
  CloudStepError,
  createIamUser,
  deleteIamUser,
  groupPolicies,
} from '../../../src/secrets/aws/cloud-calls.js';
import {
  assumeRole,
  getFederationToken,
  getSessionToken,
} from '../../../src/secrets/aws/sts-calls.js';
import { createOwnKey, rotateStaticKey } from '../../../src/secrets/aws/key-calls.js';
import { sdkClientFactory } from '../../../src/secrets/aws/clients.js';
import { startTestCloud } from '../../support/aws-cloud.js';
import type { TestCloud } from '../../support/aws-cloud.js';

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});
let c: TestCloud;
let policyArn: string;
let roleArn: string;

beforeAll(async () => {
  c = await startTestCloud();
  const iam = c.iam();
  policyArn =
    (await iam.send(new CreatePolicyCommand({ PolicyName: 'all', PolicyDocument: ALLOW_ALL })))
      .Policy?.Arn ?? '';
  await iam.send(new CreateGroupCommand({ GroupName: 'devs' }));
  await iam.send(
    new PutGroupPolicyCommand({
      GroupName: 'devs',
      PolicyName: 'read',
      PolicyDocument: JSON.stringify({
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: 'sts:GetCallerIdentity', Resource: '*' }],
      }),
    }),
  );
  const trust = JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Principal: { AWS: `arn:aws:iam::${c.cloud.accountId}:root` },
        Action: 'sts:AssumeRole',
      },
    ],
  });
  roleArn =
    (
      await iam.send(
        new CreateRoleCommand({ RoleName: 'deployer', AssumeRolePolicyDocument: trust }),
      )
    ).Role?.Arn ?? '';
});
afterAll(() => c.close());

const whoami = (key: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }) =>
  c.sts(key).send(new GetCallerIdentityCommand({}));

describe('IAM user credentials', () => {
  it('creates a user with policies, groups and tags whose key authenticates, then removes it completely', async () => {
    const iam = c.iam();
    const key = await createIamUser(iam, {
      username: 'vault-root-r-1',
      path: '/keel/',
      permissionsBoundaryArn: '',
      policyArns: [policyArn],
      policyDocument: ALLOW_ALL,
      policyName: 'r',
      groups: ['devs'],
      tags: { team: 'a' },
    });
    expect(key.accessKeyId).toMatch(/^AKIA/);
    expect((await whoami(key)).Arn).toBe(
      `arn:aws:iam::${c.cloud.accountId}:user/keel/vault-root-r-1`,
    );
    await deleteIamUser(iam, 'vault-root-r-1');
    await expect(whoami(key)).rejects.toMatchObject({ name: 'InvalidClientTokenId' });
    await expect(
      iam.send(new GetUserCommand({ UserName: 'vault-root-r-1' })),
    ).rejects.toMatchObject({ name: 'NoSuchEntityException' });
    await expect(deleteIamUser(iam, 'vault-root-r-1')).resolves.toBeUndefined();
  });

  it('names the failing step', async () => {
    const err = await createIamUser(c.iam(), {
      username: 'u2',
      path: '/',
      permissionsBoundaryArn: '',
      policyArns: ['arn:aws:iam::aws:policy/Nope'],
      policyDocument: '',
      policyName: 'r',
      groups: [],
      tags: {},
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudStepError);
    expect((err as CloudStepError).step).toBe('Error attaching user policy');
    await deleteIamUser(c.iam(), 'u2');
  });
});

describe('STS credentials', () => {
  it('assumes a role, gets a federation token and a session token', async () => {
    const sts = c.sts();
    const merged = await groupPolicies(c.iam(), ['devs'], ALLOW_ALL, []);
    expect((JSON.parse(merged.document) as { Statement: unknown[] }).Statement).toHaveLength(2);
    const assumed = await assumeRole(sts, {
      roleArn,
      sessionName: 'ci',
      seconds: 900,
      policy: '',
      policyArns: [],
      externalId: '',
      tags: {},
    });
    expect(assumed.arn).toBe(`arn:aws:sts::${c.cloud.accountId}:assumed-role/deployer/ci`);
    expect((await whoami(assumed)).Arn).toBe(assumed.arn);
    const fed = await getFederationToken(sts, {
      name: 'vault-1-abc',
      seconds: 900,
      policy: ALLOW_ALL,
      policyArns: [],
    });
    expect((await whoami(fed)).Arn).toContain('federated-user/vault-1-abc');
    const session = await getSessionToken(sts, { seconds: 900, serialNumber: '', tokenCode: '' });
    expect(session.sessionToken).not.toBe('');
  });
});

describe('static key rotation', () => {
  it('first key, second key, then always the oldest; never more than two', async () => {
    const iam = c.iam();
    await iam.send(new CreateUserCommand({ UserName: 'app' }));
    const keys = async () =>
      (
        (await iam.send(new ListAccessKeysCommand({ UserName: 'app' }))).AccessKeyMetadata ?? []
      ).map((k) => k.AccessKeyId);
    // Each cycle reports the keys it found before changing anything (its intent's `known`).
    const known: string[][] = [];
    const seen = (k: string[]) => {
      known.push(k);
      return Promise.resolve();
    };
    const a = await rotateStaticKey(iam, 'app', null, seen);
    expect(a.deletedAccessKeyId).toBeNull();
    c.clock.advance(60_000);
    const b = await rotateStaticKey(iam, 'app', a.accessKeyId, seen);
    expect(b.deletedAccessKeyId).toBeNull();
    expect(new Set(await keys())).toEqual(new Set([a.accessKeyId, b.accessKeyId]));
    c.clock.advance(60_000);
    const d = await rotateStaticKey(iam, 'app', b.accessKeyId, seen);
    expect(d.deletedAccessKeyId).toBe(a.accessKeyId);
    expect(known.map((k) => new Set(k))).toEqual([
      new Set(),
      new Set([a.accessKeyId]),
      new Set([a.accessKeyId, b.accessKeyId]),
    ]);
    await expect(whoami(a)).rejects.toMatchObject({ name: 'InvalidClientTokenId' });
    await expect(whoami(b)).resolves.toBeDefined();
    expect(await keys()).toHaveLength(2);
  });
});

describe('root rotation and the client factory', () => {
  it('creates a key for the caller and builds clients from root settings', async () => {
    await c.iam().send(new CreateUserCommand({ UserName: 'admin2' }));
    await c.iam().send(
      new PutUserPolicyCommand({
        UserName: 'admin2',
        PolicyName: 'all',
        PolicyDocument: ALLOW_ALL,
      }),
    );
    const first = await c
      .iam()
      .send(
        new (await import('@aws-sdk/client-iam')).CreateAccessKeyCommand({ UserName: 'admin2' }),
      );
    const key = {
      accessKeyId: first.AccessKey?.AccessKeyId ?? '',
      secretAccessKey: first.AccessKey?.SecretAccessKey ?? '',
    };
    const before: [string, string[]][] = [];
    const created = await createOwnKey(c.iam(key), (user, known) => {
      before.push([user, known]);
      return Promise.resolve();
    });
    expect(created.userName).toBe('admin2');
    // The user's keys are reported before the new one exists.
    expect(before).toEqual([['admin2', [key.accessKeyId]]]);
    const clients = sdkClientFactory({ clock: c.clock })({
      settings: {
        accessKey: created.accessKeyId,
        region: 'eu-west-1',
        iamEndpoint: c.iamEndpoint,
        stsEndpoint: c.stsEndpoint,
        stsRegion: '',
        stsFallbackEndpoints: [],
        stsFallbackRegions: [],
        maxRetries: 0,
        usernameTemplate: '',
        rotationPeriod: 0,
        rotationSchedule: '',
        rotationWindow: 0,
        disableAutomatedRotation: false,
      },
      secretKey: created.secretAccessKey,
    });
    const me = await (await clients.sts()).send(new GetCallerIdentityCommand({}));
    expect(me.Arn).toContain('user/admin2');
  });

  it('falls back to the next STS endpoint that answers', async () => {
    const clients = sdkClientFactory({ clock: c.clock })({
      settings: {
        accessKey: c.root.accessKeyId,
        region: 'us-east-1',
        iamEndpoint: c.iamEndpoint,
        stsEndpoint: 'http://127.0.0.1:9/none',
        stsRegion: '',
        stsFallbackEndpoints: [c.stsEndpoint],
        stsFallbackRegions: ['us-east-1'],
        maxRetries: 0,
        usernameTemplate: '',
        rotationPeriod: 0,
        rotationSchedule: '',
        rotationWindow: 0,
        disableAutomatedRotation: false,
      },
      secretKey: c.root.secretAccessKey,
    });
    const me = await (await clients.sts()).send(new GetCallerIdentityCommand({}));
    expect(me.Arn).toContain('user/keel-root');
  });
});
