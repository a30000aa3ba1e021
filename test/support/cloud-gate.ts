import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback proxy in front of the embedded cloud that can hold calls of one IAM/STS action (the
 * engine's request stays in flight, so a state that lasts only while the provider works can be
 * looked at), then forward them or answer them with an AWS error. Requests are forwarded with
 * their own Host header, so SigV4 signatures still verify.
 */
export interface CloudGate {
  iamEndpoint: string;
  stsEndpoint: string;
  /** Holds every later call of `action` (for `userName` only, if given) until `release` or `fail`. */
  hold(action: string, userName?: string): void;
  /** Resolves once a held call waits (at once if one already does and was not awaited yet). */
  arrived(): Promise<void>;
  /** Forwards the held calls and stops holding. */
  release(): void;
  /** Answers the held (and abandoned) calls with an AccessDenied error and stops holding. */
  fail(): void;
  /** Keeps the held calls waiting (the process that sent them is taken as gone) and stops holding. */
  abandon(): void;
  close(): Promise<void>;
}

interface Held {
  forward(): void;
  refuse(): void;
}

/** Not retryable, so the engine's client gives up at once. */
const FAILURE = `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>the test provider refused the call</Message></Error><RequestId>gate</RequestId></ErrorResponse>`;

export async function startCloudGate(cloudBase: string): Promise<CloudGate> {
  const target = new URL(cloudBase);
  let holding: { action: string; userName: string | undefined } | null = null;
  let held: Held[] = [];
  let abandoned: Held[] = [];
  let unseen = 0;
  let waiter: (() => void) | null = null;

  const forward = (req: IncomingMessage, body: Buffer, res: ServerResponse) => {
    const out = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.end(body);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const params = new URLSearchParams(body.toString('utf8'));
      const matches =
        holding !== null &&
        params.get('Action') === holding.action &&
        (holding.userName === undefined || params.get('UserName') === holding.userName);
      if (!matches) return forward(req, body, res);
      held.push({
        forward: () => forward(req, body, res),
        refuse: () => {
          res.writeHead(403, { 'content-type': 'text/xml' });
          res.end(FAILURE);
        },
      });
      unseen++;
      waiter?.();
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const drain = (f: (h: Held) => void) => {
    holding = null;
    const now = held;
    held = [];
    now.forEach(f);
  };
  return {
    iamEndpoint: `${base}/cloud/iam`,
    stsEndpoint: `${base}/cloud/sts`,
    hold(action, userName) {
      holding = { action, userName };
    },
    async arrived() {
      if (unseen === 0) await new Promise<void>((resolve) => (waiter = resolve));
      waiter = null;
      unseen--;
    },
    release: () => drain((h) => h.forward()),
    fail() {
      drain((h) => h.refuse());
      abandoned.forEach((h) => h.refuse());
      abandoned = [];
    },
    abandon: () => drain((h) => abandoned.push(h)),
    async close() {
      drain((h) => h.refuse());
      abandoned.forEach((h) => h.refuse());
      abandoned = [];
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
