import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import type { Clock } from '../../src/core/clock.js';
import { Sealer } from '../../src/core/seal.js';
import { createCloud } from '../../src/cloud/index.js';
import type { CloudService } from '../../src/cloud/index.js';
import { listen } from '../../src/http/server.js';

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

/** One keyring for the test process, so a cloud restarted on the same file can read it. */
const processSealer = new Sealer(randomBytes(32));

/**
 * Starts the cloud on an ephemeral loopback port. `listener: 'keel'` serves through the daemon's
 * own listener (with its LIST rewriter), so the bytes the cloud verifies are the bytes a client
 * sent through Keel's front door; its close waits for clients to drop keep-alive sockets, so it
 * suits clients that exit (the aws CLI). The default closes every connection at once.
 */
export async function startCloud(
  clock: Clock,
  dbPath = ':memory:',
  listener: 'koa' | 'keel' = 'koa',
  sealer: Sealer = processSealer,
): Promise<CloudServer> {
  const cloud = createCloud({
    location: { kind: 'sqlite', path: dbPath },
    clock,
    sealer,
    accountId: '123456789012',
  });
  const root = cloud.bootstrapRoot();
  const app = new Koa();
  app.use(cloud.middleware());
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = 'not the cloud';
  });
  let base: string;
  let stop: () => Promise<void>;
  if (listener === 'keel') {
    const handle = app.callback();
    const server = await listen(
      (req, res) => {
        void handle(req, res);
      },
      '127.0.0.1',
      0,
    );
    base = server.url;
    stop = () => server.close();
  } else {
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    stop = async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    };
  }
  return {
    cloud,
    root,
    base,
    iamEndpoint: `${base}/cloud/iam`,
    stsEndpoint: `${base}/cloud/sts`,
    close: async () => {
      await stop();
      cloud.close();
    },
  };
}
