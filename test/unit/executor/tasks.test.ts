import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/core/errors.js';
import {
  DEFAULT_TASK_TIMEOUT_MS,
  buildTaskPayload,
  callbackTokenMatches,
  deliverTask,
  parseTaskCallback,
  stageOutcome,
  taskDeadline,
  taskSignature,
} from '../../../src/runs/executor/tasks.js';
import type { TaskRunContext } from '../../../src/runs/executor/tasks.js';

const run: TaskRunContext = {
  stage: 'post_plan',
  baseUrl: 'http://127.0.0.1:8420',
  runId: 'run-1',
  runMessage: 'Queued manually via the API',
  runCreatedAt: '2026-01-01T00:00:00.000Z',
  runCreatedBy: 'admin',
  isSpeculative: false,
  organizationName: 'acme',
  workspaceId: 'ws-1',
  workspaceName: 'web',
  workspaceWorkingDirectory: '',
  configurationVersionId: 'cv-1',
  planId: 'plan-1',
};

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A task service on loopback answering with `status`, recording what it was sent. */
async function taskServer(status: number): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(status).end();
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

describe('run task requests', () => {
  it('builds the payload the reference system sends', () => {
    const payload = buildTaskPayload(run, {
      id: 'taskrs-1',
      accessToken: 'tok',
      enforcement: 'mandatory',
    });
    expect(payload).toMatchObject({
      payload_version: 1,
      stage: 'post_plan',
      access_token: 'tok',
      task_result_id: 'taskrs-1',
      task_result_enforcement_level: 'mandatory',
      task_result_callback_url: 'http://127.0.0.1:8420/api/v2/task-results/taskrs-1/callback',
      plan_json_api_url: 'http://127.0.0.1:8420/api/v2/plans/plan-1/json-output',
      configuration_version_download_url:
        'http://127.0.0.1:8420/api/v2/configuration-versions/cv-1/download',
      run_app_url: 'http://127.0.0.1:8420/app/acme/workspaces/web/runs/run-1',
      workspace_id: 'ws-1',
      vcs_repo_url: null,
    });
    const prePlan = buildTaskPayload(
      { ...run, stage: 'pre_plan' },
      { id: 'taskrs-2', accessToken: 't', enforcement: 'advisory' },
    );
    expect(prePlan).not.toHaveProperty('plan_json_api_url');
  });

  it('signs the exact body with HMAC-SHA512 when the task has a key', async () => {
    const server = await taskServer(200);
    const payload = buildTaskPayload(run, {
      id: 'taskrs-1',
      accessToken: 'tok',
      enforcement: 'mandatory',
    });
    expect(await deliverTask({ url: server.url, hmacKey: 'secret' }, payload)).toEqual({
      delivered: true,
    });
    const [got] = server.received;
    expect(got?.headers['content-type']).toBe('application/json');
    expect(got?.headers['x-tfc-task-signature']).toBe(taskSignature(got?.body ?? '', 'secret'));
    expect(got?.headers['x-tfc-task-signature']).toMatch(/^[0-9a-f]{128}$/);
    expect(JSON.parse(got?.body ?? '{}')).toEqual(payload);
  });

  it('sends no signature without a key', async () => {
    const server = await taskServer(200);
    await deliverTask(
      { url: server.url, hmacKey: null },
      buildTaskPayload(run, { id: 'r', accessToken: 't', enforcement: 'advisory' }),
    );
    expect(server.received[0]?.headers).not.toHaveProperty('x-tfc-task-signature');
  });

  it('a non-200 answer is a failed delivery', async () => {
    const server = await taskServer(500);
    expect(
      await deliverTask(
        { url: server.url, hmacKey: null },
        buildTaskPayload(run, { id: 'r', accessToken: 't', enforcement: 'advisory' }),
      ),
    ).toEqual({
      delivered: false,
      message: 'the task answered 500 instead of 200',
    });
  });

  it('an unreachable task is a failed delivery', async () => {
    const server = await taskServer(200);
    const url = server.url;
    await new Promise((r) => servers.pop()?.close(r));
    const result = await deliverTask(
      { url, hmacKey: null },
      buildTaskPayload(run, { id: 'r', accessToken: 't', enforcement: 'advisory' }),
    );
    expect(result.delivered).toBe(false);
  });
});

describe('run task callbacks', () => {
  it('parses status, message and url', () => {
    expect(
      parseTaskCallback({
        data: {
          type: 'task-results',
          attributes: { status: 'passed', message: '4 passed', url: 'https://scanner.example/r/1' },
        },
      }),
    ).toEqual({
      status: 'passed',
      message: '4 passed',
      url: 'https://scanner.example/r/1',
    });
    expect(
      parseTaskCallback({ data: { type: 'task-results', attributes: { status: 'running' } } }),
    ).toEqual({ status: 'running', message: null, url: null });
  });

  it.each([
    ['no body', undefined, 'body: Invalid input'],
    ['a wrong type', { data: { type: 'runs', attributes: { status: 'passed' } } }, 'data.type'],
    [
      'an unknown status',
      { data: { type: 'task-results', attributes: { status: 'done' } } },
      'data.attributes.status',
    ],
    [
      'a bad url',
      {
        data: {
          type: 'task-results',
          attributes: { status: 'failed', url: 'javascript:alert(1)' },
        },
      },
      'data.attributes.url',
    ],
  ])('refuses %s', (_name, body, path) => {
    expect(() => parseTaskCallback(body)).toThrow(ValidationError);
    expect(() => parseTaskCallback(body)).toThrow(path);
  });

  it('compares callback tokens exactly', () => {
    expect(callbackTokenMatches('abc', 'abc')).toBe(true);
    expect(callbackTokenMatches('abd', 'abc')).toBe(false);
    expect(callbackTokenMatches('ab', 'abc')).toBe(false);
  });
});

describe('task stages', () => {
  it('run while any result is unfinished, fail on a mandatory failure, pass otherwise', () => {
    expect(
      stageOutcome([
        { status: 'passed', enforcement: 'mandatory' },
        { status: 'running', enforcement: 'advisory' },
      ]),
    ).toBe('running');
    expect(
      stageOutcome([
        { status: 'passed', enforcement: 'mandatory' },
        { status: 'failed', enforcement: 'advisory' },
      ]),
    ).toBe('passed');
    expect(stageOutcome([{ status: 'errored', enforcement: 'mandatory' }])).toBe('failed');
    expect(stageOutcome([{ status: 'unreachable', enforcement: 'mandatory' }])).toBe('failed');
    expect(stageOutcome([])).toBe('passed');
  });

  it('time out ten minutes after they start by default', () => {
    expect(taskDeadline(new Date('2026-01-01T00:00:00.000Z')).toISOString()).toBe(
      '2026-01-01T00:10:00.000Z',
    );
    expect(DEFAULT_TASK_TIMEOUT_MS).toBe(600_000);
  });
});
