import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { CreateAccessKeyCommand, CreateUserCommand, IAMClient } from '@aws-sdk/client-iam';
import { createApp } from '../src/app.js';
import { createCloud } from '../src/cloud/index.js';
import { Sealer } from '../src/core/seal.js';
import { testConfig } from '../src/config.js';
import { ManualClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { listen } from '../src/http/server.js';
import { signAt } from '../src/secrets/aws/clients.js';
import type { BenchResult } from './support.js';
import { median } from './support.js';

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});

/**
 * Cloud credentials engine throughput against the embedded cloud on loopback: iam_user
 * credentials per second (HTTP in, six IAM calls out, an intent, a lease and a settle event) with
 * p50 latency, compared with the bare CreateUser + CreateAccessKey floor; and static-role
 * rotations per second driven by the schedule.
 */
export async function benchAws(): Promise<BenchResult[]> {
  const clock = new ManualClock(Date.now());
  const cloud = createCloud({
    location: { kind: 'sqlite', path: ':memory:' },
    clock,
    sealer: new Sealer(randomBytes(32)),
  });
  const koa = new Koa();
  koa.use(cloud.middleware());
  const cloudServer = await new Promise<Server>((resolve) => {
    const s = koa.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${(cloudServer.address() as AddressInfo).port}/cloud`;
  const root = cloud.bootstrapRoot();
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-aws-'));
  const app = createApp(testConfig(dataDir), {
    clock,
    logger: silentLogger(),
    sealKey: Buffer.alloc(32, 9),
    aws: { provider: { iamEndpoint: `${base}/iam`, stsEndpoint: `${base}/sts` } },
  });
  const tokens = app.bootstrap();
  const server = await listen(app.callback, '127.0.0.1', 0);
  const headers = {
    'x-vault-token': tokens?.secrets.root_token ?? '',
    'content-type': 'application/json',
  };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}/v1/${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res;
  };
  try {
    await call('POST', 'aws/config/root', {
      access_key: root.accessKeyId,
      secret_key: root.secretAccessKey,
    });
    await call('POST', 'aws/roles/bench', {
      credential_type: 'iam_user',
      policy_document: ALLOW_ALL,
    });

    const n = 150;
    const latencies: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await (await call('GET', 'aws/creds/bench')).arrayBuffer();
      latencies.push(performance.now() - t);
    }
    const credsPerSecond = n / ((performance.now() - t0) / 1000);

    // The floor: the two IAM calls every credential needs at least, straight to the cloud.
    const iam = signAt(
      new IAMClient({ region: 'us-east-1', endpoint: `${base}/iam`, credentials: root }),
      clock,
    );
    const f0 = performance.now();
    for (let i = 0; i < n; i++) {
      await iam.send(new CreateUserCommand({ UserName: `floor-${i}` }));
      await iam.send(new CreateAccessKeyCommand({ UserName: `floor-${i}` }));
    }
    const floorPerSecond = n / ((performance.now() - f0) / 1000);

    const roles = 60;
    for (let i = 0; i < roles; i++) {
      await iam.send(new CreateUserCommand({ UserName: `static-${i}` }));
      await call('POST', `aws/static-roles/s${i}`, {
        username: `static-${i}`,
        rotation_period: 60,
      });
    }
    let rotations = 0;
    const r0 = performance.now();
    for (let round = 0; round < 3; round++) {
      clock.advance(61_000);
      rotations += await app.scheduler.tick();
    }
    const rotationsPerSecond = rotations / ((performance.now() - r0) / 1000);

    return [
      {
        name: 'iam_user credentials',
        value: Math.round(credsPerSecond * 10) / 10,
        unit: 'creds/s',
        note: `${Math.round((credsPerSecond / floorPerSecond) * 100)}% of the bare CreateUser+CreateAccessKey floor (${Math.round(floorPerSecond)}/s); each credential makes 3 IAM calls and appends an intent, a lease and a settle event`,
      },
      {
        name: 'iam_user credentials p50',
        value: Math.round(median(latencies) * 100) / 100,
        unit: 'ms',
      },
      {
        name: 'static-role rotations',
        value: Math.round(rotationsPerSecond * 10) / 10,
        unit: 'rotations/s',
        note: `${rotations} rotations of ${roles} roles over 3 periods`,
      },
    ];
  } finally {
    await server.close();
    await app.close();
    await new Promise<void>((resolve) => {
      cloudServer.close(() => resolve());
      cloudServer.closeAllConnections();
    });
    cloud.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  benchAws().then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
