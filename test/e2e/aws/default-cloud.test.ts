import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { httpRequest } from '../../support/app.js';
import type { RunningDaemon } from '../../support/daemon.js';
import { startDaemon } from '../../support/daemon.js';

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});

let d: RunningDaemon;
beforeAll(async () => {
  d = await startDaemon();
});
afterAll(async () => {
  await d.stop();
});

describe('the aws engine of a fresh daemon', () => {
  it('issues credentials from the embedded cloud without any config/root', async () => {
    const boot = d.bootstrap();
    const v1 = (method: string, path: string, body?: unknown) =>
      httpRequest(d.url, method, `/v1/${path}`, {
        token: boot.secrets.root_token,
        tokenHeader: 'x-vault-token',
        body,
        headers: { connection: 'close' },
      });
    expect(
      (
        await v1('POST', 'aws/roles/dev', {
          credential_type: 'iam_user',
          policy_document: ALLOW_ALL,
        })
      ).status,
    ).toBe(204);
    const res = await v1('GET', 'aws/creds/dev');
    expect(res.status).toBe(200);
    const key = (res.json as { data: { access_key: string; secret_key: string } }).data;
    const sts = new STSClient({
      region: boot.cloud.region,
      endpoint: boot.cloud.sts_endpoint,
      credentials: { accessKeyId: key.access_key, secretAccessKey: key.secret_key },
      maxAttempts: 1,
    });
    const me = await sts.send(new GetCallerIdentityCommand({}));
    expect(me.Arn).toMatch(/:user\/vault-root-dev-\d+-\w{20}$/);
  });

  it('prints only JSON lines, library warnings included, once the SDK has been used', () => {
    const lines = d
      .output()
      .split('\n')
      .filter((line) => line !== '');
    const notJson = lines.filter((line) => {
      try {
        return typeof JSON.parse(line) !== 'object';
      } catch {
        return true;
      }
    });
    expect(notJson).toEqual([]);
  });
});
