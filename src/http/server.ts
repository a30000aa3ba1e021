import { createServer as createHttpServer } from 'node:http';
import type { RequestListener, Server as HttpServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import type { SecureContextOptions } from 'node:tls';
import { ListMethodSocket } from './list-method.js';

export interface ListeningServer {
  readonly url: string;
  readonly address: AddressInfo;
  /** Stop accepting, let in-flight requests finish, then close every connection. */
  close(): Promise<void>;
  /** Serve a new certificate to connections from now on (TLS listeners only; no-op otherwise). */
  setSecureContext(context: SecureContextOptions): void;
}

/**
 * A TCP (or TLS) listener whose connections pass through the LIST rewriter before Node's HTTP
 * server parses them; TLS is taken off first. The HTTP server itself never listens.
 */
export async function listen(
  handler: RequestListener,
  host: string,
  port: number,
  tls?: SecureContextOptions,
): Promise<ListeningServer> {
  const http: HttpServer = createHttpServer({ keepAliveTimeout: 5000 }, handler);
  /** Open connections and how many requests each is serving right now. */
  const open = new Map<ListMethodSocket, number>();
  let closing = false;
  http.on('request', (req, res) => {
    const socket = req.socket as unknown as ListMethodSocket;
    open.set(socket, (open.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = (open.get(socket) ?? 1) - 1;
      open.set(socket, left);
      if (closing && left === 0) socket.destroy();
    });
    if (closing) res.setHeader('Connection', 'close');
  });
  const accept = (raw: Socket) => {
    const socket = new ListMethodSocket(raw);
    open.set(socket, 0);
    socket.once('close', () => open.delete(socket));
    http.emit('connection', socket);
  };
  const secure = tls === undefined ? null : createTlsServer(tls, accept);
  const tcp: NetServer = secure ?? createNetServer(accept);
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
    url: `${secure === null ? 'http' : 'https'}://${shownHost}:${address.port}`,
    address,
    setSecureContext: (context) => secure?.setSecureContext(context),
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        tcp.close(() => resolve());
        // Idle kept-alive connections go now; busy ones when their response is sent.
        for (const [socket, active] of open) if (active === 0) socket.destroy();
      }),
  };
}
