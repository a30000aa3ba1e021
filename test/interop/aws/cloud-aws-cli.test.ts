import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/core/clock.js';
import { awsCliEnv, type Creds } from '../../support/cloud-clients.js';
import { startCloud } from '../../support/cloud-server.js';
import type { CloudServer } from '../../support/cloud-server.js';

const run = promisify(execFile);
const AWS = '/usr/bin/aws';
const ACCOUNT = '123456789012';

let server: CloudServer;

interface CliResult {
  ok: boolean;
  json: Record<string, unknown>;
  stderr: string;
}

/**
 * Runs the real aws CLI against the cloud with only the given credentials: no config or shared
 * credentials files, an explicit endpoint and region, JSON output and a timeout. The CLI signs
 * with the real time, so the cloud under test runs on the system clock.
 */
async function aws(creds: Creds, service: 'iam' | 'sts', ...args: string[]): Promise<CliResult> {
  const env = awsCliEnv(creds);
  const endpoint = service === 'iam' ? server.iamEndpoint : server.stsEndpoint;
  const argv = [
    service,
    ...args,
    '--endpoint-url',
    endpoint,
    '--region',
    'us-east-1',
    '--output',
    'json',
  ];
  try {
    const { stdout, stderr } = await run(AWS, argv, { env, timeout: 30_000 });
    return {
      ok: true,
      json: stdout.trim() ? (JSON.parse(stdout) as Record<string, unknown>) : {},
      stderr,
    };
  } catch (e) {
    const err = e as { stderr?: string };
    return { ok: false, json: {}, stderr: err.stderr ?? String(e) };
  }
}

const keyOf = (r: CliResult): Creds => {
  const k = r.json.AccessKey as { AccessKeyId: string; SecretAccessKey: string };
  return { accessKeyId: k.AccessKeyId, secretAccessKey: k.SecretAccessKey };
};

beforeAll(async () => {
  server = await startCloud(systemClock, ':memory:', 'keel');
});
afterAll(async () => {
  await server.close();
});

describe('the aws CLI against the cloud', () => {
  it('has the aws CLI to drive (.ci/run installs Debian awscli)', () => {
    expect(existsSync(AWS), `${AWS} is missing: install Debian's awscli`).toBe(true);
  });

  it('manages users and keys with the bootstrap keys, and deleted or rotated keys stop working', async () => {
    const root = server.root;
    const me = await aws(root, 'sts', 'get-caller-identity');
    expect(me.json).toMatchObject({
      Account: ACCOUNT,
      Arn: `arn:aws:iam::${ACCOUNT}:user/keel-root`,
    });

    const user = await aws(root, 'iam', 'create-user', '--user-name', 'cli-user', '--path', '/ci/');
    expect(user.json.User).toMatchObject({
      UserName: 'cli-user',
      Path: '/ci/',
      Arn: `arn:aws:iam::${ACCOUNT}:user/ci/cli-user`,
    });
    const [k1, k2] = await Promise.all([
      aws(root, 'iam', 'create-access-key', '--user-name', 'cli-user'),
      aws(
        root,
        'iam',
        'attach-user-policy',
        '--user-name',
        'cli-user',
        '--policy-arn',
        'arn:aws:iam::aws:policy/IAMReadOnlyAccess',
      ),
    ]);
    expect(k2.ok).toBe(true);
    const first = keyOf(k1);
    expect(first.accessKeyId).toMatch(/^AKIA[A-Z0-9]{16}$/);
    // The CLI's start-up dominates; independent calls run side by side.
    const [listed, asUser] = await Promise.all([
      aws(root, 'iam', 'list-access-keys', '--user-name', 'cli-user'),
      aws(first, 'sts', 'get-caller-identity'),
    ]);
    expect(listed.json.AccessKeyMetadata).toEqual([
      expect.objectContaining({
        UserName: 'cli-user',
        AccessKeyId: first.accessKeyId,
        Status: 'Active',
      }),
    ]);
    expect(asUser.json.Arn).toBe(`arn:aws:iam::${ACCOUNT}:user/ci/cli-user`);

    // Rotate: a second key, then the first is deleted and no longer authenticates.
    const second = keyOf(await aws(root, 'iam', 'create-access-key', '--user-name', 'cli-user'));
    expect(
      (
        await aws(
          root,
          'iam',
          'delete-access-key',
          '--user-name',
          'cli-user',
          '--access-key-id',
          first.accessKeyId,
        )
      ).ok,
    ).toBe(true);
    const [stale, fresh, wrongSecret] = await Promise.all([
      aws(first, 'sts', 'get-caller-identity'),
      aws(second, 'sts', 'get-caller-identity'),
      aws(
        { ...second, secretAccessKey: 'not-the-secret-at-all-0000000000000000000' },
        'sts',
        'get-caller-identity',
      ),
    ]);
    expect(stale.ok).toBe(false);
    expect(stale.stderr).toMatch(
      /An error occurred \(InvalidClientTokenId\) when calling the GetCallerIdentity operation.*: The security token included in the request is invalid\./,
    );
    expect(fresh.json.Arn).toBe(`arn:aws:iam::${ACCOUNT}:user/ci/cli-user`);
    expect(wrongSecret.stderr).toContain('(SignatureDoesNotMatch)');
  }, 120_000);

  it('denies a user limited to iam:GetUser everything else, and assumes a role', async () => {
    const root = server.root;
    await aws(root, 'iam', 'create-user', '--user-name', 'getter');
    const [key] = await Promise.all([
      aws(root, 'iam', 'create-access-key', '--user-name', 'getter'),
      aws(
        root,
        'iam',
        'put-user-policy',
        '--user-name',
        'getter',
        '--policy-name',
        'only-get',
        '--policy-document',
        '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"iam:GetUser","Resource":"*"}]}',
      ),
      aws(
        root,
        'iam',
        'create-role',
        '--role-name',
        'cli-role',
        '--max-session-duration',
        '7200',
        '--assume-role-policy-document',
        `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sts:AssumeRole","Principal":{"AWS":"arn:aws:iam::${ACCOUNT}:root"}}]}`,
      ),
    ]);
    const getter = keyOf(key);
    const [self, create, role] = await Promise.all([
      aws(getter, 'iam', 'get-user'),
      aws(getter, 'iam', 'create-user', '--user-name', 'not-allowed'),
      aws(root, 'iam', 'get-role', '--role-name', 'cli-role'),
    ]);
    expect((self.json.User as { UserName: string }).UserName).toBe('getter');
    expect(create.ok).toBe(false);
    expect(create.stderr).toMatch(
      /An error occurred \(AccessDenied\) when calling the CreateUser operation.*: User: arn:aws:iam::123456789012:user\/getter is not authorized to perform: iam:CreateUser/,
    );

    const assumed = await aws(
      root,
      'sts',
      'assume-role',
      '--role-arn',
      `arn:aws:iam::${ACCOUNT}:role/cli-role`,
      '--role-session-name',
      'cli-session',
      '--duration-seconds',
      '7200',
    );
    const c = assumed.json.Credentials as {
      AccessKeyId: string;
      SecretAccessKey: string;
      SessionToken: string;
    };
    expect(c.AccessKeyId).toMatch(/^ASIA/);
    expect(assumed.json.AssumedRoleUser).toMatchObject({
      Arn: `arn:aws:sts::${ACCOUNT}:assumed-role/cli-role/cli-session`,
    });
    const who = await aws(
      {
        accessKeyId: c.AccessKeyId,
        secretAccessKey: c.SecretAccessKey,
        sessionToken: c.SessionToken,
      },
      'sts',
      'get-caller-identity',
    );
    expect(who.json.Arn).toBe(`arn:aws:sts::${ACCOUNT}:assumed-role/cli-role/cli-session`);
    expect(role.json.Role).toMatchObject({
      MaxSessionDuration: 7200,
      AssumeRolePolicyDocument: { Version: '2012-10-17' },
    });
  }, 120_000);
});
