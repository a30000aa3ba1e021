import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { AcmeTestClient } from '../../support/acme-client.js';
import { eventually, startDaemon, type RunningDaemon } from '../../support/daemon.js';

type Json = Record<string, unknown>;
const running: RunningDaemon[] = [];
let web: Server | undefined;
afterAll(async () => {
  for (const d of running) await d.stop('SIGKILL');
  await new Promise<void>((resolve) => (web ? web.close(() => resolve()) : resolve()));
});

async function configure(d: RunningDaemon, first: boolean) {
  const token = d.bootstrap().secrets.root_token;
  const calls: [string, Json][] = [
    ...(first
      ? [
          ['root/generate/internal', { common_name: 'Restart Root', key_type: 'ec' }] as [
            string,
            Json,
          ],
        ]
      : []),
    ['config/cluster', { path: `${d.url}/v1/pki` }],
    ...(first ? [['config/acme', { enabled: true }] as [string, Json]] : []),
  ];
  for (const [path, body] of calls) {
    const res = await httpRequest(d.url, 'POST', `/v1/pki/${path}`, { token, body });
    expect(res.status, res.text).toBe(200);
  }
}

describe('ACME validations survive a killed daemon', () => {
  it('a validation in flight when the daemon is killed is tried again after the restart', async () => {
    // The client's http-01 server first takes connections and never answers.
    const client: { answer?: (token: string) => string | undefined } = {};
    let attempts = 0;
    web = createServer((req, res) => {
      attempts += 1;
      const token = /\/acme-challenge\/([\w-]+)$/.exec(req.url ?? '')?.[1] ?? '';
      const body = client.answer?.(token);
      if (body === undefined) return; // hang
      res.end(body);
    });
    await new Promise<void>((resolve) => web!.listen(0, '127.0.0.1', resolve));
    const env = { KEEL_ACME_HTTP_PORT: String((web.address() as AddressInfo).port) };
    const args = ['--poll-interval-ms', '50'];

    const first = await startDaemon({ env, args });
    running.push(first);
    await configure(first, true);
    const c = new AcmeTestClient(first.url, `${first.url}/v1/pki/acme/directory`);
    expect((await c.register()).status).toBe(201);
    const d = await c.directory();
    const order = await c.post(d.newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] });
    const orderPath = c.path(order.headers.get('location')!);
    const authzUrl = (order.json as { authorizations: string[] }).authorizations[0]!;
    const authz = (await c.post(authzUrl, undefined)).json as { challenges: Json[] };
    const http = authz.challenges.find((x) => x.type === 'http-01')!;
    const started = await c.post(String(http.url), {});
    expect((started.json as Json).status).toBe('processing');
    await eventually(async () => (attempts > 0 ? true : undefined));
    await first.stop('SIGKILL');

    client.answer = (token) =>
      token === http.token ? c.keyAuthorization(String(http.token)) : undefined;
    const again = await startDaemon({ dataDir: first.dataDir, env, args });
    running.push(again);
    await configure(again, false);
    const moved = Object.assign(
      new AcmeTestClient(again.url, `${again.url}/v1/pki/acme/directory`, c.key),
      { kid: c.kid!.replace(first.url, again.url) },
    );
    const status = await eventually(async () => {
      const res = await moved.post(`${again.url}${orderPath}`, undefined);
      const s = (res.json as Json).status;
      return s === 'ready' ? s : undefined;
    });
    expect(status).toBe('ready');
  }, 60_000);
});
