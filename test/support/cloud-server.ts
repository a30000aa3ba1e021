import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import type { Clock } from '../../src/core/clock.js';
import { createCloud } from '../../src/cloud/index.js';
import type { CloudService } from '../../src/cloud/index.js';

/** A running cloud on 127.0.0.1 with a tiny Koa app around its middleware. */
export interface CloudServer {
  cloud: CloudService;
  root: { accessKeyId: string; secretAccessKey: string };
  /** Base address, e.g. `http://127.0.0.1:41234`. */
  base: string;
  iamEndpoint: string;
  stsEndpoint: string;
  close(): Promise<void>;
}

/** Starts the cloud on an ephemeral loopback port. */
export async function startCloud(clock: Clock, dbPath = ':memory:'): Promise<CloudServer> {
  const cloud = createCloud({ dbPath, clock, accountId: '123456789012' });
  const root = cloud.bootstrapRoot();
  const app = new Koa();
  app.use(cloud.middleware());
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = 'not the cloud';
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    cloud,
    root,
    base,
    iamEndpoint: `${base}/cloud/iam`,
    stsEndpoint: `${base}/cloud/sts`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      cloud.close();
    },
  };
}
