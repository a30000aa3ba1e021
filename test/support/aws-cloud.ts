import { IAMClient } from '@aws-sdk/client-iam';
import { STSClient } from '@aws-sdk/client-sts';
import { ManualClock } from '../../src/core/clock.js';
import type { CloudService } from '../../src/cloud/index.js';
import { signAt } from '../../src/secrets/aws/clients.js';
import { startCloud } from './cloud-server.js';

type Key = { accessKeyId: string; secretAccessKey: string; sessionToken?: string };

/** Keel's embedded IAM/STS on a loopback port, sharing a manual clock, with its root key. */
export interface TestCloud {
  clock: ManualClock;
  cloud: CloudService;
  iamEndpoint: string;
  stsEndpoint: string;
  root: { accessKeyId: string; secretAccessKey: string };
  /** SDK clients signed at the shared clock with any key (the root key by default). */
  iam(key?: Key): IAMClient;
  sts(key?: Key): STSClient;
  close(): Promise<void>;
}

export async function startTestCloud(
  clock = new ManualClock('2026-03-01T00:00:00.000Z'),
): Promise<TestCloud> {
  const server = await startCloud(clock);
  const opts = (key: Key = server.root) => ({
    region: 'us-east-1',
    credentials: key,
    maxAttempts: 1,
  });
  return {
    clock,
    cloud: server.cloud,
    iamEndpoint: server.iamEndpoint,
    stsEndpoint: server.stsEndpoint,
    root: server.root,
    iam: (key) => signAt(new IAMClient({ ...opts(key), endpoint: server.iamEndpoint }), clock),
    sts: (key) => signAt(new STSClient({ ...opts(key), endpoint: server.stsEndpoint }), clock),
    close: () => server.close(),
  };
}
