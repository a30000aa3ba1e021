import { randomBytes } from 'node:crypto';
/**
 * Benchmark of the embedded cloud: signed GetCallerIdentity calls per second through the AWS SDK
 * on loopback, next to two references measured in the same run: a Koa app that answers the same
 * requests without verifying anything (the HTTP + SDK ceiling), and SigV4 verification alone.
 * Run alone with `npx tsx bench/cloud.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import Koa from 'koa';
import { createCloud } from '../src/cloud/index.js';
import { Sealer } from '../src/core/seal.js';
import { parseAuthorization, verifySignature } from '../src/cloud/sigv4.js';
import { signRequest } from '../test/support/sigv4.js';
import { systemClock } from '../src/core/clock.js';

interface Result {
  name: string;
  value: number;
  unit: string;
  note?: string;
}

const DURATION_MS = 3000;
const CONCURRENCY = 8;

async function serve(app: Koa): Promise<{ url: string; close: () => Promise<void> }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Calls `once` from `CONCURRENCY` loops for the duration; returns completed calls per second. */
async function rate(once: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 50; i++) await once(); // warm-up: JIT, connections, statement cache
  let done = 0;
  const start = performance.now();
  const end = start + DURATION_MS;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        await once();
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

/** Runs the cloud benchmarks and returns their results. */
export async function benchCloud(): Promise<Result[]> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-cloud-'));
  const cloud = createCloud({
    location: { kind: 'sqlite', path: join(dir, 'cloud.sqlite') },
    clock: systemClock,
    sealer: new Sealer(randomBytes(32)),
  });
  const root = cloud.bootstrapRoot();
  const app = new Koa();
  app.use(cloud.middleware());
  const real = await serve(app);

  // The ceiling: same SDK, same requests, an answer with no parsing, lookup or verification.
  const canned = new Koa();
  canned.use((ctx) => {
    ctx.type = 'text/xml';
    ctx.body =
      '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>' +
      '<Arn>arn:aws:iam::000000000000:user/keel-root</Arn><UserId>AIDAEXAMPLE</UserId><Account>000000000000</Account>' +
      '</GetCallerIdentityResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></GetCallerIdentityResponse>';
  });
  const fake = await serve(canned);

  const client = (url: string) =>
    new STSClient({
      endpoint: `${url}/cloud/sts`,
      region: 'us-east-1',
      credentials: { ...root },
      maxAttempts: 1,
    });
  const sts = client(real.url);
  const baseline = client(fake.url);
  try {
    const cloudRate = await rate(() => sts.send(new GetCallerIdentityCommand({})));
    const ceiling = await rate(() => baseline.send(new GetCallerIdentityCommand({})));

    const body = Buffer.from('Action=GetCallerIdentity&Version=2011-06-15');
    const req = {
      method: 'POST',
      path: '/cloud/sts',
      query: '',
      body,
      headers: { host: '127.0.0.1', 'content-type': 'application/x-www-form-urlencoded' },
    };
    const now = new Date();
    const headers = signRequest(req, root, 'us-east-1', 'sts', now);
    const auth = parseAuthorization(headers.authorization ?? '');
    const n = 20_000;
    const t0 = performance.now();
    for (let i = 0; i < n; i++)
      await verifySignature({ ...req, headers }, auth, root.secretAccessKey, now);
    const verifyRate = n / ((performance.now() - t0) / 1000);

    return [
      {
        name: 'cloud.sts.get_caller_identity',
        value: Math.round(cloudRate),
        unit: 'req/s',
        note: `AWS SDK, SigV4-verified, loopback, ${CONCURRENCY} concurrent callers, ${DURATION_MS / 1000}s`,
      },
      {
        name: 'cloud.sts.get_caller_identity.ceiling',
        value: Math.round(ceiling),
        unit: 'req/s',
        note: 'same SDK calls against a Koa app returning a canned answer',
      },
      {
        name: 'cloud.sts.get_caller_identity.ratio',
        value: Math.round((cloudRate / ceiling) * 100) / 100,
        unit: 'x of ceiling',
      },
      {
        name: 'cloud.sigv4.verify',
        value: Math.round(verifyRate),
        unit: 'ops/s',
        note: 'in process, one core',
      },
    ];
  } finally {
    sts.destroy();
    baseline.destroy();
    await real.close();
    await fake.close();
    cloud.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const r of await benchCloud()) {
    console.log(`${r.name}\t${r.value} ${r.unit}${r.note ? `\t(${r.note})` : ''}`);
  }
}
