import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEachProjectionRebuildsAlone } from '../../support/rebuild.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace } from '../../support/runs-flow.js';

/** Projects: CRUD, the default project, workspaces in projects, and who sees what. */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

const project = async (org: string, name: string, token = h.adminToken) =>
  h.api('POST', `/organizations/${org}/projects`, {
    token,
    body: { data: { type: 'projects', attributes: { name } } },
  });

/** Create workspace `name` in project `id` (the `project` relationship). */
const workspaceIn = (org: string, name: string, id: string) =>
  h.api('POST', `/organizations/${org}/workspaces`, {
    body: {
      data: {
        type: 'workspaces',
        attributes: { name },
        relationships: { project: { data: { type: 'projects', id } } },
      },
    },
  });

describe('projects', () => {
  it('every organization has its default project, which the organization names', async () => {
    const org = await createOrg(h);
    const list = await h.api('GET', `/organizations/${org}/projects`);
    expect(list.status, list.text).toBe(200);
    expect(list.json.data.map((p) => p.attributes.name)).toEqual(['Default Project']);
    const fallback = list.json.data[0]!;
    expect(fallback.id).toMatch(/^prj-/);
    expect(fallback.attributes.permissions['can-destroy']).toBe(false);
    const o = await h.api('GET', `/organizations/${org}`);
    expect(o.json.data.relationships['default-project']?.data).toEqual({
      type: 'projects',
      id: fallback.id,
    });
    const ws = await createWorkspace(h, org);
    expect(ws.relationships.project?.data).toEqual({ type: 'projects', id: fallback.id });
    const gone = await h.api('DELETE', `/projects/${fallback.id}`);
    expect(gone.status, gone.text).toBe(422);
    expect(gone.json.errors[0]!.detail).toMatch(/default project/);
  });

  it('creates, shows, renames and deletes a project, with the reference name rule', async () => {
    const org = await createOrg(h);
    const made = await project(org, 'Platform Team');
    expect(made.status, made.text).toBe(201);
    const id = made.json.data.id;
    expect(made.json.data).toMatchObject({
      type: 'projects',
      attributes: { name: 'Platform Team', description: null, 'workspace-count': 0 },
      relationships: { organization: { data: { type: 'organizations', id: org } } },
    });
    expect((await project(org, 'Platform Team')).status).toBe(422);
    for (const bad of ['ab', ' lead', 'trail ', 'x'.repeat(41), 'dots.here'])
      expect((await project(org, bad)).status, bad).toBe(422);
    const withDefaults = await h.api('POST', `/organizations/${org}/projects`, {
      body: {
        data: {
          type: 'projects',
          attributes: { name: 'defaults', 'default-execution-mode': 'agent' },
        },
      },
    });
    expect(withDefaults.status).toBe(422);
    expect(withDefaults.json.errors[0]!.detail).toMatch(/default-execution-mode/);

    expect((await h.api('GET', `/projects/${id}`)).json.data.attributes.name).toBe('Platform Team');
    const renamed = await h.api('PATCH', `/projects/${id}`, {
      body: { data: { type: 'projects', attributes: { name: 'platform', description: 'infra' } } },
    });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.json.data.attributes).toMatchObject({ name: 'platform', description: 'infra' });
    const deleted = await h.api('DELETE', `/projects/${id}`);
    expect(deleted.status, deleted.text).toBe(204);
    expect((await h.api('GET', `/projects/${id}`)).status).toBe(404);
  });

  it('lists by name filter and search, and pages', async () => {
    const org = await createOrg(h);
    for (const name of ['alpha', 'beta', 'alphabet']) await project(org, name);
    const named = await h.api('GET', `/organizations/${org}/projects?filter%5Bnames%5D=alpha`);
    expect(named.json.data.map((p) => p.attributes.name)).toEqual(['alpha']);
    const q = await h.api('GET', `/organizations/${org}/projects?q=ALPHA`);
    expect(q.json.data.map((p) => p.attributes.name)).toEqual(['alpha', 'alphabet']);
    const page = await h.api('GET', `/organizations/${org}/projects?page%5Bsize%5D=2`);
    expect(page.json.data).toHaveLength(2);
    expect(page.json.meta.pagination['total-count']).toBe(4);
  });

  it('puts workspaces in projects, filters lists by project, moves them, and refuses deleting a non-empty project', async () => {
    const org = await createOrg(h);
    const other = await createOrg(h);
    const prj = (await project(org, 'apps')).json.data.id;
    const foreign = (await project(other, 'elsewhere')).json.data.id;
    const inside = await workspaceIn(org, 'api', prj);
    expect(inside.status, inside.text).toBe(201);
    expect(inside.json.data.relationships.project?.data?.id).toBe(prj);
    const misplaced = await workspaceIn(org, 'lost', foreign);
    expect(misplaced.status).toBe(404);
    const outside = await createWorkspace(h, org);

    const filtered = await h.api(
      'GET',
      `/organizations/${org}/workspaces?filter%5Bproject%5D%5Bid%5D=${prj}`,
    );
    expect(filtered.json.data.map((w) => w.attributes.name)).toEqual(['api']);
    expect((await h.api('GET', `/projects/${prj}`)).json.data.attributes['workspace-count']).toBe(
      1,
    );
    const refused = await h.api('DELETE', `/projects/${prj}`);
    expect(refused.status).toBe(422);
    expect(refused.json.errors[0]!.detail).toMatch(/1 workspace/);

    const moved = await h.api('PATCH', `/workspaces/${outside.id}`, {
      body: {
        data: {
          type: 'workspaces',
          attributes: {},
          relationships: { project: { data: { type: 'projects', id: prj } } },
        },
      },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json.data.relationships.project?.data?.id).toBe(prj);
    const after = await h.api(
      'GET',
      `/organizations/${org}/workspaces?filter%5Bproject%5D%5Bid%5D=${prj}`,
    );
    expect(after.json.data).toHaveLength(2);
  });

  it('a member who is not an owner sees only projects holding a workspace they can read, and manages none', async () => {
    const org = await createOrg(h);
    const seen = (await project(org, 'seen')).json.data.id;
    const hidden = (await project(org, 'hidden')).json.data.id;
    const ws = await workspaceIn(org, 'visible', seen);
    const dev = h.user(`dev-${seen.slice(-6)}`);
    const team = await h.api('POST', `/organizations/${org}/teams`, {
      body: { data: { type: 'teams', attributes: { name: 'devs' } } },
    });
    await h.api('POST', `/teams/${team.json.data.id}/relationships/users`, {
      body: { data: [{ type: 'users', id: dev.id }] },
    });
    const grant = await h.api('POST', '/team-workspaces', {
      body: {
        data: {
          attributes: { access: 'read' },
          relationships: {
            team: { data: { type: 'teams', id: team.json.data.id } },
            workspace: { data: { type: 'workspaces', id: ws.json.data.id } },
          },
        },
      },
    });
    expect(grant.status, grant.text).toBe(201);
    const list = await h.api('GET', `/organizations/${org}/projects`, { token: dev.token });
    expect(list.json.data.map((p) => p.id)).toEqual([seen]);
    expect(list.json.data[0]!.attributes.permissions['can-update']).toBe(false);
    expect((await h.api('GET', `/projects/${hidden}`, { token: dev.token })).status).toBe(404);
    expect((await project(org, 'mine', dev.token)).status).toBe(404);
    const rename = await h.api('PATCH', `/projects/${seen}`, {
      token: dev.token,
      body: { data: { type: 'projects', attributes: { name: 'taken-over' } } },
    });
    expect(rename.status).toBe(404);
  });

  it('the projects read model rebuilds from the log as it was', async () => {
    const org = await createOrg(h);
    const id = (await project(org, 'kept')).json.data.id;
    await h.api('PATCH', `/projects/${id}`, {
      body: { data: { type: 'projects', attributes: { description: 'after' } } },
    });
    await createWorkspace(h, org);
    const before = (await h.api('GET', `/organizations/${org}/projects`)).text;
    const pages = (after: number, limit: number) => h.core.store.readAll(after, limit);
    expectEachProjectionRebuildsAlone(h.projections, pages);
    expect((await h.api('GET', `/organizations/${org}/projects`)).text).toBe(before);
  });
});
