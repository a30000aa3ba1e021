import { IAMClient } from '@aws-sdk/client-iam';
import { STSClient } from '@aws-sdk/client-sts';
import type { Clock } from '../../src/core/clock.js';
import type { CloudServer } from './cloud-server.js';

/** Credentials as the SDK takes them. */
export interface Creds {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/**
 * The environment of a real aws CLI run with only `creds`: no config or shared credentials
 * files, and a single attempt per call.
 */
export const awsCliEnv = (creds: Creds): Record<string, string> => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: '/nonexistent',
  AWS_CONFIG_FILE: '/dev/null',
  AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
  AWS_ACCESS_KEY_ID: creds.accessKeyId,
  AWS_SECRET_ACCESS_KEY: creds.secretAccessKey,
  ...(creds.sessionToken ? { AWS_SESSION_TOKEN: creds.sessionToken } : {}),
  AWS_MAX_ATTEMPTS: '1',
});

/**
 * SDK clients for the cloud. They sign with the test's clock (through the SDK's clock offset), so
 * a test can move time across session expiry without the signature itself going stale.
 */
export function clientsFor(server: CloudServer, clock: Clock, creds: Creds, region = 'us-east-1') {
  const common = {
    region,
    // A copy: the SDK annotates the credentials object it is given.
    credentials: { ...creds },
    maxAttempts: 1,
    systemClockOffset: clock.now().getTime() - Date.now(),
  };
  return {
    iam: new IAMClient({ ...common, endpoint: server.iamEndpoint }),
    sts: new STSClient({ ...common, endpoint: server.stsEndpoint }),
  };
}

/** The AWS error code and HTTP status of a rejected SDK call. */
export async function failure(
  p: Promise<unknown>,
): Promise<{ code: string; status: number; message: string }> {
  try {
    await p;
  } catch (e) {
    const err = e as { name: string; message: string; $metadata?: { httpStatusCode?: number } };
    return { code: err.name, status: err.$metadata?.httpStatusCode ?? 0, message: err.message };
  }
  throw new Error('expected the call to fail');
}
