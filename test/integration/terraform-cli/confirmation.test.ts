import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { tarball } from '../../support/configuration.js';
import { Flow, type Doc, type ListDoc } from '../../support/executor-flow.js';
import { applyHeader } from '../../../src/runs/executor/service.js';

/** A run applies only with a confirmation, or an auto-apply, its creator was entitled to. */

const config = (input: string) => ({
  'main.tf': `resource "terraform_data" "a" {\n  input = "${input}"\n}\n`,
});

let t: TestApp;
let flow: Flow;
beforeAll(async () => {
  t = await startTestApp();
  flow = new Flow(t);
});
afterAll(async () => t.close());

describe('a run nobody confirms', () => {
  it('waits in the queue, plans, and stays paused for the confirmation the CLI never sent', async () => {
    const { ws } = await flow.workspace({ 'auto-apply': true });
    const holder = await flow.run(
      ws,
      { 'auto-apply': false },
      await flow.upload(ws, config('one')),
    );
    const left = await flow.run(ws, { 'auto-apply': false }, await flow.upload(ws, config('two')));
    await t.settle();
    expect(await flow.status(holder)).toBe('planned');
    expect(await flow.status(left)).toBe('pending');
    await flow.action(holder, 'apply');
    await t.settle();
    expect(await flow.status(holder)).toBe('applied');
    // the CLI drops an apply log's first three lines: they are the header, not the driver's output
    const log = (await flow.phase(holder, 'apply')).log;
    expect(log.startsWith('\u0002')).toBe(true);
    const lines = log.slice(1).split('\n');
    expect(lines.slice(0, 3)).toEqual(applyHeader('builtin'));
    expect(lines[3]).toBe('terraform_data.a: Creating...');
    t.clock.advance(24 * 3600_000);
    await t.settle();
    const run = await flow.get(left);
    expect(run.attributes).toMatchObject({ status: 'planned', 'auto-apply': false });
  });

  it('an upload queues a run that auto-applies only when the uploader may apply', async () => {
    const { org, ws } = await flow.workspace({ 'auto-apply': true });
    const team = await flow.call<Doc>(
      'POST',
      `/organizations/${org}/teams`,
      { data: { type: 'teams', attributes: { name: 'planners' } } },
      201,
    );
    await flow.call(
      'POST',
      '/team-workspaces',
      {
        data: {
          type: 'team-workspaces',
          attributes: { access: 'plan' },
          relationships: {
            team: { data: { type: 'teams', id: team.doc.data.id } },
            workspace: { data: { type: 'workspaces', id: ws } },
          },
        },
      },
      201,
    );
    const tok = await flow.call<Doc>(
      'POST',
      `/teams/${team.doc.data.id}/authentication-token`,
      {},
      201,
    );
    const token = String(tok.doc.data.attributes.token);
    const cv = await t.request('POST', `/api/v2/workspaces/${ws}/configuration-versions`, {
      token,
      body: { data: { type: 'configuration-versions', attributes: {} } },
    });
    expect(cv.status, cv.text).toBe(201);
    const upload = new URL(String((cv.json as Doc).data.attributes['upload-url']));
    const put = await t.request('PUT', upload.pathname, {
      token: null,
      rawBody: tarball(config('three')),
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(put.status, put.text).toBe(200);
    await t.settle();
    const runs = await flow.call<ListDoc>('GET', `/workspaces/${ws}/runs`, undefined, 200);
    expect(runs.doc.data).toHaveLength(1);
    expect(runs.doc.data[0]?.attributes).toMatchObject({ status: 'planned', 'auto-apply': false });
  });
});
