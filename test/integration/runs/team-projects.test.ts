import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEachProjectionRebuildsAlone } from '../../support/rebuild.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace } from '../../support/runs-flow.js';

/** Team access to projects: a grant reaches every workspace of the project, now and later. */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

let n = 0;
async function setup() {
  const org = await createOrg(h);
  const prj = (
    await h.api('POST', `/organizations/${org}/projects`, {
      body: { data: { type: 'projects', attributes: { name: 'apps' } } },
    })
  ).json.data.id;
  const inProject = (name: string) =>
    h.api('POST', `/organizations/${org}/workspaces`, {
      body: {
        data: {
          type: 'workspaces',
          attributes: { name },
          relationships: { project: { data: { type: 'projects', id: prj } } },
        },
      },
    });
  const ws = (await inProject('inside')).json.data.id;
  const outside = (await createWorkspace(h, org)).id;
  const dev = h.user(`tp-dev-${++n}`);
  const team = (
    await h.api('POST', `/organizations/${org}/teams`, {
      body: { data: { type: 'teams', attributes: { name: 'devs' } } },
    })
  ).json.data.id;
  await h.api('POST', `/teams/${team}/relationships/users`, {
    body: { data: [{ type: 'users', id: dev.id }] },
  });
  const grant = (access: string, token = h.adminToken) =>
    h.api('POST', '/team-projects', {
      token,
      body: {
        data: {
          type: 'team-projects',
          attributes: { access },
          relationships: {
            team: { data: { type: 'teams', id: team } },
            project: { data: { type: 'projects', id: prj } },
          },
        },
      },
    });
  return { org, prj, ws, outside, dev, team, grant, inProject };
}

describe('team access to projects', () => {
  it('write on a project reaches its workspaces, later ones too, and no other; revoking ends it', async () => {
    const { prj, ws, outside, dev, grant, inProject, org } = await setup();
    expect((await h.api('GET', `/workspaces/${ws}`, { token: dev.token })).status).toBe(404);
    const made = await grant('write');
    expect(made.status, made.text).toBe(201);
    expect(made.json.data).toMatchObject({
      type: 'team-projects',
      attributes: { access: 'write' },
      relationships: { project: { data: { type: 'projects', id: prj } } },
    });
    const seen = await h.api('GET', `/workspaces/${ws}`, { token: dev.token });
    expect(seen.status).toBe(200);
    expect(seen.json.data.attributes.permissions).toMatchObject({
      'can-queue-apply': true,
      'can-update': false,
    });
    expect((await h.api('GET', `/workspaces/${outside}`, { token: dev.token })).status).toBe(404);
    const later = (await inProject('later')).json.data.id;
    expect((await h.api('GET', `/workspaces/${later}`, { token: dev.token })).status).toBe(200);
    const projects = await h.api('GET', `/organizations/${org}/projects`, { token: dev.token });
    expect(projects.json.data.map((p) => p.id)).toEqual([prj]);

    const listed = await h.api('GET', `/team-projects?filter%5Bproject%5D%5Bid%5D=${prj}`);
    expect(listed.json.data.map((g) => g.id)).toEqual([made.json.data.id]);
    expect((await grant('read')).status).toBe(422);

    const maintain = await h.api('PATCH', `/team-projects/${made.json.data.id}`, {
      body: { data: { attributes: { access: 'maintain' } } },
    });
    expect(maintain.status, maintain.text).toBe(200);
    expect(
      (await h.api('GET', `/workspaces/${ws}`, { token: dev.token })).json.data.attributes
        .permissions['can-update'],
    ).toBe(true);

    expect((await h.api('DELETE', `/team-projects/${made.json.data.id}`)).status).toBe(204);
    expect((await h.api('GET', `/workspaces/${ws}`, { token: dev.token })).status).toBe(404);
  });

  it('custom sets the workspace permissions on every workspace of the project', async () => {
    const { ws, dev, team, prj } = await setup();
    const post = (attributes: Record<string, unknown>) =>
      h.api('POST', '/team-projects', {
        body: {
          data: {
            type: 'team-projects',
            attributes,
            relationships: {
              team: { data: { type: 'teams', id: team } },
              project: { data: { type: 'projects', id: prj } },
            },
          },
        },
      });
    // what Keel leaves to organization owners, and permissions with a fixed level, are refused
    const settings = await post({ access: 'custom', 'project-access': { settings: 'update' } });
    expect(settings.status).toBe(422);
    expect(settings.text).toContain('organization owners manage projects');
    const create = await post({ access: 'custom', 'workspace-access': { create: true } });
    expect(create.status).toBe(422);
    expect(create.text).toContain('only organization owners create, move and delete workspaces');
    const fixed = await post({ access: 'read', 'workspace-access': { runs: 'apply' } });
    expect(fixed.status).toBe(422);
    expect(fixed.text).toContain('workspace-access: permissions are set only with access custom');

    const made = await post({
      access: 'custom',
      'project-access': { settings: 'read', teams: 'none' },
      'workspace-access': { runs: 'plan', locking: true, variables: 'read' },
    });
    expect(made.status, made.text).toBe(201);
    expect(made.json.data.attributes).toMatchObject({
      access: 'custom',
      'project-access': { settings: 'read', teams: 'none', 'variable-sets': 'none' },
      'workspace-access': {
        runs: 'plan',
        locking: true,
        variables: 'read',
        'state-versions': 'none',
        'run-tasks': false,
        create: false,
      },
    });
    const seen = await h.api('GET', `/workspaces/${ws}`, { token: dev.token });
    expect(seen.json.data.attributes.permissions).toMatchObject({
      'can-queue-run': true,
      'can-queue-apply': false,
      'can-lock': true,
      'can-read-variable': true,
      'can-update-variable': false,
      'can-read-state-versions': false,
    });
    const locked = await h.api('POST', `/workspaces/${ws}/actions/lock`, {
      token: dev.token,
      body: {},
    });
    expect(locked.status, locked.text).toBe(200);
    const state = await h.api('GET', `/workspaces/${ws}/current-state-version`, {
      token: dev.token,
    });
    expect(state.status).toBe(404);
    expect(state.text).toContain('not found or not authorized');

    // a PATCH changes one permission and keeps the others
    const changed = await h.api('PATCH', `/team-projects/${made.json.data.id}`, {
      body: { data: { attributes: { access: 'custom', 'workspace-access': { runs: 'apply' } } } },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json.data.attributes['workspace-access']).toMatchObject({
      runs: 'apply',
      locking: true,
    });
  });

  it('grants only from owners', async () => {
    const { dev, grant } = await setup();
    expect((await grant('read', dev.token)).status).toBe(404);
  });

  it('the grants rebuild from the log as they were', async () => {
    const { grant, dev, ws } = await setup();
    const id = (await grant('read')).json.data.id;
    const before = (await h.api('GET', `/team-projects/${id}`)).text;
    const pages = (after: number, limit: number) => h.core.store.readAll(after, limit);
    expectEachProjectionRebuildsAlone(h.projections, pages);
    expect((await h.api('GET', `/team-projects/${id}`)).text).toBe(before);
    expect((await h.api('GET', `/workspaces/${ws}`, { token: dev.token })).status).toBe(200);
  });
});
