import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskSignature } from '../../../src/runs/executor/tasks.js';
import type { TaskPayload } from '../../../src/runs/executor/tasks.js';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';
import type { Doc, ListDoc } from '../../support/executor-flow.js';

const CONFIG = { 'main.tf': 'resource "aws_instance" "web" {\n  ami = "ami-123"\n}\n' };

/** A run task service on loopback: it records each request and answers with `status`. */
class TaskService {
  readonly received: { headers: IncomingHttpHeaders; body: string; payload: TaskPayload }[] = [];
  status = 200;
  #server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    this.#server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        this.received.push({
          headers: req.headers,
          body,
          payload: JSON.parse(body) as TaskPayload,
        });
        res.writeHead(this.status).end();
      });
    });
    await new Promise<void>((r) => this.#server?.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hook`;
  }

  async stop(): Promise<void> {
    await new Promise((r) => this.#server?.close(r));
  }
}

let t: TestApp;
let flow: Flow;
const service = new TaskService();
beforeAll(async () => {
  t = await startTestApp();
  flow = new Flow(t);
  await service.start();
});
afterAll(async () => {
  await service.stop();
  await t.close();
});

async function withTask(
  enforcement: 'advisory' | 'mandatory',
  hmacKey: string | null = null,
  stage: 'pre_plan' | 'post_plan' = 'post_plan',
) {
  const { org, ws } = await flow.workspace();
  const task = await flow.call(
    'POST',
    `/organizations/${org}/tasks`,
    {
      data: {
        type: 'tasks',
        attributes: { name: 'scanner', url: service.url, 'hmac-key': hmacKey },
      },
    },
    201,
  );
  await flow.call(
    'POST',
    `/workspaces/${ws}/tasks`,
    {
      data: {
        type: 'workspace-tasks',
        attributes: { 'enforcement-level': enforcement, stage },
        relationships: { task: { data: { id: task.doc.data.id, type: 'tasks' } } },
      },
    },
    201,
  );
  const cv = await flow.upload(ws, CONFIG);
  const before = service.received.length;
  const run = await flow.run(ws, {}, cv);
  await t.settle();
  return { org, ws, run, request: service.received[before] };
}

/** The task answers through its callback address, with the token it was given. */
async function callback(
  payload: TaskPayload | undefined,
  status: string,
  token = payload?.access_token ?? '',
  body?: unknown,
) {
  const path = new URL(payload?.task_result_callback_url ?? 'http://x/none').pathname;
  return t.request('PATCH', path, {
    token,
    body: body ?? {
      data: {
        type: 'task-results',
        attributes: { status, message: `scan ${status}`, url: 'https://scanner.example/r/1' },
      },
    },
  });
}

describe('pre-plan run tasks', () => {
  it('hold the plan until the task passes, then queue it through queuing', async () => {
    const { run, request } = await withTask('mandatory', null, 'pre_plan');
    expect(await flow.status(run)).toBe('pre_plan_running');
    expect(request?.payload).toMatchObject({ stage: 'pre_plan' });
    expect(request?.payload).not.toHaveProperty('plan_json_api_url');
    expect((await callback(request?.payload, 'passed')).status).toBe(200);
    await t.settle();
    const details = await flow.get(run);
    expect(details.attributes.status).toBe('planned');
    expect(Object.keys(details.attributes['status-timestamps'] as object)).toEqual(
      expect.arrayContaining([
        'pre-plan-running-at',
        'pre-plan-completed-at',
        'queuing-at',
        'plan-queued-at',
      ]),
    );
  });

  it('a failed mandatory pre-plan task errors the run before it plans', async () => {
    const { run, request } = await withTask('mandatory', null, 'pre_plan');
    await callback(request?.payload, 'failed');
    await t.settle();
    expect(await flow.status(run)).toBe('errored');
    expect((await flow.phase(run, 'plan')).attributes.status).not.toBe('finished');
  });
});

describe('post-plan run tasks', () => {
  it('sends a signed payload, waits in post_plan_running, and continues when the task passes', async () => {
    const { run, request } = await withTask('mandatory', 'shared-secret');
    expect(await flow.status(run)).toBe('post_plan_running');
    expect(request?.payload).toMatchObject({
      payload_version: 1,
      stage: 'post_plan',
      run_id: run,
      task_result_enforcement_level: 'mandatory',
    });
    expect(request?.headers['x-tfc-task-signature']).toBe(
      taskSignature(request?.body ?? '', 'shared-secret'),
    );

    const running = await callback(request?.payload, 'running');
    expect(running.status).toBe(200);
    const passed = await callback(request?.payload, 'passed');
    expect(passed.status, passed.text).toBe(200);
    await t.settle();
    expect(await flow.status(run)).toBe('post_plan_completed');
    const stages = await flow.call<ListDoc>('GET', `/runs/${run}/task-stages`, undefined, 200);
    expect(stages.doc.data[0]?.attributes).toMatchObject({ stage: 'post_plan', status: 'passed' });
    const withStages = await flow.call<Doc & { included: Doc['data'][] }>(
      'GET',
      `/runs/${run}?include=task_stages`,
      undefined,
      200,
    );
    expect(withStages.doc.included.map((r) => [r.type, r.id])).toEqual([
      ['task-stages', stages.doc.data[0]?.id],
    ]);
    expect((await callback(request?.payload, 'failed')).status).toBe(409);

    await flow.action(run, 'apply');
    await t.settle();
    expect(await flow.status(run)).toBe('applied');
  });

  it('a failed mandatory task errors the run; a failed advisory one only reports', async () => {
    const mandatory = await withTask('mandatory');
    await callback(mandatory.request?.payload, 'failed');
    await t.settle();
    expect(await flow.status(mandatory.run)).toBe('errored');

    const advisory = await withTask('advisory');
    await callback(advisory.request?.payload, 'failed');
    await t.settle();
    expect(await flow.status(advisory.run)).toBe('post_plan_completed');
  });

  it('a task that never answers times out on the schedule and errors the run', async () => {
    const { run } = await withTask('mandatory');
    t.clock.advance(9 * 60_000);
    await t.settle();
    expect(await flow.status(run)).toBe('post_plan_running');
    t.clock.advance(60_000);
    await t.settle();
    expect(await flow.status(run)).toBe('errored');
    const stages = await flow.call<ListDoc>('GET', `/runs/${run}/task-stages`, undefined, 200);
    expect(stages.doc.data[0]?.attributes.status).toBe('failed');
  });

  it('a task that refuses the request errors a mandatory stage at once', async () => {
    service.status = 500;
    try {
      const { run } = await withTask('mandatory');
      expect(await flow.status(run)).toBe('errored');
    } finally {
      service.status = 200;
    }
  });

  it('refuses callbacks with a wrong token or a malformed body', async () => {
    const { request } = await withTask('advisory');
    expect((await callback(request?.payload, 'passed', 'not-the-token')).status).toBe(404);
    expect((await callback(request?.payload, 'passed', '', undefined)).status).toBe(401);
    const bad = await callback(request?.payload, 'passed', undefined, {
      data: { type: 'task-results', attributes: { status: 'finished' } },
    });
    expect(bad.status).toBe(422);
    expect((await callback(request?.payload, 'passed')).status).toBe(200);
  });

  it('refuses a task with a bad url and an attachment to an unknown task', async () => {
    const { org, ws } = await flow.workspace();
    await flow.call(
      'POST',
      `/organizations/${org}/tasks`,
      { data: { type: 'tasks', attributes: { name: 'x', url: 'ftp://nope' } } },
      422,
    );
    await flow.call(
      'POST',
      `/workspaces/${ws}/tasks`,
      {
        data: {
          type: 'workspace-tasks',
          attributes: { 'enforcement-level': 'mandatory' },
          relationships: { task: { data: { id: 'task-none', type: 'tasks' } } },
        },
      },
      422,
    );
  });
});
