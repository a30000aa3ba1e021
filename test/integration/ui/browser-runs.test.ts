import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { configTarball } from '../../support/runs-harness.js';
import type { UiBrowser } from '../../support/ui-browser.js';
import { launchBrowser } from '../../support/ui-browser.js';
import { http } from '../../support/ui-server.js';

/**
 * The run page against real runs: the runs API creates a run, the executor's commands move it
 * through planning, an apply through the API finishes it, and the page follows along.
 */
describe('the /ui run page', () => {
  let t: TestApp;
  let b: UiBrowser;
  let runId: string;
  let wsId: string;

  const api = async (method: string, path: string, body?: unknown, raw?: Buffer) => {
    const res = await http(
      path.startsWith('http')
        ? `${t.server.url}${new URL(path).pathname}`
        : `${t.server.url}/api/v2${path}`,
      {
        method,
        headers: {
          authorization: `Bearer ${t.tokens.runs.user_token}`,
          'content-type':
            raw === undefined ? 'application/vnd.api+json' : 'application/octet-stream',
        },
        body:
          raw === undefined ? (body === undefined ? undefined : JSON.stringify(body)) : undefined,
        raw,
      },
    );
    const text = await res.text();
    return {
      status: res.status,
      json: (text === '' ? {} : JSON.parse(text)) as {
        data: { id: string; attributes: Record<string, unknown> };
      },
    };
  };

  const status = async () => (await api('GET', `/runs/${runId}`)).json.data.attributes.status;

  beforeAll(async () => {
    t = await startTestApp({ deps: { wakeReactorsOnAppend: false, executor: false } });
    const org = await api('POST', '/organizations', {
      data: { type: 'organizations', attributes: { name: 'acme', email: 'ops@acme.test' } },
    });
    expect(org.status).toBe(201);
    const ws = await api('POST', '/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'network' } },
    });
    expect(ws.status).toBe(201);
    wsId = ws.json.data.id;
    const cv = await api('POST', `/workspaces/${wsId}/configuration-versions`, {
      data: { type: 'configuration-versions', attributes: { 'auto-queue-runs': false } },
    });
    expect(cv.status).toBe(201);
    const put = await api(
      'PUT',
      String(cv.json.data.attributes['upload-url']),
      undefined,
      configTarball(),
    );
    expect(put.status).toBe(200);
    const run = await api('POST', '/runs', {
      data: {
        type: 'runs',
        attributes: { message: 'widen the subnet' },
        relationships: { workspace: { data: { type: 'workspaces', id: wsId } } },
      },
    });
    expect(run.status).toBe(201);
    runId = run.json.data.id;
    // Only the workspace queue moves here (not every reactor), so the test plays the executor
    // step by step and each state is there to be seen.
    await t.app.runs.reconcile(wsId);
    await t.app.runs.executor.planStarted(runId);
    expect(await status()).toBe('planning');
    b = await launchBrowser();
  });
  afterAll(async () => {
    await b?.close();
    await t?.close();
  });

  it('signs in with both tokens and lists the workspace and its runs', async () => {
    const { page } = b;
    await page.goto(`${t.server.url}/ui/`);
    await page.getByLabel('Runs token').fill(t.tokens.runs.user_token);
    await page.getByLabel('Secrets token').fill(t.tokens.secrets.root_token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'run', level: 2 }).waitFor();
    await b.screenshot('runs-machines');
    await page.getByRole('link', { name: 'Workspaces' }).click();
    await page.getByRole('link', { name: 'network' }).click();
    await page.getByRole('link', { name: runId, exact: true }).waitFor();
    expect(await page.locator('table', { hasText: runId }).textContent()).toContain('planning');
  });

  it('follows a run from planning to planned to applied, then steps back', async () => {
    const { page } = b;
    await page.getByRole('link', { name: runId, exact: true }).click();
    const state = page.locator('#current-state');
    const highlighted = () => page.locator('figure.diagram g.node.current').getAttribute('data-id');
    await expect.poll(() => state.textContent()).toBe('planning');
    expect(await highlighted()).toBe('state-planning');
    await b.screenshot('run-planning');

    await t.app.runs.executor.planFinished(runId, {
      hasChanges: true,
      counts: { additions: 1, changes: 0, destructions: 0, imports: 0 },
      log: 'Plan: 1 to add, 0 to change, 0 to destroy.\n',
      jsonOutput: { format_version: '1.2', resource_changes: [] },
    });
    expect(await status()).toBe('planned');
    await expect.poll(() => state.textContent()).toBe('planned');
    expect(await highlighted()).toBe('state-planned');
    await expect.poll(() => page.locator('#plan-log').textContent()).toContain('Plan: 1 to add');
    await b.screenshot('run-planned');

    const apply = await api('POST', `/runs/${runId}/actions/apply`, { comment: 'ship it' });
    expect(apply.status).toBe(202);
    await t.app.runs.reconcile(wsId);
    expect(await status()).toBe('apply_queued');
    await t.app.runs.executor.applyStarted(runId);
    await t.app.runs.executor.applyFinished(runId, {
      counts: { additions: 1, changes: 0, destructions: 0, imports: 0 },
      log: 'Apply complete! Resources: 1 added, 0 changed, 0 destroyed.\n',
    });
    expect(await status()).toBe('applied');
    await expect.poll(() => state.textContent()).toBe('applied');
    expect(await highlighted()).toBe('state-applied');
    await expect.poll(() => page.locator('#run-status').textContent()).toBe('applied');
    await expect.poll(() => page.locator('#apply-log').textContent()).toContain('Apply complete!');
    const rows = await page.locator('table.history tbody tr').allTextContents();
    expect(rows.some((r) => r.includes('RunConfirmed') && r.includes('admin'))).toBe(true);
    await b.screenshot('run-applied');

    // Step back: the diagram shows the state as of each earlier event.
    const history = (await (
      await http(`${t.server.url}/v1/sys/audit/streams/${runId}`, {
        headers: { 'X-Secrets-Token': t.tokens.secrets.root_token },
      })
    ).json()) as { data: { history: { state: string; type: string }[] } };
    const states = history.data.history.map((e) => e.state);
    await page.getByLabel('Step through history').focus();
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => state.textContent()).toBe(states.at(-2));
    const plannedAt = states.lastIndexOf('planned') + 1;
    for (let i = states.length - 1; i > plannedAt; i--) await page.keyboard.press('ArrowLeft');
    await expect.poll(() => state.textContent()).toBe('planned');
    expect(await highlighted()).toBe('state-planned');
    await page.keyboard.press('Home');
    await expect.poll(() => state.textContent()).toBe('none');
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => state.textContent()).toBe(states[0]);
    await b.screenshot('run-stepped-back');
  });

  it('filters the audit timeline by actor', async () => {
    const { page } = b;
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByLabel('Actor (name or accessor)').fill('executor');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    // The rows before the filter applies are there too: wait for the filtered ones.
    await expect
      .poll(async () => {
        const rows = await page.locator('#events tbody tr').allTextContents();
        return rows.length > 0 && rows.every((r) => /executor \(system\)/.test(r));
      })
      .toBe(true);
    await page.getByLabel('Actor (name or accessor)').fill('admin');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect
      .poll(async () =>
        (await page.locator('#events tbody tr').allTextContents()).every((r) =>
          r.includes('admin ('),
        ),
      )
      .toBe(true);
    expect(await page.locator('#events').textContent()).toContain('RunConfirmed');
    await b.screenshot('run-audit-by-actor');
  });
});
