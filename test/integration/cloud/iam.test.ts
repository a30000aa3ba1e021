import {
  AddUserToGroupCommand,
  AttachGroupPolicyCommand,
  AttachUserPolicyCommand,
  CreateAccessKeyCommand,
  CreateGroupCommand,
  CreatePolicyCommand,
  CreateRoleCommand,
  CreateUserCommand,
  DeleteGroupCommand,
  DeletePolicyCommand,
  DeleteRoleCommand,
  DeleteRolePolicyCommand,
  GetGroupCommand,
  GetPolicyCommand,
  GetPolicyVersionCommand,
  GetRoleCommand,
  GetRolePolicyCommand,
  ListGroupsCommand,
  ListPoliciesCommand,
  PutRolePolicyCommand,
  DeleteAccessKeyCommand,
  DeleteUserCommand,
  DeleteUserPolicyCommand,
  DetachUserPolicyCommand,
  GetGroupPolicyCommand,
  GetUserCommand,
  GetUserPolicyCommand,
  ListAccessKeysCommand,
  ListAttachedGroupPoliciesCommand,
  ListAttachedUserPoliciesCommand,
  ListGroupPoliciesCommand,
  ListGroupsForUserCommand,
  ListUserPoliciesCommand,
  ListUsersCommand,
  ListUserTagsCommand,
  PutGroupPolicyCommand,
  PutUserPolicyCommand,
  RemoveUserFromGroupCommand,
  TagUserCommand,
  UpdateAccessKeyCommand,
} from '@aws-sdk/client-iam';
import type { ListPoliciesCommandInput } from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { clientsFor, failure } from '../../support/cloud-clients.js';
import type { Creds } from '../../support/cloud-clients.js';
import { startCloud } from '../../support/cloud-server.js';
import type { CloudServer } from '../../support/cloud-server.js';

const ACCOUNT = '123456789012';
const allow = (action: string | string[], resource = '*') =>
  JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Action: action, Resource: resource }],
  });

let clock: ManualClock;
let server: CloudServer;
let root: ReturnType<typeof clientsFor>;
const as = (creds: Creds) => clientsFor(server, clock, creds);

/** Creates a user with one access key and the given inline policy. */
async function userWith(name: string, policy?: string): Promise<Creds> {
  await root.iam.send(new CreateUserCommand({ UserName: name }));
  if (policy) {
    await root.iam.send(
      new PutUserPolicyCommand({ UserName: name, PolicyName: 'p', PolicyDocument: policy }),
    );
  }
  const { AccessKey } = await root.iam.send(new CreateAccessKeyCommand({ UserName: name }));
  return {
    accessKeyId: AccessKey?.AccessKeyId ?? '',
    secretAccessKey: AccessKey?.SecretAccessKey ?? '',
  };
}

beforeEach(async () => {
  clock = new ManualClock(Date.now());
  server = await startCloud(clock);
  root = as(server.root);
});
afterEach(async () => {
  await server.close();
});

describe('IAM through @aws-sdk/client-iam', () => {
  it('runs the engine iam_user flow: create, attach, put, group, tag, key, then revoke in order', async () => {
    const { iam } = root;
    await iam.send(new CreateGroupCommand({ GroupName: 'devs' }));
    await iam.send(new CreatePolicyCommand({ PolicyName: 'boundary', PolicyDocument: allow('*') }));
    const boundary = `arn:aws:iam::${ACCOUNT}:policy/boundary`;
    const created = await iam.send(
      new CreateUserCommand({
        UserName: 'vault-root-app-1',
        Path: '/keel/',
        PermissionsBoundary: boundary,
      }),
    );
    expect(created.User).toMatchObject({
      Path: '/keel/',
      UserName: 'vault-root-app-1',
      Arn: `arn:aws:iam::${ACCOUNT}:user/keel/vault-root-app-1`,
      PermissionsBoundary: {
        PermissionsBoundaryType: 'PermissionsBoundaryPolicy',
        PermissionsBoundaryArn: boundary,
      },
    });
    expect(created.User?.UserId).toMatch(/^AIDA[A-Z0-9]{17}$/);
    expect(created.User?.CreateDate?.toISOString()).toBe(clock.now().toISOString());
    await iam.send(
      new AttachUserPolicyCommand({
        UserName: 'vault-root-app-1',
        PolicyArn: 'arn:aws:iam::aws:policy/IAMReadOnlyAccess',
      }),
    );
    await iam.send(
      new PutUserPolicyCommand({
        UserName: 'vault-root-app-1',
        PolicyName: 'app',
        PolicyDocument: allow('iam:GetUser'),
      }),
    );
    await iam.send(new AddUserToGroupCommand({ GroupName: 'devs', UserName: 'vault-root-app-1' }));
    await iam.send(
      new TagUserCommand({ UserName: 'vault-root-app-1', Tags: [{ Key: 'team', Value: 'core' }] }),
    );
    const key = await iam.send(new CreateAccessKeyCommand({ UserName: 'vault-root-app-1' }));
    expect(key.AccessKey?.AccessKeyId).toMatch(/^AKIA[A-Z0-9]{16}$/);
    expect(key.AccessKey?.SecretAccessKey).toHaveLength(40);
    const creds = {
      accessKeyId: key.AccessKey?.AccessKeyId ?? '',
      secretAccessKey: key.AccessKey?.SecretAccessKey ?? '',
    };
    const me = await as(creds).sts.send(new GetCallerIdentityCommand({}));
    expect(me).toMatchObject({
      Account: ACCOUNT,
      Arn: created.User?.Arn,
      UserId: created.User?.UserId,
    });

    expect(
      (await iam.send(new ListUserTagsCommand({ UserName: 'vault-root-app-1' }))).Tags,
    ).toEqual([{ Key: 'team', Value: 'core' }]);
    const groups = await iam.send(new ListGroupsForUserCommand({ UserName: 'vault-root-app-1' }));
    expect(groups.Groups?.map((g) => g.GroupName)).toEqual(['devs']);
    expect(
      (await iam.send(new ListUserPoliciesCommand({ UserName: 'vault-root-app-1' }))).PolicyNames,
    ).toEqual(['app']);
    const attached = await iam.send(
      new ListAttachedUserPoliciesCommand({ UserName: 'vault-root-app-1' }),
    );
    expect(attached.AttachedPolicies).toEqual([
      { PolicyName: 'IAMReadOnlyAccess', PolicyArn: 'arn:aws:iam::aws:policy/IAMReadOnlyAccess' },
    ]);
    const keys = await iam.send(new ListAccessKeysCommand({ UserName: 'vault-root-app-1' }));
    expect(keys.AccessKeyMetadata).toEqual([
      {
        UserName: 'vault-root-app-1',
        AccessKeyId: creds.accessKeyId,
        Status: 'Active',
        CreateDate: clock.now(),
      },
    ]);
    expect(keys.IsTruncated).toBe(false);

    // DeleteUser refuses while anything is still attached, naming the first thing to remove.
    const conflict = await failure(
      iam.send(new DeleteUserCommand({ UserName: 'vault-root-app-1' })),
    );
    expect(conflict).toMatchObject({
      code: 'DeleteConflictException',
      status: 409,
      message: 'Cannot delete entity, must delete access keys first.',
    });
    await iam.send(
      new DeleteAccessKeyCommand({ UserName: 'vault-root-app-1', AccessKeyId: creds.accessKeyId }),
    );
    expect(
      (await failure(iam.send(new DeleteUserCommand({ UserName: 'vault-root-app-1' })))).message,
    ).toBe('Cannot delete entity, must delete policies first.');
    await iam.send(
      new DeleteUserPolicyCommand({ UserName: 'vault-root-app-1', PolicyName: 'app' }),
    );
    expect(
      (await failure(iam.send(new DeleteUserCommand({ UserName: 'vault-root-app-1' })))).message,
    ).toBe('Cannot delete entity, must detach all policies first.');
    await iam.send(
      new DetachUserPolicyCommand({
        UserName: 'vault-root-app-1',
        PolicyArn: 'arn:aws:iam::aws:policy/IAMReadOnlyAccess',
      }),
    );
    expect(
      (await failure(iam.send(new DeleteUserCommand({ UserName: 'vault-root-app-1' })))).message,
    ).toBe('Cannot delete entity, must remove users from group first.');
    await iam.send(
      new RemoveUserFromGroupCommand({ GroupName: 'devs', UserName: 'vault-root-app-1' }),
    );
    await iam.send(new DeleteUserCommand({ UserName: 'vault-root-app-1' }));

    const gone = await failure(as(creds).sts.send(new GetCallerIdentityCommand({})));
    expect(gone).toMatchObject({
      code: 'InvalidClientTokenId',
      status: 403,
      message: 'The security token included in the request is invalid.',
    });
    expect(
      await failure(iam.send(new GetUserCommand({ UserName: 'vault-root-app-1' }))),
    ).toMatchObject({ code: 'NoSuchEntityException', status: 404 });
  });

  it('rotates a root key like config/rotate-root: GetUser(), CreateAccessKey, DeleteAccessKey with the old key', async () => {
    const old = await userWith('admin', allow('iam:*'));
    const oldClient = as(old);
    const { User } = await oldClient.iam.send(new GetUserCommand({}));
    expect(User?.UserName).toBe('admin');
    const fresh = await oldClient.iam.send(
      new CreateAccessKeyCommand({ UserName: User?.UserName }),
    );
    clock.advance(1);
    await oldClient.iam.send(
      new DeleteAccessKeyCommand({ UserName: 'admin', AccessKeyId: old.accessKeyId }),
    );
    expect((await failure(as(old).sts.send(new GetCallerIdentityCommand({})))).code).toBe(
      'InvalidClientTokenId',
    );
    const next = {
      accessKeyId: fresh.AccessKey?.AccessKeyId ?? '',
      secretAccessKey: fresh.AccessKey?.SecretAccessKey ?? '',
    };
    expect((await as(next).sts.send(new GetCallerIdentityCommand({}))).Arn).toBe(
      `arn:aws:iam::${ACCOUNT}:user/admin`,
    );
  });

  it('serves static-role rotation: the oldest of two keys is found by sub-second CreateDate', async () => {
    await userWith('static-user');
    clock.advance(250);
    const second = await root.iam.send(new CreateAccessKeyCommand({ UserName: 'static-user' }));
    expect(
      (await root.iam.send(new GetUserCommand({ UserName: 'static-user' }))).User?.UserId,
    ).toMatch(/^AIDA/);
    const listed =
      (await root.iam.send(new ListAccessKeysCommand({ UserName: 'static-user' })))
        .AccessKeyMetadata ?? [];
    expect(listed).toHaveLength(2);
    const oldest = [...listed].sort(
      (a, b) => (a.CreateDate?.getTime() ?? 0) - (b.CreateDate?.getTime() ?? 0),
    )[0];
    expect(oldest?.AccessKeyId).not.toBe(second.AccessKey?.AccessKeyId);
    expect((listed[1]?.CreateDate?.getTime() ?? 0) - (listed[0]?.CreateDate?.getTime() ?? 0)).toBe(
      250,
    );
    await root.iam.send(
      new DeleteAccessKeyCommand({ UserName: oldest?.UserName, AccessKeyId: oldest?.AccessKeyId }),
    );
    await root.iam.send(new CreateAccessKeyCommand({ UserName: 'static-user' }));
    const after =
      (await root.iam.send(new ListAccessKeysCommand({ UserName: 'static-user' })))
        .AccessKeyMetadata ?? [];
    expect(after.map((k) => k.AccessKeyId)).toContain(second.AccessKey?.AccessKeyId);
    expect(after.map((k) => k.AccessKeyId)).not.toContain(oldest?.AccessKeyId);
  });

  it('limits a user to two access keys and lets an inactive key stop authenticating', async () => {
    const first = await userWith('two');
    await root.iam.send(new CreateAccessKeyCommand({ UserName: 'two' }));
    expect(
      await failure(root.iam.send(new CreateAccessKeyCommand({ UserName: 'two' }))),
    ).toMatchObject({
      code: 'LimitExceededException',
      status: 409,
      message: 'Cannot exceed quota for AccessKeysPerUser: 2',
    });
    await root.iam.send(
      new UpdateAccessKeyCommand({
        UserName: 'two',
        AccessKeyId: first.accessKeyId,
        Status: 'Inactive',
      }),
    );
    expect((await failure(as(first).sts.send(new GetCallerIdentityCommand({})))).code).toBe(
      'InvalidClientTokenId',
    );
    await root.iam.send(
      new UpdateAccessKeyCommand({
        UserName: 'two',
        AccessKeyId: first.accessKeyId,
        Status: 'Active',
      }),
    );
    expect((await as(first).sts.send(new GetCallerIdentityCommand({}))).UserId).toMatch(/^AIDA/);
    expect(
      await failure(
        root.iam.send(
          new UpdateAccessKeyCommand({
            UserName: 'two',
            AccessKeyId: first.accessKeyId,
            Status: 'Paused' as 'Active',
          }),
        ),
      ),
    ).toMatchObject({ code: 'ValidationError', status: 400 });
    expect(
      await failure(
        root.iam.send(
          new DeleteAccessKeyCommand({ UserName: 'two', AccessKeyId: 'AKIANOTAKEY000000000' }),
        ),
      ),
    ).toMatchObject({ code: 'NoSuchEntityException', status: 404 });
  });

  it('enforces policies: a user limited to iam:GetUser cannot create users; a deny wins; a boundary caps', async () => {
    const narrow = as(await userWith('reader', allow('iam:GetUser')));
    expect((await narrow.iam.send(new GetUserCommand({}))).User?.UserName).toBe('reader');
    const denied = await failure(narrow.iam.send(new CreateUserCommand({ UserName: 'evil' })));
    expect(denied).toMatchObject({ code: 'AccessDenied', status: 403 });
    expect(denied.message).toBe(
      `User: arn:aws:iam::${ACCOUNT}:user/reader is not authorized to perform: iam:CreateUser on resource: arn:aws:iam::${ACCOUNT}:user/evil because no identity-based policy allows the iam:CreateUser action`,
    );
    expect(await failure(root.iam.send(new GetUserCommand({ UserName: 'evil' })))).toMatchObject({
      status: 404,
    });

    await root.iam.send(
      new PutUserPolicyCommand({
        UserName: 'reader',
        PolicyName: 'deny-self',
        PolicyDocument: JSON.stringify({
          Statement: [
            { Effect: 'Deny', Action: 'iam:Get*', Resource: `arn:aws:iam::${ACCOUNT}:user/reader` },
          ],
        }),
      }),
    );
    expect((await failure(narrow.iam.send(new GetUserCommand({})))).message).toMatch(
      /with an explicit deny in an identity-based policy$/,
    );

    await root.iam.send(
      new CreatePolicyCommand({ PolicyName: 'only-list', PolicyDocument: allow('iam:ListUsers') }),
    );
    await root.iam.send(
      new CreateUserCommand({
        UserName: 'bounded',
        PermissionsBoundary: `arn:aws:iam::${ACCOUNT}:policy/only-list`,
      }),
    );
    await root.iam.send(
      new PutUserPolicyCommand({
        UserName: 'bounded',
        PolicyName: 'all',
        PolicyDocument: allow('*'),
      }),
    );
    const k = await root.iam.send(new CreateAccessKeyCommand({ UserName: 'bounded' }));
    const bounded = as({
      accessKeyId: k.AccessKey?.AccessKeyId ?? '',
      secretAccessKey: k.AccessKey?.SecretAccessKey ?? '',
    });
    expect((await bounded.iam.send(new ListUsersCommand({}))).Users?.length).toBeGreaterThan(0);
    expect((await failure(bounded.iam.send(new GetUserCommand({})))).code).toBe('AccessDenied');
  });

  it('grants through group policies and serves the group lookups the engine makes', async () => {
    await root.iam.send(new CreateGroupCommand({ GroupName: 'readers', Path: '/teams/' }));
    await root.iam.send(
      new PutGroupPolicyCommand({
        GroupName: 'readers',
        PolicyName: 'list',
        PolicyDocument: allow('iam:List*'),
      }),
    );
    await root.iam.send(
      new AttachGroupPolicyCommand({
        GroupName: 'readers',
        PolicyArn: 'arn:aws:iam::aws:policy/IAMReadOnlyAccess',
      }),
    );
    const member = as(await userWith('member'));
    expect((await failure(member.iam.send(new ListUsersCommand({})))).code).toBe('AccessDenied');
    await root.iam.send(new AddUserToGroupCommand({ GroupName: 'readers', UserName: 'member' }));
    expect((await member.iam.send(new ListUsersCommand({}))).Users?.map((u) => u.UserName)).toEqual(
      ['keel-root', 'member'],
    );

    expect(
      (await root.iam.send(new ListGroupPoliciesCommand({ GroupName: 'readers' }))).PolicyNames,
    ).toEqual(['list']);
    const doc = await root.iam.send(
      new GetGroupPolicyCommand({ GroupName: 'readers', PolicyName: 'list' }),
    );
    // IAM sends policy documents URL-encoded; the engine decodes them.
    expect(decodeURIComponent(doc.PolicyDocument ?? '')).toBe(allow('iam:List*'));
    const attached = await root.iam.send(
      new ListAttachedGroupPoliciesCommand({ GroupName: 'readers' }),
    );
    expect(attached.AttachedPolicies?.[0]?.PolicyArn).toBe(
      'arn:aws:iam::aws:policy/IAMReadOnlyAccess',
    );
    const up = await root.iam.send(
      new GetUserPolicyCommand({ UserName: 'keel-root', PolicyName: 'AdministratorAccess' }),
    );
    expect(JSON.parse(decodeURIComponent(up.PolicyDocument ?? ''))).toMatchObject({
      Statement: [{ Action: '*', Resource: '*' }],
    });
  });

  it('deletes groups, roles and policies only once nothing depends on them', async () => {
    const { iam } = root;
    await iam.send(new CreateGroupCommand({ GroupName: 'ops' }));
    expect(await failure(iam.send(new CreateGroupCommand({ GroupName: 'OPS' })))).toMatchObject({
      code: 'EntityAlreadyExistsException',
      status: 409,
    });
    expect((await iam.send(new ListGroupsCommand({}))).Groups?.map((g) => g.GroupName)).toEqual([
      'ops',
    ]);
    await iam.send(new CreateUserCommand({ UserName: 'op' }));
    await iam.send(new AddUserToGroupCommand({ GroupName: 'ops', UserName: 'op' }));
    expect(
      (await iam.send(new GetGroupCommand({ GroupName: 'ops' }))).Users?.map((u) => u.UserName),
    ).toEqual(['op']);
    expect((await failure(iam.send(new DeleteGroupCommand({ GroupName: 'ops' })))).message).toBe(
      'Cannot delete entity, must remove users from group first.',
    );
    await iam.send(new RemoveUserFromGroupCommand({ GroupName: 'ops', UserName: 'op' }));
    expect(
      await failure(iam.send(new RemoveUserFromGroupCommand({ GroupName: 'ops', UserName: 'op' }))),
    ).toMatchObject({ code: 'NoSuchEntityException' });
    await iam.send(new DeleteGroupCommand({ GroupName: 'ops' }));

    await iam.send(
      new CreatePolicyCommand({ PolicyName: 'mine', PolicyDocument: allow('iam:GetUser') }),
    );
    const policyArn = `arn:aws:iam::${ACCOUNT}:policy/mine`;
    expect(
      await failure(
        iam.send(new CreatePolicyCommand({ PolicyName: 'mine', PolicyDocument: allow('*') })),
      ),
    ).toMatchObject({ code: 'EntityAlreadyExistsException', status: 409 });
    expect(
      await failure(
        iam.send(
          new CreatePolicyCommand({ PolicyName: 'broken', PolicyDocument: '{"Statement":[]}' }),
        ),
      ),
    ).toMatchObject({ code: 'MalformedPolicyDocumentException', status: 400 });
    await iam.send(new AttachUserPolicyCommand({ UserName: 'op', PolicyArn: policyArn }));
    const names = async (input: ListPoliciesCommandInput) =>
      ((await iam.send(new ListPoliciesCommand(input))).Policies ?? []).map((p) => p.PolicyName);
    expect(await names({ Scope: 'Local' })).toEqual(['mine']);
    expect(await names({ Scope: 'AWS' })).toEqual([
      'AdministratorAccess',
      'IAMFullAccess',
      'IAMReadOnlyAccess',
      'ReadOnlyAccess',
    ]);
    expect(await names({ OnlyAttached: true })).toEqual(['mine']);
    expect(await names({})).toHaveLength(5);
    expect(
      await failure(iam.send(new ListPoliciesCommand({ Scope: 'Mine' as 'All' }))),
    ).toMatchObject({ code: 'ValidationError', status: 400 });
    expect((await iam.send(new GetPolicyCommand({ PolicyArn: policyArn }))).Policy).toMatchObject({
      PolicyName: 'mine',
      AttachmentCount: 1,
      DefaultVersionId: 'v1',
    });
    const version = await iam.send(
      new GetPolicyVersionCommand({ PolicyArn: policyArn, VersionId: 'v1' }),
    );
    expect(decodeURIComponent(version.PolicyVersion?.Document ?? '')).toBe(allow('iam:GetUser'));
    expect(
      await failure(iam.send(new DeletePolicyCommand({ PolicyArn: policyArn }))),
    ).toMatchObject({ code: 'DeleteConflictException', status: 409 });
    await iam.send(new DetachUserPolicyCommand({ UserName: 'op', PolicyArn: policyArn }));
    await iam.send(new DeletePolicyCommand({ PolicyArn: policyArn }));
    expect(await failure(iam.send(new GetPolicyCommand({ PolicyArn: policyArn })))).toMatchObject({
      code: 'NoSuchEntityException',
      status: 404,
    });

    await iam.send(
      new CreateRoleCommand({
        RoleName: 'svc',
        AssumeRolePolicyDocument: JSON.stringify({
          Statement: [{ Effect: 'Allow', Action: 'sts:AssumeRole', Principal: { AWS: ACCOUNT } }],
        }),
      }),
    );
    expect(
      await failure(
        iam.send(
          new CreateRoleCommand({
            RoleName: 'bad',
            AssumeRolePolicyDocument: allow('sts:AssumeRole'),
          }),
        ),
      ),
    ).toMatchObject({ code: 'MalformedPolicyDocumentException' });
    expect(
      await failure(
        iam.send(
          new CreateRoleCommand({
            RoleName: 'long',
            MaxSessionDuration: 43201,
            AssumeRolePolicyDocument: '{}',
          }),
        ),
      ),
    ).toMatchObject({ code: 'ValidationError', status: 400 });
    await iam.send(
      new PutRolePolicyCommand({ RoleName: 'svc', PolicyName: 'p', PolicyDocument: allow('*') }),
    );
    expect((await failure(iam.send(new DeleteRoleCommand({ RoleName: 'svc' })))).message).toBe(
      'Cannot delete entity, must delete policies first.',
    );
    const inline = await iam.send(new GetRolePolicyCommand({ RoleName: 'svc', PolicyName: 'p' }));
    expect(inline).toMatchObject({ RoleName: 'svc', PolicyName: 'p' });
    expect(JSON.parse(decodeURIComponent(inline.PolicyDocument ?? ''))).toEqual(
      JSON.parse(allow('*')),
    );
    await iam.send(new DeleteRolePolicyCommand({ RoleName: 'svc', PolicyName: 'p' }));
    expect(
      await failure(iam.send(new GetRolePolicyCommand({ RoleName: 'svc', PolicyName: 'p' }))),
    ).toMatchObject({
      code: 'NoSuchEntityException',
      message: 'The role policy with name p cannot be found.',
    });
    await iam.send(new DeleteRoleCommand({ RoleName: 'svc' }));
    expect(await failure(iam.send(new GetRoleCommand({ RoleName: 'svc' })))).toMatchObject({
      code: 'NoSuchEntityException',
      message: 'The role with name svc cannot be found.',
    });
  });

  it('caps attached policies per user at ten', async () => {
    await root.iam.send(new CreateUserCommand({ UserName: 'collector' }));
    for (let i = 0; i < 10; i++) {
      await root.iam.send(
        new CreatePolicyCommand({ PolicyName: `p${i}`, PolicyDocument: allow('iam:GetUser') }),
      );
      await root.iam.send(
        new AttachUserPolicyCommand({
          UserName: 'collector',
          PolicyArn: `arn:aws:iam::${ACCOUNT}:policy/p${i}`,
        }),
      );
    }
    await root.iam.send(
      new CreatePolicyCommand({ PolicyName: 'p10', PolicyDocument: allow('iam:GetUser') }),
    );
    expect(
      await failure(
        root.iam.send(
          new AttachUserPolicyCommand({
            UserName: 'collector',
            PolicyArn: `arn:aws:iam::${ACCOUNT}:policy/p10`,
          }),
        ),
      ),
    ).toMatchObject({
      code: 'LimitExceededException',
      status: 409,
      message: 'Cannot exceed quota for PoliciesPerUser: 10',
    });
  });

  it('pages ListUsers with MaxItems and Marker', async () => {
    for (const n of ['u1', 'u2', 'u3']) await root.iam.send(new CreateUserCommand({ UserName: n }));
    const first = await root.iam.send(new ListUsersCommand({ MaxItems: 2 }));
    expect(first.Users?.map((u) => u.UserName)).toEqual(['keel-root', 'u1']);
    expect(first.IsTruncated).toBe(true);
    const second = await root.iam.send(new ListUsersCommand({ MaxItems: 2, Marker: first.Marker }));
    expect(second.Users?.map((u) => u.UserName)).toEqual(['u2', 'u3']);
    expect(second.IsTruncated).toBe(false);
  });
});
