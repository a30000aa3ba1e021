import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { launchBrowser, type UiBrowser } from '../../support/ui-browser.js';
import { closeAfterTests, UiSession, WIDTHS } from '../../support/ui-e2e.js';

/**
 * A run's page shows what the runs API holds about the run — its cost estimate, policy checks,
 * run task results, the state versions its apply recorded and its comments — each only when the
 * run has it, with the values the API returns; its actions (override, comment) go through the API.
 */

const CONFIG = {
  'main.tf':
    'resource "aws_instance" "small" {\n  instance_type = "t3.micro"\n}\nresource "aws_instance" "big" {\n  instance_type = "m5.xlarge"\n}\n',
};
const ONLY_SMALL =
  '$count(resource_changes[type = "aws_instance" and change.after.instance_type != "t3.micro"]) = 0';

interface Resource {
  id: string;
  attributes: Record<string, unknown>;
  relationships?: Record<string, { data?: unknown }>;
  included?: Resource[];
}

let d: RunningDaemon;
let b: UiBrowser;
let ui: UiSession;
let task: Server;
let taskUrl = '';

/** A run task service on loopback: it accepts each request and reports `passed` through its callback. */
function startTaskService(): Promise<void> {
  task = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.writeHead(200).end();
      const payload = JSON.parse(body) as {
        access_token: string;
        task_result_callback_url: string;
      };
      void fetch(`${d.url}${new URL(payload.task_result_callback_url).pathname}`, {
        method: 'PATCH',
        headers: {
          authorization: `Bearer ${payload.access_token}`,
          'content-type': 'application/vnd.api+json',
        },
        body: JSON.stringify({
          data: {
            type: 'task-results',
            attributes: {
              status: 'passed',
              message: 'No findings in 2 resources',
              url: 'https://scanner.example/results/1',
            },
          },
        }),
      });
    });
  });
  return new Promise((r) =>
    task.listen(0, '127.0.0.1', () => {
      taskUrl = `http://127.0.0.1:${(task.address() as AddressInfo).port}/hook`;
      r();
    }),
  );
}

const get = async (path: string) => (await ui.call('runs', 'GET', path)).json.data as Resource;
const list = async (path: string) => (await ui.call('runs', 'GET', path)).json.data as Resource[];
const created = async (path: string, data: unknown) => {
  const res = await ui.call('runs', 'POST', path, { data });
  expect(res.status, res.text).toBe(201);
  return (res.json.data as Resource).id;
};

beforeAll(async () => {
  d = await startDaemon();
  b = await launchBrowser();
  b.page.setDefaultTimeout(20_000);
  ui = new UiSession(d, b, d.bootstrap().runs.user_token, d.bootstrap().secrets.root_token);
  await startTaskService();
  for (const name of ['acme', 'plain'])
    await created('organizations', {
      type: 'organizations',
      attributes: { name, email: `ops@${name}.test` },
    });
}, 60_000);
closeAfterTests(
  () => ({ d, b }),
  () => new Promise((r) => task?.close(r)),
);

describe('the run page', () => {
  let runId = '';

  it('shows the cost estimate, policy checks, task results, state versions and comments the API holds', async () => {
    const { page } = b;
    const patched = await ui.call('runs', 'PATCH', 'organizations/acme/execution-settings', {
      data: { attributes: { 'cost-estimation-enabled': true } },
    });
    expect(patched.status).toBe(200);
    const ws = await created('organizations/acme/workspaces', {
      type: 'workspaces',
      attributes: { name: 'shop' },
    });
    const set = await created('organizations/acme/policy-sets', {
      type: 'policy-sets',
      attributes: { name: 'sizes' },
      relationships: { workspaces: { data: [{ id: ws, type: 'workspaces' }] } },
    });
    const sets = { 'policy-sets': { data: [{ id: set, type: 'policy-sets' }] } };
    await created('organizations/acme/policies', {
      type: 'policies',
      attributes: { name: 'only-small', query: ONLY_SMALL, 'enforcement-level': 'soft-mandatory' },
      relationships: sets,
    });
    await created('organizations/acme/policies', {
      type: 'policies',
      attributes: { name: 'anything', query: 'true', 'enforcement-level': 'advisory' },
      relationships: sets,
    });
    const taskId = await created('organizations/acme/tasks', {
      type: 'tasks',
      attributes: { name: 'scanner', url: taskUrl },
    });
    await created(`workspaces/${ws}/tasks`, {
      type: 'workspace-tasks',
      attributes: { 'enforcement-level': 'advisory', stage: 'post_plan' },
      relationships: { task: { data: { id: taskId, type: 'tasks' } } },
    });
    await ui.upload(ws, CONFIG);
    runId = await created('runs', {
      type: 'runs',
      attributes: { message: 'grow the shop' },
      relationships: { workspace: { data: { type: 'workspaces', id: ws } } },
    });
    await eventually(
      async () =>
        (await get(`runs/${runId}`)).attributes.status === 'policy_override' ? true : undefined,
      30_000,
    );

    await ui.signIn(ui.runsToken, ui.rootToken);
    await page.goto(`${d.url}/ui/#/runs/${runId}`);
    // The cost estimate, as the API states it.
    const cost = (await get(`runs/${runId}/cost-estimate`)).attributes;
    const dollars = (v: unknown) => `$${Number(v).toFixed(2)}`;
    await expect
      .poll(() => page.locator('#cost-proposed').textContent())
      .toBe(dollars(cost['proposed-monthly-cost']));
    expect(await page.locator('#cost-prior').textContent()).toBe(
      dollars(cost['prior-monthly-cost']),
    );
    expect(await page.locator('#cost-delta').textContent()).toBe(
      `+${dollars(cost['delta-monthly-cost'])}`,
    );
    expect(await page.locator('#cost-resources').textContent()).toBe(
      `${String(cost['matched-resources-count'])} of ${String(cost['resources-count'])} priced (${String(cost['unmatched-resources-count'])} without a price)`,
    );

    // The policy check: its status, counts and each policy's verdict.
    const [check] = await list(`runs/${runId}/policy-checks`);
    const result = check!.attributes.result as {
      passed: number;
      'total-failed': number;
      policies: { policy: string; result: boolean; 'enforcement-level': string }[];
    };
    const summary = page.locator(`#policy-${check!.id}`);
    await expect.poll(() => summary.textContent()).toContain('soft_failed');
    expect(await summary.textContent()).toContain(
      `${result.passed} passed, ${result['total-failed']} failed`,
    );
    const policies = page.getByRole('region', { name: `Policies checked (${check!.id})` });
    for (const p of result.policies) {
      const row = policies.getByRole('row').filter({ hasText: p.policy });
      expect(await row.textContent()).toContain(p['enforcement-level']);
      expect(await row.textContent()).toContain(p.result ? 'passed' : 'failed');
    }
    await page.getByRole('button', { name: 'Override & continue' }).click();
    await ui.confirm('Override & continue');
    await eventually(async () =>
      (await get(`policy-checks/${check!.id}`)).attributes.status === 'overridden'
        ? true
        : undefined,
    );
    await expect.poll(() => summary.textContent()).toContain('overridden');

    // The task ran after the plan and reported through its callback; confirm and apply.
    await eventually(async () => {
      const r = await get(`runs/${runId}`);
      return (r.attributes.actions as Record<string, boolean>)['is-confirmable'] ? true : undefined;
    }, 30_000);
    await page.getByRole('button', { name: 'Confirm & apply' }).click();
    await ui.confirm('Confirm & apply');
    await eventually(
      async () => ((await get(`runs/${runId}`)).attributes.status === 'applied' ? true : undefined),
      30_000,
    );
    const [stage] = await list(`runs/${runId}/task-stages`);
    const taskResult = stage!.included![0]!.attributes;
    const tasks = page.getByRole('region', {
      name: `${String(stage!.attributes.stage)} tasks (${String(stage!.attributes.status)})`,
    });
    const taskRow = tasks.getByRole('row').filter({ hasText: 'scanner' });
    await expect.poll(() => taskRow.textContent()).toContain(String(taskResult.status));
    expect(await taskRow.textContent()).toContain(String(taskResult.message));
    expect(await taskRow.getByRole('link', { name: 'Details' }).getAttribute('href')).toBe(
      taskResult.url,
    );

    // The state version the apply recorded, named by the apply, downloadable.
    const apply = await get(`runs/${runId}/apply`);
    const svs = apply.relationships!['state-versions']!.data as { id: string }[];
    expect(svs).toHaveLength(1);
    const sv = await get(`state-versions/${svs[0]!.id}`);
    await page.getByRole('tab', { name: 'State' }).click();
    const versions = page.getByRole('region', { name: 'State versions this run recorded' });
    await expect.poll(() => versions.textContent()).toContain(sv.id);
    const [file] = await Promise.all([
      page.waitForEvent('download'),
      versions
        .getByRole('button', { name: `Download state ${String(sv.attributes.serial)}` })
        .click(),
    ]);
    expect(file.suggestedFilename()).toBe(`${sv.id}.tfstate`);

    // A comment added on the page is the API's; an empty one is refused in the API's words.
    const add = page.getByRole('form', { name: 'Add a comment' });
    await add.getByLabel('Comment').fill('Applied after the size review.');
    await add.getByRole('button', { name: 'Add comment' }).click();
    await expect
      .poll(() => page.locator('#run-comments').textContent())
      .toContain('Applied after the size review.');
    expect(await add.getByLabel('Comment').inputValue()).toBe('');
    const comments = await list(`runs/${runId}/comments`);
    expect(comments.map((c) => c.attributes.body)).toEqual(['Applied after the size review.']);
    const refused = await ui.call('runs', 'POST', `runs/${runId}/comments`, {
      data: { type: 'comments', attributes: { body: '' } },
    });
    expect(refused.status).toBe(422);
    await add.getByRole('button', { name: 'Add comment' }).click();
    const detail = (refused.json.errors as { detail: string }[])[0]!.detail;
    await expect.poll(() => add.getByRole('alert').textContent()).toBe(detail);
    expect(await list(`runs/${runId}/comments`)).toHaveLength(1);
  });

  it('leaves out what a run does not have, and says an upload queued it', async () => {
    const { page } = b;
    const ws = await created('organizations/plain/workspaces', {
      type: 'workspaces',
      attributes: { name: 'bare' },
    });
    await ui.upload(ws, { 'main.tf': 'resource "terraform_data" "x" {\n  input = 1\n}\n' }, true);
    const [queued] = await list(`workspaces/${ws}/runs`);
    await eventually(async () =>
      (await get(`runs/${queued!.id}`)).attributes.status === 'planned' ? true : undefined,
    );
    expect((await ui.call('runs', 'GET', `runs/${queued!.id}/cost-estimate`)).status).toBe(404);
    expect(await list(`runs/${queued!.id}/policy-checks`)).toEqual([]);
    expect(await list(`runs/${queued!.id}/task-stages`)).toEqual([]);
    await page.goto(`${d.url}/ui/#/runs/${queued!.id}`);
    await expect.poll(() => page.locator('#run-status').textContent()).toBe('planned');
    await page.getByRole('region', { name: 'Comments' }).getByText('No comments yet.').waitFor();
    expect(await page.locator('#run-summary').textContent()).toContain('Triggered via API');
    for (const name of ['Cost estimate', 'Policy checks', 'Run tasks', 'Outputs and state'])
      expect(await page.getByRole('region', { name, exact: true }).count(), name).toBe(0);
  });

  for (const [width, height] of WIDTHS) {
    it(`fits ${width} px with every section, labelled and readable`, async () => {
      await b.page.setViewportSize({ width, height });
      await ui.checkView('run', `runs/${runId}`, width, async () => {
        await b.page.getByRole('tab', { name: 'State' }).click();
        await b.page.getByRole('region', { name: 'State versions this run recorded' }).waitFor();
      });
    });
  }
});
