import { beforeAll, describe, expect, it } from 'vitest';
import { eventually, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { launchBrowser, type UiBrowser } from '../../support/ui-browser.js';
import { closeAfterTests, UiSession, WIDTHS } from '../../support/ui-e2e.js';

/**
 * Someone who holds only a runs token, and only read access to one workspace (a team's token, no
 * admin, no secrets token), sees a run's history on its page: the run's events as the runs API
 * lists them (`GET /runs/:id/run-events`), kept up to date as the run moves on.
 */

let d: RunningDaemon;
let b: UiBrowser;
let ui: UiSession;

interface Doc {
  status: number;
  json: { data?: unknown };
  text: string;
}
const idOf = (r: Doc) => (r.json.data as { id: string }).id;
const created = async (path: string, data: unknown) => {
  const res = await ui.call('runs', 'POST', path, { data });
  expect(res.status, res.text).toBe(201);
  return idOf(res);
};
const statusOf = async (runId: string) =>
  ((await ui.call('runs', 'GET', `runs/${runId}`)).json.data as { attributes: { status: string } })
    .attributes.status;

beforeAll(async () => {
  d = await startDaemon();
  b = await launchBrowser();
  b.page.setDefaultTimeout(20_000);
  ui = new UiSession(d, b, d.bootstrap().runs.user_token, d.bootstrap().secrets.root_token);
}, 60_000);
closeAfterTests(() => ({ d, b }));

describe('a runs-only session', () => {
  it("sees a run's history, from the runs API, with read access and no secrets token", async () => {
    await created('organizations', {
      type: 'organizations',
      attributes: { name: 'acme', email: 'ops@acme.test' },
    });
    const ws = await created('organizations/acme/workspaces', {
      type: 'workspaces',
      attributes: { name: 'web' },
    });
    const team = await created('organizations/acme/teams', {
      type: 'teams',
      attributes: { name: 'viewers' },
    });
    await created('team-workspaces', {
      type: 'team-workspaces',
      attributes: { access: 'read' },
      relationships: {
        team: { data: { type: 'teams', id: team } },
        workspace: { data: { type: 'workspaces', id: ws } },
      },
    });
    const tokenDoc = await ui.call('runs', 'POST', `teams/${team}/authentication-token`, {});
    expect(tokenDoc.status, tokenDoc.text).toBe(201);
    const viewer = (tokenDoc.json.data as { attributes: { token: string } }).attributes.token;

    await ui.upload(ws, { 'main.tf': 'output "greeting" {\n  value = "hello"\n}\n' });
    const runId = await created('runs', {
      type: 'runs',
      attributes: { message: 'first run' },
      relationships: { workspace: { data: { type: 'workspaces', id: ws } } },
    });
    await eventually(
      async () => ((await statusOf(runId)) === 'planned' ? true : undefined),
      30_000,
    );

    // The viewer may read the run but not act on it, nor reach the secrets API.
    const asViewer = await fetch(`${d.url}/api/v2/runs/${runId}/actions/apply`, {
      method: 'POST',
      headers: { authorization: `Bearer ${viewer}`, 'content-type': 'application/vnd.api+json' },
      body: '{}',
    });
    expect(asViewer.status).toBe(404);

    const { page } = b;
    await ui.signIn(viewer, '');
    await page.goto(`${d.url}/ui/#/runs/${runId}`);
    const events = page.getByRole('region', { name: 'Run events' });
    await events.waitFor();
    const rows = () => events.locator('tbody tr').allInnerTexts();
    await expect.poll(rows).toContainEqual(expect.stringMatching(/^4\s+plan finished\s/));
    expect((await rows()).slice(0, 3)).toEqual([
      expect.stringMatching(/^1\s+created\s+\d{4}-\d\d-\d\dT/),
      expect.stringMatching(/^2\s+plan queued\s/),
      expect.stringMatching(/^3\s+plan started\s/),
    ]);
    expect(await page.getByRole('heading', { name: 'History' }).count()).toBe(1);

    // The run moves on (applied by the admin); the viewer's page follows it.
    const applied = await ui.call('runs', 'POST', `runs/${runId}/actions/apply`, {
      comment: 'ship it',
    });
    expect(applied.status, applied.text).toBe(202);
    await eventually(
      async () => ((await statusOf(runId)) === 'applied' ? true : undefined),
      30_000,
    );
    await expect
      .poll(rows, { timeout: 20_000 })
      .toContainEqual(expect.stringMatching(/\sconfirmed\s.*\sship it$/));
    await expect
      .poll(rows, { timeout: 20_000 })
      .toContainEqual(expect.stringMatching(/\sapply finished\s/));

    // Fits both widths, passes the axe checks, and is pictured for docs/ui.md.
    for (const [width, height] of WIDTHS) {
      await page.setViewportSize({ width, height });
      await ui.checkView('run-runs-only', `runs/${runId}`, width, () =>
        page.getByRole('region', { name: 'Run events' }).waitFor(),
      );
    }
  }, 120_000);
});
