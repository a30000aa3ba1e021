import { createSocket } from 'node:dgram';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ATTEMPT_DEADLINE_MS,
  validateChallenge,
  type ValidationTarget,
} from '../../../src/secrets/pki/acme/validate.js';

/**
 * Every validation attempt ends by its deadline, whatever the other side does: a TCP server that
 * takes the connection and never speaks (http-01 headers, tls-alpn-01 handshake), a DNS server
 * that never answers (dns-01), an http-01 body that never ends. The deadline is shortened here
 * (`deadlineMs`); the daemon uses ATTEMPT_DEADLINE_MS.
 */
const DEADLINE = 300;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function track(server: Server): void {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  closers.push(
    () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
}

/** A TCP server that accepts connections and never writes; `open` counts live connections. */
async function silentServer(): Promise<{ port: number; open: () => number }> {
  let open = 0;
  const server = createServer((s) => {
    open += 1;
    s.on('close', () => (open -= 1));
    s.resume(); // read (and drop) what comes, so the other side's close is seen
  });
  track(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, open: () => open };
}

const target = (t: Partial<ValidationTarget>): ValidationTarget => ({
  type: 'http-01',
  identifier: { type: 'ip', value: '127.0.0.1' },
  token: 'token',
  keyAuthorization: 'token.thumbprint',
  dnsResolver: '',
  ports: { http: 1, tls: 1 },
  deadlineMs: DEADLINE,
  ...t,
});

/** The attempt's result and how long it took. */
async function timed(t: ValidationTarget) {
  const start = performance.now();
  const failure = await validateChallenge(t);
  return { failure, ms: performance.now() - start };
}

describe('the attempt deadline', () => {
  it('is ten seconds in the daemon', () => {
    expect(ATTEMPT_DEADLINE_MS).toBe(10_000);
  });

  it('ends an http-01 attempt whose server never sends headers, and closes the connection', async () => {
    const silent = await silentServer();
    const { failure, ms } = await timed(target({ ports: { http: silent.port, tls: 1 } }));
    expect(failure?.kind).toBe('connection');
    expect(failure?.detail).toContain('deadline of 0.3 s');
    expect(ms).toBeGreaterThanOrEqual(DEADLINE - 5);
    expect(ms).toBeLessThan(DEADLINE + 1000);
    await expect.poll(() => silent.open()).toBe(0);
  });

  it('ends an http-01 attempt whose body never ends, under the cap', async () => {
    const server = createHttpServer((_req, res) => {
      res.writeHead(200);
      res.write('t');
      const timer = setInterval(() => res.write('o'), 20);
      res.on('close', () => clearInterval(timer));
    });
    track(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const { failure, ms } = await timed(target({ ports: { http: port, tls: 1 } }));
    expect(failure?.kind).toBe('connection');
    expect(ms).toBeLessThan(DEADLINE + 1000);
  });

  it('ends a tls-alpn-01 attempt whose server never completes the handshake', async () => {
    const silent = await silentServer();
    const { failure, ms } = await timed(
      target({ type: 'tls-alpn-01', ports: { http: 1, tls: silent.port } }),
    );
    expect(failure?.kind).toBe('tls');
    expect(failure?.detail).toContain('deadline');
    expect(ms).toBeLessThan(DEADLINE + 1000);
    await expect.poll(() => silent.open()).toBe(0);
  });

  it('ends a dns-01 attempt whose resolver never answers', async () => {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => socket.close(() => resolve())));
    const { failure, ms } = await timed(
      target({
        type: 'dns-01',
        identifier: { type: 'dns', value: 'app.example.com' },
        dnsResolver: `127.0.0.1:${socket.address().port}`,
      }),
    );
    expect(failure?.kind).toBe('dns');
    expect(failure?.detail).toContain('deadline');
    expect(ms).toBeLessThan(DEADLINE + 1000);
  });

  it('ends an http-01 attempt whose name lookup through dns_resolver never answers', async () => {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => socket.close(() => resolve())));
    const { failure, ms } = await timed(
      target({
        identifier: { type: 'dns', value: 'app.example.com' },
        dnsResolver: `127.0.0.1:${socket.address().port}`,
      }),
    );
    expect(failure?.kind).toBe('connection');
    expect(ms).toBeLessThan(DEADLINE + 1000);
  });
});
