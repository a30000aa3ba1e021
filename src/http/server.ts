import { createServer as createHttpServer } from 'node:http';
import type { RequestListener, Server as HttpServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { ListMethodSocket } from './list-method.js';

export interface ListeningServer {
  readonly url: string;
  readonly address: AddressInfo;
  /** Stop accepting, let in-flight requests finish, then close idle connections. */
  close(): Promise<void>;
}

/**
 * A TCP listener whose connections pass through the LIST rewriter before Node's HTTP server
 * parses them. The HTTP server itself never listens.
 */
export async function listen(
  handler: RequestListener,
  host: string,
  port: number,
): Promise<ListeningServer> {
  const http: HttpServer = createHttpServer({ keepAliveTimeout: 5000 }, handler);
  const tcp: NetServer = createNetServer((socket) => {
    http.emit('connection', new ListMethodSocket(socket));
  });
  await new Promise<void>((resolve, reject) => {
    tcp.once('error', reject);
    tcp.listen(port, host, () => {
      tcp.off('error', reject);
      resolve();
    });
  });
  const address = tcp.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    address,
    close: () =>
      new Promise<void>((resolve) => {
        tcp.close(() => resolve());
        http.close();
        http.closeIdleConnections();
      }),
  };
}
