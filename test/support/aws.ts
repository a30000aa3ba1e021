import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import type { App } from '../../src/app.js';
import { createApp } from '../../src/app.js';
import { testConfig } from '../../src/config.js';
import { ManualClock } from '../../src/core/clock.js';
import { sequentialIds } from '../../src/core/ids.js';
import { silentLogger } from '../../src/core/logger.js';
import type { ListeningServer } from '../../src/http/server.js';
import { listen } from '../../src/http/server.js';
import { sdkClientFactory } from '../../src/secrets/aws/clients.js';
import type { RequestOptions, TestResponse } from './app.js';
import { TEST_SEAL_KEY, httpRequest } from './app.js';
import type { TestCloud } from './aws-cloud.js';
import { startTestCloud } from './aws-cloud.js';
import type { IamHook } from './iam-hook.js';
import { hookIam } from './iam-hook.js';
import { startCloudGate, type CloudGate } from './cloud-gate.js';

/** Keel (restartable on one data directory) with its aws engine pointed at an embedded cloud. */
export interface AwsHarness {
  cloud: TestCloud;
  /** The proxy the engine reaches the cloud through, when asked for (`gate: true`). */
  gate: CloudGate | null;
  clock: ManualClock;
  app: App;
  rootToken: string;
  url: string;
  /** `/v1` call with the root token (unless another is given). */
  v1(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  settle(): Promise<void>;
  /** Stops the daemon and starts it again on the same data directory and clock. */
  restart(): Promise<void>;
  /**
   * With `shared: true`, another process on the same log (as under `--workers`): an app on the
   * same database, clock and provider; the caller closes it.
   */
  peer(): App;
  /** Whether a key authenticates against the cloud right now. */
  works(key: {
    access_key: string;
    secret_key: string;
    session_token?: string | null;
  }): Promise<boolean>;
  close(): Promise<void>;
}

export async function startAws(
  options: {
    clock?: ManualClock;
    configureRoot?: boolean;
    /** Runs around every IAM call the engine makes (crash injection). */
    iamHook?: IamHook;
    gate?: boolean;
    /** Run as one of several processes on the log (`--workers 2`). */
    shared?: boolean;
  } = {},
): Promise<AwsHarness> {
  const clock = options.clock ?? new ManualClock('2026-03-01T00:00:00.000Z');
  const cloud = await startTestCloud(clock);
  const gate = options.gate === true ? await startCloudGate(cloud.iamEndpoint) : null;
  const provider = gate ?? cloud;
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-aws-'));
  const config = testConfig(dataDir, options.shared === true ? { workers: 2 } : {});
  const ids = sequentialIds();
  const boot = () =>
    createApp(config, {
      clock,
      ids,
      logger: silentLogger(),
      sealKey: TEST_SEAL_KEY,
      aws: {
        provider: { iamEndpoint: provider.iamEndpoint, stsEndpoint: provider.stsEndpoint },
        ...(options.iamHook
          ? {
              clients: hookIam(
                sdkClientFactory({
                  clock,
                  iamEndpoint: provider.iamEndpoint,
                  stsEndpoint: provider.stsEndpoint,
                }),
                options.iamHook,
              ),
            }
          : {}),
      },
    });
  let app = boot();
  const tokens = app.bootstrap();
  if (tokens === null) throw new Error('a fresh app must bootstrap');
  let server: ListeningServer = await listen(app.callback, '127.0.0.1', 0);
  const h: AwsHarness = {
    cloud,
    gate,
    clock,
    get app() {
      return app;
    },
    rootToken: tokens.secrets.root_token,
    get url() {
      return server.url;
    },
    v1: (method, path, opts = {}) =>
      httpRequest(server.url, method, `/v1/${path}`, {
        token: tokens.secrets.root_token,
        tokenHeader: 'x-secrets-token',
        ...opts,
        headers: { connection: 'close', ...opts.headers },
      }),
    settle: () => app.settle(),
    async restart() {
      await server.close();
      await app.close();
      app = boot();
      server = await listen(app.callback, '127.0.0.1', 0);
    },
    peer: () => boot(),
    async works(key) {
      try {
        await cloud
          .sts({
            accessKeyId: key.access_key,
            secretAccessKey: key.secret_key,
            ...(key.session_token ? { sessionToken: key.session_token } : {}),
          })
          .send(new GetCallerIdentityCommand({}));
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await server.close();
      await app.close();
      await gate?.close();
      await cloud.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  if (options.configureRoot !== false) {
    const res = await h.v1('POST', 'aws/config/root', {
      body: {
        access_key: cloud.root.accessKeyId,
        secret_key: cloud.root.secretAccessKey,
        region: 'us-east-1',
      },
    });
    if (res.status !== 204) throw new Error(`config/root: ${res.status} ${res.text}`);
  }
  return h;
}

/** Role `dev`: IAM user credentials allowed only `sts:GetCallerIdentity` (enough to test a key). */
export async function createDevRole(h: AwsHarness): Promise<void> {
  const role = await h.v1('POST', 'aws/roles/dev', {
    body: {
      credential_type: 'iam_user',
      policy_document: JSON.stringify({
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: 'sts:GetCallerIdentity', Resource: '*' }],
      }),
    },
  });
  if (role.status !== 204) throw new Error(`role dev not made: ${role.text}`);
}
