import { GetUserCommand } from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/core/clock.js';
import { createIamClient, createStsClient } from '../../../src/secrets/aws/provider.js';
import { startCloud } from '../../support/cloud-server.js';
import type { CloudServer } from '../../support/cloud-server.js';

let server: CloudServer;
beforeEach(async () => {
  server = await startCloud(systemClock);
});
afterEach(async () => {
  await server.close();
});

describe('engine-side clients against the embedded cloud', () => {
  it('builds an IAM client from config/root with credentials from the environment', async () => {
    const env = {
      AWS_ACCESS_KEY_ID: server.root.accessKeyId,
      AWS_SECRET_ACCESS_KEY: server.root.secretAccessKey,
    };
    const iam = createIamClient({ iam_endpoint: server.iamEndpoint, max_retries: 0 }, env);
    expect((await iam.send(new GetUserCommand({}))).User?.UserName).toBe('keel-root');
    iam.destroy();
  });

  it('probes STS endpoints in order and keeps the first that answers', async () => {
    const config = {
      access_key: server.root.accessKeyId,
      secret_key: server.root.secretAccessKey,
      // Port 1 on loopback refuses at once, so the probe moves on without waiting.
      sts_endpoint: 'http://127.0.0.1:1/cloud/sts',
      sts_region: 'us-east-1',
      sts_fallback_endpoints: [server.stsEndpoint],
      sts_fallback_regions: ['eu-west-1'],
      max_retries: 0,
    };
    const sts = await createStsClient(config, {});
    expect(await sts.config.region()).toBe('eu-west-1');
    expect((await sts.send(new GetCallerIdentityCommand({}))).Account).toBe('123456789012');
    sts.destroy();
    await expect(
      createStsClient(
        { ...config, secret_key: 'wrong', sts_fallback_endpoints: [], sts_fallback_regions: [] },
        {},
      ),
    ).rejects.toThrow(/^could not obtain sts client: /);
  });
});
