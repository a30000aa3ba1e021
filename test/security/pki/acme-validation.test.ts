import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcmeTestClient } from '../../support/acme-client.js';
import { eventually, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { raw } from '../support.js';

/**
 * Finding 5 of docs/security.md ("ACME accounts and validation"), against the real daemon: a
 * client's http-01 server that answers slowly must not hold a validation open. Each attempt has
 * a wall-clock deadline (10 s: connect, headers and body) and reads at most 512 bytes of body,
 * then stops reading; the failed attempt is recorded on the challenge, which says when to poll
 * again (`Retry-After`).
 */
const DEADLINE_MS = 10_000;

/** An http-01 server that never finishes its answer: 64 KiB or one byte per tick. */
async function slowServer() {
  const mode = { chunk: 64 * 1024, everyMs: 500 };
  const connections: { openedAt: number; closedAt?: number; sent: number }[] = [];
  const server: Server = createServer((req, res) => {
    const c = { openedAt: Date.now(), sent: 0, closedAt: undefined as number | undefined };
    connections.push(c);
    res.writeHead(200, { 'content-type': 'text/plain' });
    const send = () => {
      res.write(Buffer.alloc(mode.chunk, 0x61));
      c.sent += mode.chunk;
    };
    send();
    const timer = setInterval(send, mode.everyMs);
    req.socket.on('close', () => {
      clearInterval(timer);
      c.closedAt = Date.now();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    mode,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let d: RunningDaemon;
let slow: Awaited<ReturnType<typeof slowServer>>;

beforeAll(async () => {
  slow = await slowServer();
  d = await startDaemon({
    args: ['--acme-http-port', String(slow.port), '--poll-interval-ms', '50'],
  });
  const root = d.bootstrap().secrets.root_token;
  for (const [path, body] of [
    ['root/generate/internal', { common_name: 'Keel ACME Root', key_type: 'ec' }],
    ['config/cluster', { path: `${d.url}/v1/pki` }],
    ['config/acme', { enabled: true }],
  ] as const) {
    const res = await raw(d.url, 'POST', `/v1/pki/${path}`, { token: root, body });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
  }
});
afterAll(async () => {
  await d?.stop();
  await slow?.close();
});

/** Starts an http-01 validation of 127.0.0.1 and waits for its first connection to close. */
async function validateAgainstSlowServer() {
  const c = new AcmeTestClient(d.url, `${d.url}/v1/pki/acme/directory`);
  await c.register();
  const { newOrder } = await c.directory();
  const order = await c.post(newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] });
  expect(order.status, order.text).toBe(201);
  const [authzUrl] = (order.json as { authorizations: string[] }).authorizations;
  const authz = (await c.post(authzUrl!, undefined)).json as {
    challenges: { type: string; url: string }[];
  };
  const http = authz.challenges.find((x) => x.type === 'http-01')!;
  const before = slow.connections.length;
  const started = await c.post(http.url, {});
  expect((started.json as { status: string }).status).toBe('processing');
  const connection = await eventually(async () => {
    const conn = slow.connections[before];
    return conn?.closedAt === undefined ? undefined : conn;
  }, DEADLINE_MS + 5000);
  const challenge = await eventually(async () => {
    const res = await c.post(http.url, undefined);
    return (res.json as { error?: unknown }).error === undefined ? undefined : res;
  });
  return { connection, challenge, authz: await c.post(authzUrl!, undefined) };
}

describe('an http-01 validation against a slow server', () => {
  it('stops reading a body that trickles 64 KiB every 0.5 s at 512 bytes', async () => {
    slow.mode.chunk = 64 * 1024;
    const { connection, challenge, authz } = await validateAgainstSlowServer();
    // The first chunk was already past the cap: the connection closed long before the deadline.
    expect(connection.closedAt! - connection.openedAt).toBeLessThan(DEADLINE_MS / 2);
    expect(connection.sent).toBeLessThanOrEqual(2 * 64 * 1024);
    const body = challenge.json as { status: string; error: { type: string; detail: string } };
    expect(body.status).toBe('processing');
    expect(body.error.detail).toContain('more than 512 bytes');
    expect(Number(challenge.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(authz.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('cuts off a body dripping under the cap at the attempt deadline', async () => {
    slow.mode.chunk = 1;
    slow.mode.everyMs = 200;
    const { connection, challenge } = await validateAgainstSlowServer();
    const held = connection.closedAt! - connection.openedAt;
    expect(held).toBeGreaterThan(DEADLINE_MS - 1000);
    expect(held).toBeLessThan(DEADLINE_MS + 2000);
    const body = challenge.json as { status: string; error: { type: string; detail: string } };
    expect(body.status).toBe('processing');
    expect(body.error.type).toBe('urn:ietf:params:acme:error:connection');
    expect(body.error.detail).toContain('10 s');
  });
});
