import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEachProjectionRebuildsAlone } from '../../support/rebuild.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createRun, drivePlan, readyWorkspace, status } from '../../support/runs-flow.js';
import { retryDelaysOf } from '../../../src/runs/notifications/deliver.js';

/** Notification configurations: generic webhooks, signed, retried, logged, verified. */

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A local webhook listener: answers with the next queued status (200 once the queue is empty). */
class Listener {
  readonly received: Received[] = [];
  readonly answers: number[] = [];
  #server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        this.received.push({ headers: req.headers, body });
        res.statusCode = this.answers.shift() ?? 200;
        res.end('ok');
      });
    });
    this.#server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => this.#server?.close(resolve));
  }
}

const TOKEN = 'webhook-signing-secret-9931';

let h: RunsHarness;
let RETRY_DELAYS_MS: readonly [number, number];
const listener = new Listener();
beforeAll(async () => {
  h = await startRunsHarness();
  const [first = 0, second = 0] = retryDelaysOf(h.core.config.notificationRetryMs);
  RETRY_DELAYS_MS = [first, second];
  await listener.start();
});
afterAll(async () => {
  await listener.stop();
  await h.close();
});

const configure = (ws: string, attributes: Record<string, unknown>) =>
  h.api('POST', `/workspaces/${ws}/notification-configurations`, {
    body: {
      data: {
        type: 'notification-configurations',
        attributes: {
          'destination-type': 'generic',
          name: 'hook',
          url: listener.url,
          ...attributes,
        },
      },
    },
  });

const sign = (body: string) => createHmac('sha512', TOKEN).update(body).digest('hex');

describe('notification configurations', () => {
  it('deliver signed payloads for the chosen triggers, retry a failure, and log each attempt', async () => {
    const { ws } = await readyWorkspace(h);
    const made = await configure(ws, {
      enabled: true,
      token: TOKEN,
      triggers: ['run:created', 'run:completed'],
    });
    expect(made.status, made.text).toBe(201);
    expect(made.json.data.attributes).toMatchObject({
      'destination-type': 'generic',
      enabled: true,
      token: null,
      triggers: ['run:created', 'run:completed'],
    });
    const id = made.json.data.id;
    listener.received.length = 0;
    listener.answers.push(500);

    const run = await createRun(h, ws);
    await h.settle();
    // the first attempt failed (500); the second waits for its backoff, on the fake clock
    expect(listener.received).toHaveLength(1);
    h.clock.advance(RETRY_DELAYS_MS[0] - 1);
    await h.settle();
    expect(listener.received).toHaveLength(1);
    const waiting = (await h.api('GET', `/notification-configurations/${id}`)).json.data.attributes[
      'delivery-responses'
    ] as Record<string, unknown>[];
    expect(waiting.map((d) => [d.attempt, d.code, d.successful])).toEqual([[1, '500', 'false']]);
    h.clock.advance(1);
    await h.settle();
    // ... and was delivered
    expect(listener.received).toHaveLength(2);
    const [first, second] = listener.received as [Received, Received];
    expect(second.body).toBe(first.body);
    expect(second.headers['x-tfe-notification-signature']).toBe(sign(second.body));
    const payload = JSON.parse(second.body) as Record<string, unknown> & {
      notifications: Record<string, unknown>[];
    };
    expect(payload).toMatchObject({
      payload_version: 1,
      notification_configuration_id: id,
      run_id: run.id,
      workspace_id: ws,
    });
    expect(payload.notifications).toEqual([
      expect.objectContaining({
        trigger: 'run:created',
        message: 'Run Created',
        run_status: 'pending',
      }),
    ]);

    // planning is not a chosen trigger; a plan without changes completes the run
    await drivePlan(h, run.id, false);
    await h.settle();
    expect(await status(h, run.id)).toBe('planned_and_finished');
    expect(listener.received).toHaveLength(3);
    const done = JSON.parse(listener.received[2]!.body) as {
      notifications: Record<string, unknown>[];
    };
    expect(done.notifications[0]).toMatchObject({
      trigger: 'run:completed',
      message: 'Run Planned and Finished',
      run_status: 'planned_and_finished',
    });

    const shown = await h.api('GET', `/notification-configurations/${id}`);
    const log = shown.json.data.attributes['delivery-responses'] as Record<string, unknown>[];
    expect(log.map((d) => [d.trigger, d.attempt, d.code, d.successful])).toEqual([
      ['run:completed', 1, '200', 'true'],
      ['run:created', 2, '200', 'true'],
      ['run:created', 1, '500', 'false'],
    ]);
    // the token rests sealed, in the log and in the read model
    expect(JSON.stringify(h.core.store.readAll(0, 100_000))).not.toContain(TOKEN);
    expect(JSON.stringify(h.projections.dump())).not.toContain(TOKEN);
  });

  it('gives up after three attempts, and a failing hook never holds the run up', async () => {
    const { ws } = await readyWorkspace(h);
    const id = (await configure(ws, { enabled: true, triggers: ['run:created', 'run:planning'] }))
      .json.data.id;
    listener.received.length = 0;
    listener.answers.push(500, 502, 503, 500, 500, 500);
    const run = await createRun(h, ws);
    await h.settle();
    await h.runs.executor.planStarted(run.id);
    await h.settle();
    expect(await status(h, run.id)).toBe('planning');
    expect(listener.received).toHaveLength(2);
    h.clock.advance(RETRY_DELAYS_MS[0]);
    await h.settle();
    expect(listener.received).toHaveLength(4);
    // the third attempt waits longer than the second did
    h.clock.advance(RETRY_DELAYS_MS[0]);
    await h.settle();
    expect(listener.received).toHaveLength(4);
    h.clock.advance(RETRY_DELAYS_MS[1] - RETRY_DELAYS_MS[0]);
    await h.settle();
    expect(listener.received).toHaveLength(6);
    // and none after it
    h.clock.advance(RETRY_DELAYS_MS[1] * 10);
    await h.settle();
    expect(listener.received).toHaveLength(6);
    const log = (await h.api('GET', `/notification-configurations/${id}`)).json.data.attributes[
      'delivery-responses'
    ] as Record<string, unknown>[];
    expect(log.every((d) => d.successful === 'false')).toBe(true);
    expect(log.map((d) => d.attempt).sort()).toEqual([1, 1, 2, 2, 3, 3]);
    listener.answers.length = 0;
  });

  it('a retry waiting for its backoff is dropped when the hook is disabled or deleted', async () => {
    const { ws } = await readyWorkspace(h);
    const disabled = (await configure(ws, { enabled: true, triggers: ['run:created'] })).json.data
      .id;
    const deleted = (await configure(ws, { enabled: true, triggers: ['run:created'] })).json.data
      .id;
    listener.received.length = 0;
    listener.answers.push(500, 500);
    await createRun(h, ws);
    await h.settle();
    expect(listener.received).toHaveLength(2);
    const off = await h.api('PATCH', `/notification-configurations/${disabled}`, {
      body: { data: { attributes: { enabled: false } } },
    });
    expect(off.status, off.text).toBe(200);
    expect((await h.api('DELETE', `/notification-configurations/${deleted}`)).status).toBe(204);
    h.clock.advance(RETRY_DELAYS_MS[1] * 2);
    await h.settle();
    expect(listener.received).toHaveLength(2);
    const due = h.core.db
      .prepare("SELECT key FROM schedule WHERE kind = 'notification-retry'")
      .all() as { key: string }[];
    expect(due.filter((r) => r.key.includes(disabled) || r.key.includes(deleted))).toEqual([]);
  });

  it('verify sends a verification payload and shows the answer; disabled hooks stay quiet', async () => {
    const { ws } = await readyWorkspace(h);
    const id = (await configure(ws, { enabled: false, token: TOKEN, triggers: ['run:created'] }))
      .json.data.id;
    listener.received.length = 0;
    await createRun(h, ws);
    await h.settle();
    expect(listener.received).toHaveLength(0);
    const verified = await h.api('POST', `/notification-configurations/${id}/actions/verify`);
    expect(verified.status, verified.text).toBe(200);
    expect(listener.received).toHaveLength(1);
    const body = listener.received[0]!.body;
    expect(listener.received[0]!.headers['x-tfe-notification-signature']).toBe(sign(body));
    expect(JSON.parse(body)).toMatchObject({
      run_id: null,
      notifications: [{ trigger: 'verification', message: 'Verification of hook' }],
    });
    expect(verified.json.data.attributes['delivery-responses']).toEqual([
      expect.objectContaining({ trigger: 'verification', code: '200', successful: 'true' }),
    ]);
    const off = await h.api('PATCH', `/notification-configurations/${id}`, {
      body: { data: { attributes: { enabled: true, token: null } } },
    });
    expect(off.json.data.attributes).toMatchObject({ enabled: true, 'has-token': false });
    expect((await h.api('DELETE', `/notification-configurations/${id}`)).status).toBe(204);
    expect((await h.api('GET', `/notification-configurations/${id}`)).status).toBe(404);
  });

  it('refuses what Keel does not deliver, by name', async () => {
    const { ws } = await readyWorkspace(h);
    const slack = await configure(ws, { 'destination-type': 'slack' });
    expect(slack.status).toBe(422);
    expect(slack.json.errors[0]!.detail).toMatch(/generic webhooks only/);
    const drift = await configure(ws, { triggers: ['assessment:drifted'] });
    expect(drift.status).toBe(422);
    expect(drift.json.errors[0]!.detail).toMatch(/assessment:drifted/);
    expect((await configure(ws, { 'email-addresses': ['a@example.com'] })).status).toBe(422);
    expect((await configure(ws, { url: 'ftp://example.com/x' })).status).toBe(422);
  });

  it('the configurations and the delivery log rebuild from the log as they were', async () => {
    const { ws } = await readyWorkspace(h);
    const id = (await configure(ws, { enabled: true, triggers: ['run:created'] })).json.data.id;
    await createRun(h, ws);
    await h.settle();
    const before = (await h.api('GET', `/notification-configurations/${id}`)).text;
    const pages = (after: number, limit: number) => h.core.store.readAll(after, limit);
    expectEachProjectionRebuildsAlone(h.projections, pages);
    expect((await h.api('GET', `/notification-configurations/${id}`)).text).toBe(before);
  });

  it('a delivery step that keeps failing is dead-lettered and the run goes on', async () => {
    const { ws } = await readyWorkspace(h);
    await configure(ws, { enabled: true, triggers: ['run:created'] });
    // the delivery log's table gone: every step of the reactor throws
    h.core.db.exec('DROP TABLE runs_notification_deliveries');
    try {
      const run = await createRun(h, ws);
      await h.settle();
      expect(await status(h, run.id)).toBe('plan_queued');
      const dead = h.core.store
        .readStream('dead-letter-runs-notifications')
        .map((e) => e.data as { eventType: string; runId: string | null; stream: string });
      expect(dead).toContainEqual(
        expect.objectContaining({ eventType: 'RunCreated', stream: run.id, runId: null }),
      );
    } finally {
      h.projections.rebuildOnly(['runs-notifications'], (after, limit) =>
        h.core.store.readAll(after, limit),
      );
    }
  });
});
