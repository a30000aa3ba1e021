import {
  AddUserToGroupCommand,
  AttachGroupPolicyCommand,
  AttachRolePolicyCommand,
  AttachUserPolicyCommand,
  CreateGroupCommand,
  CreateRoleCommand,
  CreateUserCommand,
  DeleteGroupCommand,
  DeleteGroupPolicyCommand,
  DeleteRoleCommand,
  DeleteRolePolicyCommand,
  DeleteUserCommand,
  DeleteUserPolicyCommand,
  DetachGroupPolicyCommand,
  DetachRolePolicyCommand,
  DetachUserPolicyCommand,
  ListGroupsCommand,
  ListUsersCommand,
  PutGroupPolicyCommand,
  PutRolePolicyCommand,
  PutUserPolicyCommand,
  RemoveUserFromGroupCommand,
  type IAMClient,
} from '@aws-sdk/client-iam';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { clientsFor, failure } from '../../support/cloud-clients.js';
import { startCloud, type CloudServer } from '../../support/cloud-server.js';

/** The policy and delete rules users, groups and roles share, driven for each kind alike. */

const READ_ONLY = 'arn:aws:iam::aws:policy/IAMReadOnlyAccess';
const DOC = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});
const TRUST = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Principal: { AWS: '*' }, Action: 'sts:AssumeRole' }],
});

let server: CloudServer;
let iam: IAMClient;
beforeEach(async () => {
  const clock = new ManualClock(Date.now());
  server = await startCloud(clock);
  iam = clientsFor(server, clock, server.root).iam;
});
afterEach(async () => {
  await server.close();
});

/** One principal kind's commands, with its name filled in. */
interface Kind {
  create(): Promise<unknown>;
  remove(): Promise<unknown>;
  put(policy: string): Promise<unknown>;
  deleteInline(policy: string): Promise<unknown>;
  attach(arn: string): Promise<unknown>;
  detach(arn: string): Promise<unknown>;
}

const kinds: [string, (name: string) => Kind][] = [
  [
    'user',
    (UserName) => ({
      create: () => iam.send(new CreateUserCommand({ UserName })),
      remove: () => iam.send(new DeleteUserCommand({ UserName })),
      put: (PolicyName) =>
        iam.send(new PutUserPolicyCommand({ UserName, PolicyName, PolicyDocument: DOC })),
      deleteInline: (PolicyName) => iam.send(new DeleteUserPolicyCommand({ UserName, PolicyName })),
      attach: (PolicyArn) => iam.send(new AttachUserPolicyCommand({ UserName, PolicyArn })),
      detach: (PolicyArn) => iam.send(new DetachUserPolicyCommand({ UserName, PolicyArn })),
    }),
  ],
  [
    'group',
    (GroupName) => ({
      create: () => iam.send(new CreateGroupCommand({ GroupName })),
      remove: () => iam.send(new DeleteGroupCommand({ GroupName })),
      put: (PolicyName) =>
        iam.send(new PutGroupPolicyCommand({ GroupName, PolicyName, PolicyDocument: DOC })),
      deleteInline: (PolicyName) =>
        iam.send(new DeleteGroupPolicyCommand({ GroupName, PolicyName })),
      attach: (PolicyArn) => iam.send(new AttachGroupPolicyCommand({ GroupName, PolicyArn })),
      detach: (PolicyArn) => iam.send(new DetachGroupPolicyCommand({ GroupName, PolicyArn })),
    }),
  ],
  [
    'role',
    (RoleName) => ({
      create: () => iam.send(new CreateRoleCommand({ RoleName, AssumeRolePolicyDocument: TRUST })),
      remove: () => iam.send(new DeleteRoleCommand({ RoleName })),
      put: (PolicyName) =>
        iam.send(new PutRolePolicyCommand({ RoleName, PolicyName, PolicyDocument: DOC })),
      deleteInline: (PolicyName) => iam.send(new DeleteRolePolicyCommand({ RoleName, PolicyName })),
      attach: (PolicyArn) => iam.send(new AttachRolePolicyCommand({ RoleName, PolicyArn })),
      detach: (PolicyArn) => iam.send(new DetachRolePolicyCommand({ RoleName, PolicyArn })),
    }),
  ],
];

describe.each(kinds)('a %s', (kind, of) => {
  it('refuses removing policies it lacks, and its deletion while it holds any', async () => {
    const p = of('p1');
    await p.create();
    expect(await failure(p.detach(READ_ONLY))).toMatchObject({
      code: 'NoSuchEntityException',
      message: `Policy ${READ_ONLY} was not found.`,
    });
    expect(await failure(p.deleteInline('nope'))).toMatchObject({
      code: 'NoSuchEntityException',
      message: `The ${kind} policy with name nope cannot be found.`,
    });
    await p.put('inline');
    await p.attach(READ_ONLY);
    expect(await failure(p.remove())).toMatchObject({
      code: 'DeleteConflictException',
      message: 'Cannot delete entity, must delete policies first.',
    });
    await p.deleteInline('inline');
    expect(await failure(p.remove())).toMatchObject({
      code: 'DeleteConflictException',
      message: 'Cannot delete entity, must detach all policies first.',
    });
    await p.detach(READ_ONLY);
    await p.remove();
    // Removal is not idempotent: the second one finds nothing.
    expect(await failure(p.remove())).toMatchObject({ code: 'NoSuchEntityException' });
  });
});

describe('group membership and path prefixes', () => {
  it('a member keeps its group and itself from deletion; lists filter by PathPrefix', async () => {
    await iam.send(new CreateGroupCommand({ GroupName: 'g', Path: '/team/' }));
    await iam.send(new CreateGroupCommand({ GroupName: 'h' }));
    await iam.send(new CreateUserCommand({ UserName: 'u', Path: '/team/' }));
    await iam.send(new CreateUserCommand({ UserName: 'v' }));
    await iam.send(new AddUserToGroupCommand({ GroupName: 'g', UserName: 'u' }));
    const conflict = {
      code: 'DeleteConflictException',
      message: 'Cannot delete entity, must remove users from group first.',
    };
    expect(await failure(iam.send(new DeleteGroupCommand({ GroupName: 'g' })))).toMatchObject(
      conflict,
    );
    expect(await failure(iam.send(new DeleteUserCommand({ UserName: 'u' })))).toMatchObject(
      conflict,
    );

    const groups = async (PathPrefix?: string) =>
      (await iam.send(new ListGroupsCommand({ PathPrefix }))).Groups?.map((g) => g.GroupName);
    const users = async (PathPrefix?: string) =>
      (await iam.send(new ListUsersCommand({ PathPrefix }))).Users?.map((u) => u.UserName);
    expect(await groups()).toEqual(['g', 'h']);
    expect(await groups('/team/')).toEqual(['g']);
    expect(await groups('/other/')).toEqual([]);
    expect(await users('/team/')).toEqual(['u']);
    expect(await users()).toEqual(expect.arrayContaining(['u', 'v']));

    await iam.send(new RemoveUserFromGroupCommand({ GroupName: 'g', UserName: 'u' }));
    await iam.send(new DeleteGroupCommand({ GroupName: 'g' }));
    await iam.send(new DeleteUserCommand({ UserName: 'u' }));
    expect(await groups()).toEqual(['h']);
  });
});
