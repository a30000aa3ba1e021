import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { drivePlan, readyWorkspace, runBody } from '../../support/runs-flow.js';

/**
 * Team access `custom` (runs, state versions, locking here; variables and run tasks, which the
 * executor serves, in executor-custom-access.test.ts): each permission the reference defines, set on its own, allows what it
 * names and nothing more — enforced by the same checks as the fixed levels.
 */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

let n = 0;
/** A workspace and a member of a team holding `custom` access with the permissions given. */
async function member(permissions: Record<string, unknown>) {
  const { org, ws } = await readyWorkspace(h);
  const user = h.user(`custom-${++n}`);
  const team = (
    await h.api('POST', `/organizations/${org}/teams`, {
      body: { data: { type: 'teams', attributes: { name: 'custom' } } },
    })
  ).json.data.id;
  await h.api('POST', `/teams/${team}/relationships/users`, {
    body: { data: [{ type: 'users', id: user.id }] },
  });
  const grant = await h.api('POST', '/team-workspaces', {
    body: {
      data: {
        type: 'team-workspaces',
        attributes: { access: 'custom', ...permissions },
        relationships: {
          team: { data: { type: 'teams', id: team } },
          workspace: { data: { type: 'workspaces', id: ws } },
        },
      },
    },
  });
  expect(grant.status, grant.text).toBe(201);
  const as = (method: string, path: string, body?: unknown) =>
    h.api(method, path, { token: user.token, body });
  return { org, ws, grant: grant.json.data, as };
}

const refused = (res: { status: number; text: string }, what: string) => {
  expect(res.status, res.text).toBe(404);
  expect(res.text).toContain(`${what}: not found or not authorized`);
};

describe('team access custom', () => {
  it('defaults to the reference: runs read, everything else none, shown on the grant', async () => {
    const { ws, grant, as } = await member({});
    expect(grant.attributes).toEqual({
      access: 'custom',
      runs: 'read',
      variables: 'none',
      'state-versions': 'none',
      'sentinel-mocks': 'none',
      'workspace-locking': false,
      'run-tasks': false,
    });
    expect((await as('GET', `/workspaces/${ws}`)).status).toBe(200);
    expect((await as('GET', `/workspaces/${ws}/runs`)).status).toBe(200);
    const perms = (await as('GET', `/workspaces/${ws}`)).json.data.attributes.permissions;
    expect(perms).toMatchObject({
      'can-queue-run': false,
      'can-lock': false,
      'can-read-variable': false,
      'can-read-state-versions': false,
      'can-manage-run-tasks': false,
      'can-update': false,
    });
    refused(await as('POST', '/runs', runBody(ws)), `queueing plans in workspace ${ws}`);
    refused(
      await as('GET', `/workspaces/${ws}/current-state-version-outputs`),
      `state versions of workspace ${ws}`,
    );
    refused(await as('POST', `/workspaces/${ws}/actions/lock`, {}), `locking workspace ${ws}`);
    refused(await as('GET', `/workspaces/${ws}/varsets`), `variable sets of workspace ${ws}`);
  });

  it('runs: plan queues plans but does not apply; apply also applies', async () => {
    const planner = await member({ runs: 'plan' });
    const queued = await planner.as('POST', '/runs', runBody(planner.ws));
    expect(queued.status, queued.text).toBe(201);
    await h.settle();
    await drivePlan(h, queued.json.data.id);
    refused(
      await planner.as('POST', `/runs/${queued.json.data.id}/actions/apply`, {}),
      `applying run ${queued.json.data.id}`,
    );

    const applier = await member({ runs: 'apply' });
    const run = await applier.as('POST', '/runs', runBody(applier.ws));
    expect(run.status, run.text).toBe(201);
    await h.settle();
    await drivePlan(h, run.json.data.id);
    const applied = await applier.as('POST', `/runs/${run.json.data.id}/actions/apply`, {});
    expect(applied.status, applied.text).toBe(202);
    // applying runs does not lock the workspace: that is its own permission
    refused(
      await applier.as('POST', `/workspaces/${applier.ws}/actions/lock`, {}),
      `locking workspace ${applier.ws}`,
    );
  });

  it('state-versions: read-outputs reads outputs only, read whole versions, write creates', async () => {
    const outputs = await member({ 'state-versions': 'read-outputs' });
    const none = `workspace ${outputs.ws} has no state version`;
    const o = await outputs.as('GET', `/workspaces/${outputs.ws}/current-state-version-outputs`);
    expect(o.status).toBe(404);
    expect(o.text).toContain(none);
    refused(
      await outputs.as('GET', `/workspaces/${outputs.ws}/current-state-version`),
      `state versions of workspace ${outputs.ws}`,
    );
    refused(
      await outputs.as('GET', `/workspaces/${outputs.ws}/state-versions`),
      `state versions of workspace ${outputs.ws}`,
    );

    const reader = await member({ 'state-versions': 'read' });
    const whole = await reader.as('GET', `/workspaces/${reader.ws}/state-versions`);
    expect(whole.status, whole.text).toBe(200);
    refused(
      await reader.as('POST', `/workspaces/${reader.ws}/state-versions`, {}),
      `creating state versions in workspace ${reader.ws}`,
    );

    const writer = await member({ 'state-versions': 'write' });
    const created = await writer.as('POST', `/workspaces/${writer.ws}/state-versions`, {});
    // past the permission: the empty body is what is refused
    expect(created.status, created.text).toBe(422);
  });

  it('workspace-locking locks and unlocks', async () => {
    const locker = await member({ 'workspace-locking': true });
    const locked = await locker.as('POST', `/workspaces/${locker.ws}/actions/lock`, {});
    expect(locked.status, locked.text).toBe(200);
    const unlocked = await locker.as('POST', `/workspaces/${locker.ws}/actions/unlock`, {});
    expect(unlocked.status, unlocked.text).toBe(200);
  });

  it('variables read lists the variable sets that reach the workspace', async () => {
    const { ws, as } = await member({ variables: 'read' });
    const sets = await as('GET', `/workspaces/${ws}/varsets`);
    expect(sets.status, sets.text).toBe(200);
  });

  it('sentinel-mocks is recorded and shown; PATCH changes one permission and keeps the rest', async () => {
    const { grant } = await member({ 'sentinel-mocks': 'read', variables: 'read' });
    expect(grant.attributes).toMatchObject({ 'sentinel-mocks': 'read', variables: 'read' });
    const changed = await h.api('PATCH', `/team-workspaces/${grant.id}`, {
      body: { data: { attributes: { access: 'custom', runs: 'plan' } } },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json.data.attributes).toMatchObject({
      runs: 'plan',
      variables: 'read',
      'sentinel-mocks': 'read',
    });
    const fixed = await h.api('PATCH', `/team-workspaces/${grant.id}`, {
      body: { data: { attributes: { access: 'read' } } },
    });
    expect(fixed.json.data.attributes).toMatchObject({ access: 'read', runs: 'read' });
  });

  it('refuses permissions with a fixed level, and unknown values, naming them', async () => {
    const { org, ws } = await readyWorkspace(h);
    const team = (
      await h.api('POST', `/organizations/${org}/teams`, {
        body: { data: { type: 'teams', attributes: { name: 't' } } },
      })
    ).json.data.id;
    const post = (attributes: Record<string, unknown>) =>
      h.api('POST', '/team-workspaces', {
        body: {
          data: {
            type: 'team-workspaces',
            attributes,
            relationships: {
              team: { data: { type: 'teams', id: team } },
              workspace: { data: { type: 'workspaces', id: ws } },
            },
          },
        },
      });
    const mixed = await post({ access: 'read', variables: 'write' });
    expect(mixed.status).toBe(422);
    expect(mixed.text).toContain(
      '/data/attributes/variables: permissions are set only with access custom',
    );
    const bad = await post({ access: 'custom', runs: 'destroy' });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('runs');
  });
});
