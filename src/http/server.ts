import { createServer as createHttpServer } from 'node:http';
import type { RequestListener, Server as HttpServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { Duplex } from 'node:stream';
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
/** How long a client may take: its request's headers, its whole request (defaults in config.ts). */
export interface ListenTimeouts {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
}

export async function listen(
  handler: RequestListener,
  host: string,
  port: number,
  tls?: SecureContextOptions,
  timeouts: ListenTimeouts = { headersTimeoutMs: 20_000, requestTimeoutMs: 300_000 },
): Promise<ListeningServer> {
  const http: HttpServer = createHttpServer(
    {
      keepAliveTimeout: 5000,
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      // How often Node looks for connections past those timeouts.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, timeouts.headersTimeoutMs / 4)),
    },
    handler,
  );
  // What the parser refuses (not HTTP, TLS on the plain port, headers too large) or what took
  // too long gets a status and a closed connection, never silence.
  http.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) socket.destroy();
    else
      refuse(
        socket,
        err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? '408 Request Timeout'
          : err.code === 'HPE_HEADER_OVERFLOW'
            ? '431 Request Header Fields Too Large'
            : '400 Bad Request',
      );
  });
  /**
   * Node times a head only once its bytes reach the parser; a connection that sends nothing, or a
   * head the LIST rewriter still holds, is timed here until its first request begins. (Later
   * requests on the connection wait under the keep-alive timeout.)
   */
  const firstHeads = new Map<ListMethodSocket, NodeJS.Timeout>();
  /** Open connections and how many requests each is serving right now. */
  const open = new Map<ListMethodSocket, number>();
  let closing = false;
  http.on('request', (req, res) => {
    const socket = req.socket as unknown as ListMethodSocket;
    clearTimeout(firstHeads.get(socket));
    firstHeads.delete(socket);
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
    const firstHead = setTimeout(
      () => refuse(socket, '408 Request Timeout'),
      timeouts.headersTimeoutMs,
    );
    firstHead.unref();
    firstHeads.set(socket, firstHead);
    socket.once('close', () => {
      clearTimeout(firstHead);
      firstHeads.delete(socket);
      open.delete(socket);
    });
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
  // The HTTP server never listens itself, and Node starts tracking its connections against the
  // headers and request timeouts only on its 'listening' event: without this, neither applies.
  http.emit('listening');
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
        // Stops the HTTP server's timeout checks (it holds no listening socket of its own).
        http.close();
        // Idle kept-alive connections go now; busy ones when their response is sent.
        for (const [socket, active] of open) if (active === 0) socket.destroy();
      }),
  };
}

/** Answer a connection with a bare status and close it. */
function refuse(socket: Duplex, status: string): void {
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () =>
    socket.destroy(),
  );
}
