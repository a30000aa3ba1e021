import {
  AddUserToGroupCommand,
  AttachUserPolicyCommand,
  CreateAccessKeyCommand,
  CreateUserCommand,
  DeleteAccessKeyCommand,
  DeleteUserCommand,
  DeleteUserPolicyCommand,
  DetachUserPolicyCommand,
  GetGroupPolicyCommand,
  ListAccessKeysCommand,
  ListAttachedGroupPoliciesCommand,
  ListAttachedUserPoliciesCommand,
  ListGroupPoliciesCommand,
  ListGroupsForUserCommand,
  ListUserPoliciesCommand,
  PutUserPolicyCommand,
  RemoveUserFromGroupCommand,
  TagUserCommand,
} from '@aws-sdk/client-iam';
import type { IAMClient } from '@aws-sdk/client-iam';
import { z } from 'zod';
import { parseJson } from '../../core/json.js';

/**
 * The IAM calls of iam_user credentials, and the error text every provider call shares
 * (`sts-calls.ts` and `key-calls.ts` hold the rest), in the reference's order (research §6.1). Nothing here
 * touches the event log: callers run these before a command (results go into its events) or in a
 * reactor after one.
 */

/** An AWS error in aws-sdk-go's text form: `Code: message\n\tstatus code: N, request id: id`. */
export function awsErrorText(e: unknown): string {
  const err = e as {
    name?: string;
    Code?: string;
    message?: string;
    $metadata?: { httpStatusCode?: number; requestId?: string };
  };
  // The wire code (`NoSuchEntity`), not the SDK's class name (`NoSuchEntityException`).
  const code = err.Code ?? err.name?.replace(/Exception$/, '') ?? 'Error';
  const base = `${code}: ${err.message ?? String(e)}`;
  const status = err.$metadata?.httpStatusCode;
  return status === undefined
    ? base
    : `${base}\n\tstatus code: ${status}, request id: ${err.$metadata?.requestId ?? ''}`;
}

export const isNoSuchEntity = (e: unknown): boolean =>
  (e as { name?: string }).name === 'NoSuchEntityException' ||
  (e as { name?: string }).name === 'NoSuchEntity';

/** Throttling from the provider becomes a 502 in the reference. */
export const isThrottling = (e: unknown): boolean =>
  [
    'Throttling',
    'ThrottlingException',
    'RequestLimitExceeded',
    'TooManyRequestsException',
  ].includes((e as { name?: string }).name ?? '');

export interface IssuedKey {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface IamUserPlan {
  username: string;
  path: string;
  permissionsBoundaryArn: string;
  policyArns: readonly string[];
  policyDocument: string;
  /** The inline policy's name: the Keel role name. */
  policyName: string;
  groups: readonly string[];
  tags: Readonly<Record<string, string>>;
}

/** A step of an IAM user creation that failed, named as the reference names it. */
export class CloudStepError extends Error {
  constructor(
    readonly step: string,
    readonly causeError: unknown,
  ) {
    super(`${step}: ${awsErrorText(causeError)}`);
    this.name = 'CloudStepError';
  }
}

export async function step<T>(name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    throw new CloudStepError(name, e);
  }
}

/** CreateUser → AttachUserPolicy×N → PutUserPolicy → AddUserToGroup×N → TagUser → CreateAccessKey. */
export async function createIamUser(iam: IAMClient, plan: IamUserPlan): Promise<IssuedKey> {
  await step('Error creating IAM user', () =>
    iam.send(
      new CreateUserCommand({
        UserName: plan.username,
        Path: plan.path || '/',
        ...(plan.permissionsBoundaryArn
          ? { PermissionsBoundary: plan.permissionsBoundaryArn }
          : {}),
      }),
    ),
  );
  for (const arn of plan.policyArns) {
    await step('Error attaching user policy', () =>
      iam.send(new AttachUserPolicyCommand({ UserName: plan.username, PolicyArn: arn })),
    );
  }
  if (plan.policyDocument) {
    await step('Error putting user policy', () =>
      iam.send(
        new PutUserPolicyCommand({
          UserName: plan.username,
          PolicyName: plan.policyName,
          PolicyDocument: plan.policyDocument,
        }),
      ),
    );
  }
  for (const group of plan.groups) {
    await step('Error adding user to group', () =>
      iam.send(new AddUserToGroupCommand({ GroupName: group, UserName: plan.username })),
    );
  }
  const tags = Object.entries(plan.tags);
  if (tags.length) {
    await step('Error adding tags to user', () =>
      iam.send(
        new TagUserCommand({
          UserName: plan.username,
          Tags: tags.map(([Key, Value]) => ({ Key, Value })),
        }),
      ),
    );
  }
  const out = await step('Error creating access keys', () =>
    iam.send(new CreateAccessKeyCommand({ UserName: plan.username })),
  );
  return {
    accessKeyId: out.AccessKey?.AccessKeyId ?? '',
    secretAccessKey: out.AccessKey?.SecretAccessKey ?? '',
  };
}

/**
 * Removes an IAM user completely: access keys, attached and inline policies, group memberships,
 * then the user. A user that is already gone counts as removed.
 */
export async function deleteIamUser(iam: IAMClient, username: string): Promise<void> {
  try {
    const groups = await iam.send(
      new ListGroupsForUserCommand({ UserName: username, MaxItems: 1000 }),
    );
    const inline = await iam.send(
      new ListUserPoliciesCommand({ UserName: username, MaxItems: 1000 }),
    );
    const attached = await iam.send(
      new ListAttachedUserPoliciesCommand({ UserName: username, MaxItems: 1000 }),
    );
    const keys = await iam.send(new ListAccessKeysCommand({ UserName: username, MaxItems: 1000 }));
    for (const k of keys.AccessKeyMetadata ?? []) {
      await iam.send(
        new DeleteAccessKeyCommand({ UserName: username, AccessKeyId: k.AccessKeyId }),
      );
    }
    for (const p of attached.AttachedPolicies ?? []) {
      await iam.send(new DetachUserPolicyCommand({ UserName: username, PolicyArn: p.PolicyArn }));
    }
    for (const name of inline.PolicyNames ?? []) {
      await iam.send(new DeleteUserPolicyCommand({ UserName: username, PolicyName: name }));
    }
    for (const g of groups.Groups ?? []) {
      await iam.send(
        new RemoveUserFromGroupCommand({ UserName: username, GroupName: g.GroupName }),
      );
    }
    await iam.send(new DeleteUserCommand({ UserName: username }));
  } catch (e) {
    if (isNoSuchEntity(e)) return;
    throw e;
  }
}

/** What of an IAM policy document is merged: its statements, one or a list of them. */
const policyDocument = z.looseObject({
  Statement: z
    .union([z.array(z.record(z.string(), z.unknown())), z.record(z.string(), z.unknown())])
    .optional(),
});

/**
 * The statements of a policy document (the role's own, or a group's as IAM answers it); one that
 * is not a policy is refused with IAM's error code, naming the bad field.
 */
function statementsOf(document: string, whose: string): unknown[] {
  const doc = parseJson(policyDocument, document);
  if (!doc.ok)
    throw Object.assign(new Error(`${whose} is not a policy document: ${doc.error}`), {
      name: 'MalformedPolicyDocument',
    });
  const statement = doc.value.Statement;
  if (statement === undefined) return [];
  return Array.isArray(statement) ? statement : [statement];
}

/** The policies of the given groups, merged for assumed_role and federation_token (research §6.1). */
export async function groupPolicies(
  iam: IAMClient,
  groups: readonly string[],
  ownDocument: string,
  ownArns: readonly string[],
): Promise<{ document: string; arns: string[] }> {
  const arns = [...ownArns];
  const statements: unknown[] = [];
  if (ownDocument) {
    statements.push(...statementsOf(ownDocument, "the role's policy_document"));
  }
  for (const group of groups) {
    const attached = await iam.send(new ListAttachedGroupPoliciesCommand({ GroupName: group }));
    for (const p of attached.AttachedPolicies ?? []) if (p.PolicyArn) arns.push(p.PolicyArn);
    const names = await iam.send(new ListGroupPoliciesCommand({ GroupName: group }));
    for (const name of names.PolicyNames ?? []) {
      const got = await iam.send(new GetGroupPolicyCommand({ GroupName: group, PolicyName: name }));
      statements.push(
        ...statementsOf(
          decodeURIComponent(got.PolicyDocument ?? '{}'),
          `the policy ${name} of group ${group}`,
        ),
      );
    }
  }
  const document = statements.length
    ? JSON.stringify({ Version: '2012-10-17', Statement: statements })
    : '';
  return { document, arns: [...new Set(arns)] };
}
