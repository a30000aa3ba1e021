import {
  CreateAccessKeyCommand,
  CreateGroupCommand,
  CreateUserCommand,
  PutUserPolicyCommand,
  GetUserCommand,
  ListAccessKeysCommand,
  ListUsersCommand,
} from '@aws-sdk/client-iam';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemMetadata } from '../../../src/core/events.js';
import type { IntentEvent } from '../../../src/secrets/aws/intents.js';
import { intentDecider, intentStream } from '../../../src/secrets/aws/intents.js';
import { startAws } from '../../support/aws.js';
import type { AwsHarness } from '../../support/aws.js';
import type { IamHook } from '../../support/iam-hook.js';

/**
 * Issue 14 §7: a process killed between an IAM call and the event that records its result must
 * leave nothing at the provider that no lease or role will remove. The hook stops the engine at
 * one step (before a call is sent, or after it was answered, the answer lost) and keeps every
 * later IAM call failing, as a dead process makes none; the daemon then restarts on the same
 * data directory.
 */

type Phase = 'before' | 'after';
type Env = { data: Record<string, string>; lease_id: string };

let h: AwsHarness;
let crashAt: { command: string; phase: Phase } | null = null;
let dead = false;
const hook: IamHook = (command, phase) => {
  if (dead) throw new Error('the process is gone');
  if (crashAt?.command === command && crashAt.phase === phase) {
    dead = true;
    throw new Error(`killed ${phase} ${command}`);
  }
};

beforeEach(async () => {
  crashAt = null;
  dead = false;
  h = await startAws({ clock: undefined, iamHook: hook });
});
afterEach(() => h.close());

/** The daemon comes back on the same data directory; its start-up pass runs. */
async function restart(): Promise<void> {
  crashAt = null;
  dead = false;
  await h.restart();
  await h.settle();
}

const cloudUsers = async (): Promise<string[]> =>
  ((await h.cloud.iam().send(new ListUsersCommand({}))).Users ?? [])
    .map((u) => u.UserName ?? '')
    .filter((n) => n !== 'keel-root')
    .sort();
const leasedUsers = (): string[] =>
  (
    h.app.core.db
      .prepare("SELECT username FROM aws_leases WHERE kind = 'iam_user' ORDER BY username")
      .all() as { username: string }[]
  ).map((r) => r.username);
const openIntents = (): number =>
  (h.app.core.db.prepare('SELECT COUNT(*) AS n FROM aws_cloud_intents').get() as { n: number }).n;
const keysOf = async (user: string): Promise<string[]> =>
  (
    (await h.cloud.iam().send(new ListAccessKeysCommand({ UserName: user }))).AccessKeyMetadata ??
    []
  )
    .map((k) => k.AccessKeyId ?? '')
    .sort();

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});

describe('iam_user credentials', () => {
  beforeEach(async () => {
    await h.cloud.iam().send(new CreateGroupCommand({ GroupName: 'crash-group' }));
    const role = await h.v1('POST', 'aws/roles/dev', {
      body: {
        credential_type: 'iam_user',
        policy_arns: ['arn:aws:iam::aws:policy/ReadOnlyAccess'],
        policy_document: ALLOW_ALL,
        iam_groups: ['crash-group'],
        iam_tags: ['team=a'],
      },
    });
    expect(role.status).toBe(204);
  });

  const steps = [
    'CreateUser',
    'AttachUserPolicy',
    'PutUserPolicy',
    'AddUserToGroup',
    'TagUser',
    'CreateAccessKey',
  ];
  const cases = steps.flatMap((c) => (['before', 'after'] as const).map((p) => [c, p] as const));

  it.each(cases)(
    'a process killed %s … (%s) leaves no IAM user without a lease',
    async (command, phase) => {
      crashAt = { command, phase };
      const res = await h.v1('GET', 'aws/creds/dev');
      expect(res.status).not.toBe(200);
      expect(dead).toBe(true);
      // The crash left its mark: once CreateUser went through, the user is there, unleased.
      const madeUser = !(command === 'CreateUser' && phase === 'before');
      expect((await cloudUsers()).length).toBe(madeUser ? 1 : 0);
      expect(leasedUsers()).toEqual([]);
      expect(openIntents()).toBe(1);

      await restart();
      expect(await cloudUsers()).toEqual([]);
      expect(openIntents()).toBe(0);

      // The engine works again, and what it issues is leased.
      const ok = await h.v1('GET', 'aws/creds/dev');
      expect(ok.status).toBe(200);
      expect(await h.works((ok.json as Env).data as never)).toBe(true);
      expect(await cloudUsers()).toEqual(leasedUsers());
      expect(openIntents()).toBe(0);
    },
  );

  it('finishes an intent whose lease was recorded before the process died', async () => {
    const ok = await h.v1('GET', 'aws/creds/dev');
    expect(ok.status).toBe(200);
    const [username] = leasedUsers();
    const leaseId = (ok.json as Env).lease_id;
    // The process died after LeaseIssued, before the intent was settled.
    h.app.core.handler.handleSync(
      intentStream('intent-dangling'),
      intentDecider,
      (): IntentEvent[] => [
        {
          type: 'AwsCloudIntentRecorded',
          data: {
            intentId: 'intent-dangling',
            mount: { accessor: 'x', path: 'aws/' },
            action: { kind: 'iam_user', username: username ?? '', leaseId },
            recordedAt: h.clock.now().toISOString(),
          },
        },
      ],
      systemMetadata('test'),
    );
    expect(openIntents()).toBe(1);
    await restart();
    expect(openIntents()).toBe(0);
    expect(await cloudUsers()).toEqual([username]);
    expect(await h.works((ok.json as Env).data as never)).toBe(true);
  });

  it('leaves a user older than the intent alone when CreateUser was refused for its name', async () => {
    const role = await h.v1('POST', 'aws/roles/fixed', {
      body: {
        credential_type: 'iam_user',
        policy_document: ALLOW_ALL,
        // A template that always yields the same name, which someone else already uses.
      },
    });
    expect(role.status).toBe(204);
    await h.v1('POST', 'aws/config/root', {
      body: {
        access_key: h.cloud.root.accessKeyId,
        secret_key: h.cloud.root.secretAccessKey,
        region: 'us-east-1',
        username_template: 'taken',
      },
    });
    await h.cloud.iam().send(new CreateUserCommand({ UserName: 'taken' }));
    h.clock.advance(10 * 60_000);
    const res = await h.v1('GET', 'aws/creds/fixed');
    expect(res.status).toBe(400);
    expect(openIntents()).toBe(0);
    // Killed during CreateUser (answer lost): recovery must not take the older user for its own.
    crashAt = { command: 'CreateUser', phase: 'before' };
    expect((await h.v1('GET', 'aws/creds/fixed')).status).not.toBe(200);
    expect(openIntents()).toBe(1);
    await restart();
    expect(openIntents()).toBe(0);
    const kept = await h.cloud.iam().send(new GetUserCommand({ UserName: 'taken' }));
    expect(kept.User?.UserName).toBe('taken');
  });
});

describe('static-role keys', () => {
  const creds = async () =>
    ((await h.v1('GET', 'aws/static-creds/svc')).json as Env).data as unknown as {
      access_key: string;
      secret_key: string;
    };

  beforeEach(async () => {
    await h.cloud.iam().send(new CreateUserCommand({ UserName: 'svc' }));
  });

  it('a process killed after the adoption key was made leaves no key the role does not serve', async () => {
    crashAt = { command: 'CreateAccessKey', phase: 'after' };
    const res = await h.v1('POST', 'aws/static-roles/svc', {
      body: { username: 'svc', rotation_period: '1h' },
    });
    expect(res.status).toBe(500);
    expect(await keysOf('svc')).toHaveLength(1);
    await restart();
    expect(openIntents()).toBe(0);
    expect(await keysOf('svc')).toEqual([]);
    // Recovery removed the lost key; the schedule then resumes the adoption with a new one.
    h.clock.advance(10 * 60_000);
    await h.settle();
    const served = await creds();
    expect(await keysOf('svc')).toEqual([served.access_key]);
    expect(await h.works(served)).toBe(true);
  });

  const cases = [
    ['ListAccessKeys', 'before'],
    ['DeleteAccessKey', 'before'],
    ['DeleteAccessKey', 'after'],
    ['CreateAccessKey', 'before'],
    ['CreateAccessKey', 'after'],
  ] as const;

  it.each(cases)(
    'a rotation killed %s (%s) leaves only keys the role knows, and the next one completes',
    async (command, phase) => {
      expect(
        (
          await h.v1('POST', 'aws/static-roles/svc', {
            body: { username: 'svc', rotation_period: '1h' },
          })
        ).status,
      ).toBe(200);
      const first = await creds();
      h.clock.advance(3600_000);
      await h.settle();
      const served = await creds();
      expect(served.access_key).not.toBe(first.access_key);
      expect(await keysOf('svc')).toEqual([first.access_key, served.access_key].sort());

      crashAt = { command, phase };
      h.clock.advance(3600_000);
      await h.settle();
      expect(dead).toBe(true);
      await restart();
      expect(openIntents()).toBe(0);
      const left = await keysOf('svc');
      expect(left).toContain(served.access_key);
      for (const k of left) expect([first.access_key, served.access_key]).toContain(k);
      expect(await h.works(served)).toBe(true);

      // The retry rotates for real: the role serves a new key, the user holds at most two.
      h.clock.advance(3600_000);
      await h.settle();
      const next = await creds();
      expect(next.access_key).not.toBe(served.access_key);
      expect(await h.works(next)).toBe(true);
      expect((await keysOf('svc')).length).toBeLessThanOrEqual(2);
      expect(openIntents()).toBe(0);
    },
  );
});

describe('root rotation', () => {
  const rootKey = async () =>
    ((await h.v1('GET', 'aws/config/root')).json as Env).data.access_key ?? '';

  beforeEach(async () => {
    // Keel's own IAM user, so rotating it leaves the test's view of the cloud alone.
    const iam = h.cloud.iam();
    await iam.send(new CreateUserCommand({ UserName: 'keel-admin' }));
    await iam.send(
      new PutUserPolicyCommand({
        UserName: 'keel-admin',
        PolicyName: 'all',
        PolicyDocument: ALLOW_ALL,
      }),
    );
    const made = await iam.send(new CreateAccessKeyCommand({ UserName: 'keel-admin' }));
    const root = await h.v1('POST', 'aws/config/root', {
      body: {
        access_key: made.AccessKey?.AccessKeyId,
        secret_key: made.AccessKey?.SecretAccessKey,
        region: 'us-east-1',
      },
    });
    expect(root.status).toBe(204);
    const role = await h.v1('POST', 'aws/roles/dev', {
      body: { credential_type: 'iam_user', policy_document: ALLOW_ALL },
    });
    expect(role.status).toBe(204);
  });

  const cases = [
    ['ListAccessKeys', 'before'],
    ['CreateAccessKey', 'before'],
    ['CreateAccessKey', 'after'],
    ['DeleteAccessKey', 'before'],
    ['DeleteAccessKey', 'after'],
  ] as const;

  it.each(cases)(
    'a rotate-root killed %s (%s) leaves the user exactly the key Keel holds',
    async (command, phase) => {
      const before = await rootKey();
      crashAt = { command, phase };
      expect((await h.v1('POST', 'aws/config/rotate-root')).status).toBe(500);
      expect(dead).toBe(true);
      await restart();
      expect(openIntents()).toBe(0);
      const held = await rootKey();
      expect(await keysOf('keel-admin')).toEqual([held]);
      // Rotated when the new key was recorded before the crash, else still the old one.
      expect(held === before).toBe(command !== 'DeleteAccessKey');
      // The engine still reaches IAM with the key it holds, and rotates again.
      expect((await h.v1('GET', 'aws/creds/dev')).status).toBe(200);
      expect((await h.v1('POST', 'aws/config/rotate-root')).status).toBe(200);
      expect(await keysOf('keel-admin')).toEqual([await rootKey()]);
    },
  );
});
