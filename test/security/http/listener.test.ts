import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { startDaemon, type RunningDaemon } from '../../support/daemon.js';

/**
 * Issue 14 (part): what the real daemon's listener does with garbage, slow clients and bodies
 * nested deep enough to overflow a recursive walk.
 */

/** The first bytes of a TLS 1.2 ClientHello, as a client that mistook the scheme sends them. */
const CLIENT_HELLO = Buffer.from(
  '16030100a5010000a10303' +
    '00'.repeat(32) +
    '000020c02bc02fc02cc030cca9cca8c009c013c00ac014009c009d002f0035c012000a0100',
  'hex',
);

/** Write `bytes`, then collect what the daemon answers until it closes the connection. */
function exchange(
  url: string,
  bytes: Buffer | string,
): Promise<{ answer: string; closedAfterMs: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve({ answer, closedAfterMs: Date.now() - started }));
    // A bound for the test only: a daemon that never closes fails it rather than hanging.
    socket.setTimeout(15_000, () => socket.destroy(new Error('the daemon did not close')));
  });
}

const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('the listener', () => {
  let d: RunningDaemon;
  beforeAll(async () => {
    d = await startDaemon({
      args: ['--headers-timeout-ms', '1000', '--request-timeout-ms', '2000'],
    });
  });
  afterAll(async () => {
    await d.stop();
  });

  it('answers TLS bytes on the plain listener with 400 Bad Request and closes', async () => {
    const { answer } = await exchange(d.url, CLIENT_HELLO);
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toContain('Connection: close');
  });

  it('answers any garbage with 400 and closes', async () => {
    const { answer } = await exchange(d.url, '\x00\x01\x02 not http at all\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
  });

  it('answers headers larger than the parser takes with 431 and closes', async () => {
    const { answer } = await exchange(
      d.url,
      `GET /v1/sys/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
  });

  it('closes a connection whose headers do not arrive within the headers timeout', async () => {
    const { answer, closedAfterMs } = await exchange(
      d.url,
      'GET /v1/sys/health HTTP/1.1\r\nHost: x\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(closedAfterMs).toBeGreaterThanOrEqual(900);
  });

  it('closes a request whose body does not arrive within the request timeout', async () => {
    const { answer, closedAfterMs } = await exchange(
      d.url,
      'POST /v1/auth/token/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"po',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(closedAfterMs).toBeGreaterThanOrEqual(1900);
  });

  it('refuses a deeply nested /v1 body with 400 in the Vault dialect', async () => {
    const r = await httpRequest(d.url, 'POST', '/v1/auth/token/create', {
      token: d.bootstrap().secrets.root_token,
      tokenHeader: 'x-vault-token',
      rawBody: `{"meta":{"a":${deep(50_000)}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({ errors: ['request body nests deeper than 64 levels'] });
  });

  it('refuses a deeply nested /api/v2 body with 400 in the JSON:API dialect', async () => {
    const r = await httpRequest(d.url, 'POST', '/api/v2/organizations', {
      token: d.bootstrap().runs.user_token,
      rawBody: `{"data":{"type":"organizations","attributes":{"name":${deep(50_000)}}}}`,
      headers: { 'content-type': 'application/vnd.api+json' },
    });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({
      errors: [
        { status: '400', title: 'bad request', detail: 'request body nests deeper than 64 levels' },
      ],
    });
  });
});
