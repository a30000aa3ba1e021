import {
  CreateAccessKeyCommand,
  CreateUserCommand,
  IAMClient,
  PutUserPolicyCommand,
} from '@aws-sdk/client-iam';
import { createPrivateKey } from 'node:crypto';
import { expect } from 'vitest';
import { httpRequest } from './app.js';
import type { RunningDaemon } from './daemon.js';

/** A `/v1` call with the root token that expects success, answering its JSON. */
export type V1 = (method: string, path: string, body?: unknown) => Promise<unknown>;

/** `/v1` calls to `daemon` with its bootstrap root token, each expected to succeed. */
export function rootV1(daemon: RunningDaemon): V1 {
  const token = daemon.bootstrap().secrets.root_token;
  return async (method, path, body) => {
    const res = await httpRequest(daemon.url, method, `/v1/${path}`, {
      token,
      tokenHeader: 'x-vault-token',
      ...(body === undefined ? {} : { body }),
    });
    expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
    return res.json;
  };
}

export const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});

/**
 * A PEM private key as the secrets it holds: the whole DER in base64, its first line (where the
 * private scalar sits) and the scalar itself (JWK `d`). Its last lines encode the public key,
 * which certificates rightly carry, so they are no secret.
 */
export const pemSecrets = (pem: string): string[] => {
  const lines = pem.split('\n').filter((l) => l !== '' && !l.startsWith('-----'));
  const jwk = createPrivateKey(pem).export({ format: 'jwk' });
  return [lines.join(''), lines[0]!, jwk.d!];
};

/**
 * Secrets of the cloud credentials engine, pushed to `secrets`: a root key made in the embedded
 * cloud with the bootstrap administrator and given to `aws/config/root`, and a dynamic key.
 */
export async function cloudCredentials(
  daemon: RunningDaemon,
  v1: V1,
  secrets: string[],
): Promise<void> {
  const boot = daemon.bootstrap();
  // A root key of the engine's own, made in the embedded cloud with the bootstrap administrator.
  const iam = new IAMClient({
    region: boot.cloud.region,
    endpoint: boot.cloud.iam_endpoint,
    credentials: {
      accessKeyId: boot.cloud.access_key_id,
      secretAccessKey: boot.cloud.secret_access_key,
    },
    maxAttempts: 1,
  });
  await iam.send(new CreateUserCommand({ UserName: 'engine-root' }));
  await iam.send(
    new PutUserPolicyCommand({
      UserName: 'engine-root',
      PolicyName: 'all',
      PolicyDocument: ALLOW_ALL,
    }),
  );
  const root = (await iam.send(new CreateAccessKeyCommand({ UserName: 'engine-root' }))).AccessKey!;
  secrets.push(root.SecretAccessKey!);
  await v1('POST', 'aws/config/root', {
    access_key: root.AccessKeyId,
    secret_key: root.SecretAccessKey,
    iam_endpoint: boot.cloud.iam_endpoint,
    sts_endpoint: boot.cloud.sts_endpoint,
    region: boot.cloud.region,
  });
  await v1('POST', 'aws/roles/dev', { credential_type: 'iam_user', policy_document: ALLOW_ALL });
  const dynamic = (await v1('GET', 'aws/creds/dev')) as { data: { secret_key: string } };
  secrets.push(dynamic.data.secret_key);
}

/** A CA key and an issued key, pushed to `secrets` as the secrets their PEM holds. */
export async function certificates(v1: V1, secrets: string[]): Promise<void> {
  const ca = (await v1('POST', 'pki/root/generate/exported', {
    common_name: 'Scan Root',
    key_type: 'ec',
    ttl: '8760h',
  })) as { data: { private_key: string } };
  secrets.push(...pemSecrets(ca.data.private_key));
  await v1('POST', 'pki/roles/web', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
    ttl: '1h',
  });
  const leaf = (await v1('POST', 'pki/issue/web', { common_name: 'a.example.com' })) as {
    data: { private_key: string };
  };
  secrets.push(...pemSecrets(leaf.data.private_key));
}
