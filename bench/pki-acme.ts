/**
 * ACME orders per second through the daemon's HTTP API: each order is new-order, the
 * authorization, the http-01 answer, the validation the schedule runs, finalize (a CSR signed
 * verbatim) and the certificate download — every step event-logged. Run with `npm run bench -- pki`.
 */
import type { BenchResult } from './support.js';
import { rate } from './pki-support.js';
import { acmeCsr } from '../test/support/acme-app.js';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AcmeTestClient, http01Server } from '../test/support/acme-client.js';
import { startDaemon } from './pki.js';

const CONCURRENCY = 16;
const ORDERS = 600;

type Json = Record<string, unknown>;

/** The schedule's poll interval in the ACME daemon: a validation waits for the next tick. */
const POLL_MS = 10;

/**
 * Orders per second against a daemon of its own (in `dir`), its schedule polled every 10 ms,
 * with the http-01 answers served from this process.
 */
export async function benchAcme(dir: string): Promise<BenchResult[]> {
  const web = await http01Server();
  mkdirSync(dir, { recursive: true });
  const daemon = await startDaemon(dir, { acmeHttpPort: web.port, pollIntervalMs: POLL_MS });
  try {
    return await measure(daemon, web, POLL_MS);
  } finally {
    daemon.proc.kill();
    await web.close();
  }
}

async function measure(
  daemon: { url: string; token: string },
  web: Awaited<ReturnType<typeof http01Server>>,
  pollMs: number,
): Promise<BenchResult[]> {
  const headers = { 'x-vault-token': daemon.token, 'content-type': 'application/json' };
  for (const [path, body] of [
    ['root/generate/internal', { common_name: 'ACME Bench Root', key_type: 'ec' }],
    ['config/cluster', { path: `${daemon.url}/v1/pki` }],
    ['config/acme', { enabled: true }],
  ] as const) {
    const res = await fetch(`${daemon.url}/v1/pki/${path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  }
  const directory = `${daemon.url}/v1/pki/acme/directory`;
  const clients = await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      const c = new AcmeTestClient(daemon.url, directory, undefined, { keepAlive: true });
      await c.register();
      return c;
    }),
  );
  const csr = await acmeCsr({ ip: ['127.0.0.1'] });
  const ok = async (c: AcmeTestClient, url: string, payload: unknown): Promise<Json> => {
    const res = await c.post(url, payload);
    if (res.status >= 300) throw new Error(`${url}: ${res.status} ${res.text}`);
    return res.json as Json;
  };
  const d = await clients[0]!.directory();
  const order = async (i: number) => {
    const c = clients[i % CONCURRENCY]!;
    const created = await c.post(d.newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] });
    const orderUrl = created.headers.get('location')!;
    const [authzUrl] = (created.json as { authorizations: string[] }).authorizations;
    const authz = await ok(c, authzUrl!, undefined);
    const http = (authz.challenges as Json[]).find((x) => x.type === 'http-01')!;
    web.tokens.set(String(http.token), c.keyAuthorization(String(http.token)));
    await ok(c, String(http.url), {});
    let current = await ok(c, orderUrl, undefined);
    while (current.status === 'pending') {
      await new Promise((r) => setTimeout(r, pollMs));
      current = await ok(c, orderUrl, undefined);
    }
    const done = await ok(c, String(current.finalize), { csr });
    await c.post(String(done.certificate), undefined);
    web.tokens.delete(String(http.token));
  };
  const perSecond = await rate(ORDERS, CONCURRENCY, order, 50);
  // The same CSR through sign-verbatim in the same daemon and moment: what one order's
  // issuance alone costs, so the ratio holds whatever the machine's load.
  const pem = `-----BEGIN CERTIFICATE REQUEST-----\n${Buffer.from(csr, 'base64url').toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
  const signed = await rate(ORDERS * 4, CONCURRENCY, async () => {
    const res = await fetch(`${daemon.url}/v1/pki/sign-verbatim`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ csr: pem }),
    });
    if (!res.ok) throw new Error(`sign-verbatim: ${res.status} ${await res.text()}`);
  });
  return [
    {
      name: 'pki sign-verbatim ec P-256, same daemon (HTTP, stored + event-logged)',
      value: Math.round(signed),
      unit: 'certs/s',
      note: `concurrency ${CONCURRENCY}; the ACME row's baseline`,
    },
    {
      name: 'pki ACME order, http-01 (HTTP, every step event-logged)',
      value: Number(perSecond.toFixed(1)),
      unit: 'orders/s',
      note: `concurrency ${CONCURRENCY}; new-order, authz, challenge, validation (schedule polled every ${pollMs} ms), finalize, download: ~9 requests and 12 events per order; ACME/sign = ${(perSecond / signed).toFixed(3)}`,
    },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-acme-'));
  try {
    for (const r of await benchAcme(dir))
      console.log(`${r.name}  ${r.value} ${r.unit}${r.note ? `  (${r.note})` : ''}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
