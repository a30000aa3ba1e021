import {
  AssumeRoleCommand,
  GetFederationTokenCommand,
  GetSessionTokenCommand,
} from '@aws-sdk/client-sts';
import type { STSClient } from '@aws-sdk/client-sts';
import { step } from './cloud-calls.js';

/** The STS calls behind assumed_role, federation_token and session_token credentials. */

export interface StsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiration: Date;
  arn?: string;
}

function credentialsOf(
  c:
    | { AccessKeyId?: string; SecretAccessKey?: string; SessionToken?: string; Expiration?: Date }
    | undefined,
): StsCredentials {
  return {
    accessKeyId: c?.AccessKeyId ?? '',
    secretAccessKey: c?.SecretAccessKey ?? '',
    sessionToken: c?.SessionToken ?? '',
    expiration: c?.Expiration ?? new Date(0),
  };
}

export async function assumeRole(
  sts: STSClient,
  input: {
    roleArn: string;
    sessionName: string;
    seconds: number;
    policy: string;
    policyArns: readonly string[];
    externalId: string;
    tags: Readonly<Record<string, string>>;
  },
): Promise<StsCredentials> {
  const tags = Object.entries(input.tags);
  const out = await step('Error assuming role', () =>
    sts.send(
      new AssumeRoleCommand({
        RoleArn: input.roleArn,
        RoleSessionName: input.sessionName,
        DurationSeconds: input.seconds,
        ...(input.policy ? { Policy: input.policy } : {}),
        ...(input.policyArns.length
          ? { PolicyArns: input.policyArns.map((arn) => ({ arn })) }
          : {}),
        ...(input.externalId ? { ExternalId: input.externalId } : {}),
        ...(tags.length ? { Tags: tags.map(([Key, Value]) => ({ Key, Value })) } : {}),
      }),
    ),
  );
  return { ...credentialsOf(out.Credentials), arn: out.AssumedRoleUser?.Arn ?? '' };
}

export async function getFederationToken(
  sts: STSClient,
  input: { name: string; seconds: number; policy: string; policyArns: readonly string[] },
): Promise<StsCredentials> {
  const out = await step('Error generating STS keys', () =>
    sts.send(
      new GetFederationTokenCommand({
        Name: input.name,
        DurationSeconds: input.seconds,
        ...(input.policy ? { Policy: input.policy } : {}),
        ...(input.policyArns.length
          ? { PolicyArns: input.policyArns.map((arn) => ({ arn })) }
          : {}),
      }),
    ),
  );
  return { ...credentialsOf(out.Credentials), arn: out.FederatedUser?.Arn ?? '' };
}

export async function getSessionToken(
  sts: STSClient,
  input: { seconds: number; serialNumber: string; tokenCode: string },
): Promise<StsCredentials> {
  const out = await step('Error generating STS keys', () =>
    sts.send(
      new GetSessionTokenCommand({
        DurationSeconds: input.seconds,
        ...(input.serialNumber ? { SerialNumber: input.serialNumber } : {}),
        ...(input.tokenCode ? { TokenCode: input.tokenCode } : {}),
      }),
    ),
  );
  return credentialsOf(out.Credentials);
}
