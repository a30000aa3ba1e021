import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { configTarball } from '../../support/runs-harness.js';

/**
 * The flow the spec opens with, as a client drives it against the real daemon: create a
 * configuration version, upload a tarball to its upload address, a run is created automatically,
 * planned, and applied once confirmed.
 */

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

let daemon: RunningDaemon;
let token: string;
const JSONAPI = 'application/vnd.api+json';

async function api(
  method: string,
  path: string,
  body?: unknown,
): Promise<{
  status: number;
  json: {
    data: {
      id: string;
      attributes: Record<string, unknown>;
      relationships: Record<string, { data?: { id: string } | null }>;
    } & { id: string; attributes: Record<string, unknown> }[];
  };
}> {
  const res = await fetch(`${daemon.url}/api/v2${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': JSONAPI }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? ({} as never) : (JSON.parse(text) as never) };
}

beforeAll(async () => {
  const port = await freePort();
  daemon = await startDaemon({
    entry: join(import.meta.dirname, '..', '..', 'support', 'runs-daemon.ts'),
    args: ['--listen', `127.0.0.1:${port}`, '--public-address', `http://127.0.0.1:${port}`],
  });
  token = daemon.bootstrap().runs.user_token;
});
afterAll(async () => {
  await daemon.stop();
});

describe('the runs flow on the real daemon', () => {
  it('uploads a configuration, which queues a run that plans and, once confirmed, applies', async () => {
    expect((await fetch(`${daemon.url}/api/v2/ping`)).status).toBe(204);
    expect(
      (
        await api('POST', '/organizations', {
          data: { type: 'organizations', attributes: { name: 'acme', email: 'ops@example.com' } },
        })
      ).status,
    ).toBe(201);
    const ws = await api('POST', '/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'prod' } },
    });
    expect(ws.status).toBe(201);
    const cv = await api('POST', `/workspaces/${ws.json.data.id}/configuration-versions`, {
      data: { type: 'configuration-versions', attributes: {} },
    });
    expect(cv.status).toBe(201);
    const uploadUrl = String(cv.json.data.attributes['upload-url']);
    expect(uploadUrl.startsWith(daemon.url)).toBe(true);
    const put = await fetch(uploadUrl, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array(configTarball()),
    });
    expect(put.status).toBe(200);

    // Run lists are rate-limited to 30 a minute: find the queued run once, then poll it alone.
    const queued = await eventually(async () => {
      const list = await api('GET', `/workspaces/${ws.json.data.id}/runs`);
      return list.status === 200 ? list.json.data[0] : undefined;
    });
    const run = await eventually(async () => {
      const one = await api('GET', `/runs/${queued.id}`);
      if (one.status !== 200) return undefined;
      return one.json.data.attributes.status === 'planned' ? one.json.data : undefined;
    });
    expect(run.attributes.actions).toMatchObject({ 'is-confirmable': true });
    const plan = await api('GET', `/runs/${run.id}/plan`);
    expect(plan.json.data.attributes['resource-additions']).toBe(1);
    const log = await fetch(String(plan.json.data.attributes['log-read-url']));
    expect(await log.text()).toBe('\u0002Plan: 1 to add, 0 to change, 0 to destroy.\n\u0003');
    // A finished phase's log is served from its outcome event in the database; `<data>/logs/`
    // holds only the output of phases still running (docs/operations.md). The live file goes once
    // the outcome is durable, which the run's status can be seen a moment before.
    const liveFiles = await eventually(async () => {
      const files = readdirSync(join(daemon.dataDir, 'logs'));
      return files.length === 0 ? files : undefined;
    });
    expect(liveFiles).not.toContain(`${plan.json.data.id}.log`);

    expect(
      (await api('POST', `/runs/${run.id}/actions/apply`, { comment: 'ship it' })).status,
    ).toBe(202);
    await eventually(async () => {
      const one = await api('GET', `/runs/${run.id}`);
      return one.status === 200 && one.json.data.attributes.status === 'applied' ? true : undefined;
    });
    // The queue takes the workspace's lock back once it hears of the run's end, a command of its
    // own: a read may see the run applied before that.
    const workspace = await eventually(async () => {
      const one = await api('GET', `/workspaces/${ws.json.data.id}`);
      return one.status === 200 && one.json.data.attributes.locked === false ? one : undefined;
    });
    expect(workspace.json.data.relationships['current-run']?.data?.id).toBe(run.id);
  });
});
