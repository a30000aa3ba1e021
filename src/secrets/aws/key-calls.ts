import {
  CreateAccessKeyCommand,
  DeleteAccessKeyCommand,
  GetUserCommand,
  ListAccessKeysCommand,
} from '@aws-sdk/client-iam';
import type { IAMClient } from '@aws-sdk/client-iam';
import type { IssuedKey } from './cloud-calls.js';
import { CloudStepError, isNoSuchEntity, step } from './cloud-calls.js';

/** Access-key calls of static-role rotation and root rotation. */

/** The IAM user behind a static role; throws NoSuchEntity when it does not exist. */
export async function getUser(
  iam: IAMClient,
  username?: string,
): Promise<{ userName: string; userId: string }> {
  const out = await iam.send(
    new GetUserCommand(username === undefined ? {} : { UserName: username }),
  );
  return { userName: out.User?.UserName ?? '', userId: out.User?.UserId ?? '' };
}

/**
 * One static-role rotation (research §4): list the user's keys; with two, delete the oldest (ties:
 * never the key being served); then create a new key.
 */
export async function rotateStaticKey(
  iam: IAMClient,
  username: string,
  servedKey: string | null,
  /** Called with the user's keys once listed, before anything changes (the intent is recorded). */
  beforeChange: (known: string[]) => Promise<void>,
): Promise<IssuedKey & { deletedAccessKeyId: string | null }> {
  const listed = await iam.send(new ListAccessKeysCommand({ UserName: username }));
  const keys = listed.AccessKeyMetadata ?? [];
  await beforeChange(keys.flatMap((k) => (k.AccessKeyId ? [k.AccessKeyId] : [])));
  let deleted: string | null = null;
  if (keys.length >= 2) {
    let oldest = keys[0];
    for (const k of keys.slice(1)) {
      const kt = k.CreateDate?.getTime() ?? 0;
      const ot = oldest?.CreateDate?.getTime() ?? 0;
      if (kt < ot || (kt === ot && oldest?.AccessKeyId === servedKey)) oldest = k;
    }
    deleted = oldest?.AccessKeyId ?? null;
    await iam.send(
      new DeleteAccessKeyCommand({
        UserName: oldest?.UserName ?? username,
        AccessKeyId: deleted ?? '',
      }),
    );
  }
  const created = await iam.send(new CreateAccessKeyCommand({ UserName: username }));
  return {
    accessKeyId: created.AccessKey?.AccessKeyId ?? '',
    secretAccessKey: created.AccessKey?.SecretAccessKey ?? '',
    deletedAccessKeyId: deleted,
  };
}

/** Deletes one access key; a key or user already gone counts as deleted. */
export async function deleteAccessKey(
  iam: IAMClient,
  username: string,
  accessKeyId: string,
): Promise<void> {
  try {
    await iam.send(new DeleteAccessKeyCommand({ UserName: username, AccessKeyId: accessKeyId }));
  } catch (e) {
    if (!isNoSuchEntity(e)) throw e;
  }
}

/**
 * Creates a key for the caller's own user (rotate-root step 3–4). The user's keys are listed
 * first and handed to `beforeCreate` (the intent is recorded) before CreateAccessKey.
 */
export async function createOwnKey(
  iam: IAMClient,
  beforeCreate: (userName: string, known: string[]) => Promise<void>,
): Promise<IssuedKey & { userName: string }> {
  let user: { userName: string };
  try {
    user = await getUser(iam);
  } catch (e) {
    throw new CloudStepError('error calling GetUser', e);
  }
  const listed = await step('error calling ListAccessKeys', () =>
    iam.send(new ListAccessKeysCommand({ UserName: user.userName })),
  );
  await beforeCreate(
    user.userName,
    (listed.AccessKeyMetadata ?? []).flatMap((k) => (k.AccessKeyId ? [k.AccessKeyId] : [])),
  );
  const out = await step('error calling CreateAccessKey', () =>
    iam.send(new CreateAccessKeyCommand({ UserName: user.userName })),
  );
  return {
    accessKeyId: out.AccessKey?.AccessKeyId ?? '',
    secretAccessKey: out.AccessKey?.SecretAccessKey ?? '',
    userName: user.userName,
  };
}
