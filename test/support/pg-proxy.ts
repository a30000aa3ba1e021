import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

/** The file name of a PostgreSQL server's unix socket on its default port. */
const SOCKET = '.s.PGSQL.5432';

export interface PgProxy {
  /** The directory of the proxy's socket: the `host` of a connection string through it. */
  readonly socketDir: string;
  /**
   * From now on, what the server sends on the connections open now is dropped, and the server
   * closing one of them is not passed on until `cut`.
   */
  holdReplies(): Promise<void>;
  /** From now on, what the clients send on the connections open now is dropped. */
  holdRequests(): Promise<void>;
  /** Ends every connection open now, on both sides, as a network failure would. */
  cut(): Promise<void>;
  /** Ends every connection, and refuses new ones until `up`: the server out of reach. */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The proxy itself, on a thread of its own: the store's calls block the test's event loop while
 * they wait for the server, so the bytes must be carried elsewhere.
 */
const PROXY = `
const { createConnection, createServer } = require('node:net');
const { parentPort, workerData } = require('node:worker_threads');
const open = new Set();
let refusing = false;
const server = createServer((client) => {
  if (refusing) return client.destroy();
  const upstream = workerData.server === null ? null : createConnection(workerData.server);
  const pair = { client, upstream, held: false, heldRequests: false };
  open.add(pair);
  client.on('data', (data) => { if (!pair.heldRequests) upstream?.write(data); });
  upstream?.on('data', (data) => { if (!pair.held) client.write(data); });
  const end = () => { open.delete(pair); client.destroy(); upstream?.destroy(); };
  client.on('close', end);
  client.on('error', end);
  // While replies are held the network is silent: the server ending the session is not heard
  // either, until the connection is cut.
  const upstreamEnded = () => { if (!pair.held) end(); };
  upstream?.on('close', upstreamEnded);
  upstream?.on('error', upstreamEnded);
});
server.listen(workerData.listen, () => parentPort.postMessage('ready'));
parentPort.on('message', (what) => {
  if (what === 'down' || what === 'up') refusing = what === 'down';
  if (what === 'up') return parentPort.postMessage(what);
  for (const pair of [...open]) {
    if (what === 'hold') pair.held = true;
    else if (what === 'hold-requests') pair.heldRequests = true;
    else { pair.client.destroy(); pair.upstream?.destroy(); }
  }
  if (what === 'close') server.close(() => parentPort.postMessage(what));
  else parentPort.postMessage(what);
});
`;

/**
 * A unix-socket proxy in front of a test cluster's socket, for losing a connection at a chosen
 * moment: a request the server has run, whose answer never reaches the client. In front of no
 * server (`null`), it accepts connections and never answers: a server hung, or a handshake lost.
 */
export async function pgProxy(serverSocketDir: string | null): Promise<PgProxy> {
  const socketDir = mkdtempSync(join(tmpdir(), 'keel-pg-proxy-'));
  const worker = new Worker(PROXY, {
    eval: true,
    workerData: {
      server: serverSocketDir === null ? null : join(serverSocketDir, SOCKET),
      listen: join(socketDir, SOCKET),
    },
  });
  const answer = (what: string) =>
    new Promise<void>((resolve, reject) => {
      const heard = (said: unknown) => {
        if (said !== what) return;
        worker.off('message', heard);
        worker.off('error', reject);
        resolve();
      };
      worker.on('message', heard);
      worker.once('error', reject);
    });
  await answer('ready');
  const ask = async (what: 'hold' | 'hold-requests' | 'cut' | 'down' | 'up' | 'close') => {
    const answered = answer(what);
    worker.postMessage(what);
    await answered;
  };
  return {
    socketDir,
    holdReplies: () => ask('hold'),
    holdRequests: () => ask('hold-requests'),
    cut: () => ask('cut'),
    down: () => ask('down'),
    up: () => ask('up'),
    async close() {
      await ask('close');
      await worker.terminate();
      rmSync(socketDir, { recursive: true, force: true });
    },
  };
}
