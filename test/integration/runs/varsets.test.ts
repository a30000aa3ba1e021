import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEachProjectionRebuildsAlone } from '../../support/rebuild.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace } from '../../support/runs-flow.js';

/** Variable sets: CRUD, where they apply, their variables, and sensitive values sealed. */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

const SECRET = 'hunter2-in-a-varset';

const create = (org: string, attributes: Record<string, unknown>, relationships = {}) =>
  h.api('POST', `/organizations/${org}/varsets`, {
    body: { data: { type: 'varsets', attributes, relationships } },
  });

describe('variable sets', () => {
  it('creates a set with its variables, shows it, and never returns a sensitive value', async () => {
    const org = await createOrg(h);
    const ws = await createWorkspace(h, org);
    const made = await create(
      org,
      { name: 'creds', description: 'cloud', priority: true },
      {
        workspaces: { data: [{ type: 'workspaces', id: ws.id }] },
        vars: {
          data: [
            { type: 'vars', attributes: { key: 'region', value: 'eu', category: 'terraform' } },
            {
              type: 'vars',
              attributes: { key: 'TOKEN', value: SECRET, category: 'env', sensitive: true },
            },
          ],
        },
      },
    );
    expect(made.status, made.text).toBe(201);
    expect(made.json.data).toMatchObject({
      type: 'varsets',
      attributes: {
        name: 'creds',
        description: 'cloud',
        global: false,
        priority: true,
        'var-count': 2,
        'workspace-count': 1,
        'project-count': 0,
      },
    });
    const id = made.json.data.id;
    const vars = await h.api('GET', `/varsets/${id}/relationships/vars`);
    expect(vars.json.data.map((v) => [v.attributes.key, v.attributes.value])).toEqual([
      ['TOKEN', null],
      ['region', 'eu'],
    ]);
    expect(vars.text).not.toContain(SECRET);
    const listed = await h.api('GET', `/workspaces/${ws.id}/varsets`);
    expect(listed.json.data.map((v) => v.id)).toEqual([id]);
    const all = await h.api('GET', `/organizations/${org}/varsets?q=CRE`);
    expect(all.json.data.map((v) => v.id)).toEqual([id]);
    // sealed in the log and in the read model, as a workspace variable's value is
    const events = h.core.store.readAll(0, 100_000);
    expect(JSON.stringify(events)).not.toContain(SECRET);
    expect(JSON.stringify(h.projections.dump())).not.toContain(SECRET);
  });

  it('refuses a taken name, a key given twice, project-owned sets, and assignments on a global set', async () => {
    const org = await createOrg(h);
    const ws = await createWorkspace(h, org);
    expect((await create(org, { name: 'one' })).status).toBe(201);
    expect((await create(org, { name: 'one' })).status).toBe(422);
    const twice = await create(
      org,
      { name: 'two' },
      {
        vars: {
          data: [
            { type: 'vars', attributes: { key: 'a', value: '1', category: 'terraform' } },
            { type: 'vars', attributes: { key: 'a', value: '2', category: 'terraform' } },
          ],
        },
      },
    );
    expect(twice.status).toBe(422);
    const owned = await create(org, { name: 'three' }, { parent: { data: { type: 'projects' } } });
    expect(owned.status).toBe(422);
    expect(owned.json.errors[0]!.detail).toMatch(/parent/);
    const global = await create(
      org,
      { name: 'four', global: true },
      { workspaces: { data: [{ type: 'workspaces', id: ws.id }] } },
    );
    expect(global.status).toBe(422);
    expect(global.json.errors[0]!.detail).toMatch(/global/);
    expect((await create(org, { name: 'five', 'varset-type': 'x' })).status).toBe(422);
  });

  it('applies to and removes from workspaces and projects, updates, and deletes', async () => {
    const org = await createOrg(h);
    const other = await createOrg(h);
    const ws = await createWorkspace(h, org);
    const foreign = await createWorkspace(h, other);
    const prj = (
      await h.api('POST', `/organizations/${org}/projects`, {
        body: { data: { type: 'projects', attributes: { name: 'apps' } } },
      })
    ).json.data.id;
    const id = (await create(org, { name: 'shared' })).json.data.id;
    const rel = (kind: string, method: string, type: string, target: string) =>
      h.api(method, `/varsets/${id}/relationships/${kind}`, {
        body: { data: [{ type, id: target }] },
      });
    expect((await rel('workspaces', 'POST', 'workspaces', ws.id)).status).toBe(204);
    expect((await rel('workspaces', 'POST', 'workspaces', foreign.id)).status).toBe(404);
    expect((await rel('projects', 'POST', 'projects', prj)).status).toBe(204);
    const shown = await h.api('GET', `/varsets/${id}`);
    expect(shown.json.data.relationships.projects).toEqual({
      data: [{ type: 'projects', id: prj }],
    });
    expect((await h.api('GET', `/projects/${prj}/varsets`)).json.data.map((v) => v.id)).toEqual([
      id,
    ]);
    expect((await rel('workspaces', 'DELETE', 'workspaces', ws.id)).status).toBe(204);
    expect((await h.api('GET', `/workspaces/${ws.id}/varsets`)).json.data).toEqual([]);

    const updated = await h.api('PATCH', `/varsets/${id}`, {
      body: { data: { type: 'varsets', attributes: { name: 'renamed', priority: true } } },
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.json.data.attributes).toMatchObject({ name: 'renamed', priority: true });
    // a global set leaves its projects first
    const global = await h.api('PATCH', `/varsets/${id}`, {
      body: { data: { type: 'varsets', attributes: { global: true } } },
    });
    expect(global.status).toBe(422);

    const v = await h.api('POST', `/varsets/${id}/relationships/vars`, {
      body: {
        data: {
          type: 'vars',
          attributes: { key: 'x', value: 'plain-value-7731', category: 'env' },
        },
      },
    });
    expect(v.status, v.text).toBe(201);
    const sealed = await h.api('PATCH', `/varsets/${id}/relationships/vars/${v.json.data.id}`, {
      body: { data: { type: 'vars', attributes: { sensitive: true } } },
    });
    expect(sealed.json.data.attributes).toMatchObject({ value: null, sensitive: true });
    const back = await h.api('PATCH', `/varsets/${id}/relationships/vars/${v.json.data.id}`, {
      body: { data: { type: 'vars', attributes: { sensitive: false } } },
    });
    expect(back.status).toBe(422);
    expect(JSON.stringify(h.projections.dump())).not.toContain('plain-value-7731');
    expect(
      (await h.api('DELETE', `/varsets/${id}/relationships/vars/${v.json.data.id}`)).status,
    ).toBe(204);
    expect((await h.api('DELETE', `/varsets/${id}`)).status).toBe(204);
    expect((await h.api('GET', `/varsets/${id}`)).status).toBe(404);
  });

  it('are seen and managed by organization owners only', async () => {
    const org = await createOrg(h);
    const id = (await create(org, { name: 'private' })).json.data.id;
    const dev = h.user(`dev-${id.slice(-6)}`);
    expect((await h.api('GET', `/varsets/${id}`, { token: dev.token })).status).toBe(404);
    expect((await h.api('DELETE', `/varsets/${id}`, { token: dev.token })).status).toBe(404);
  });

  it('the read model rebuilds from the log as it was', async () => {
    const org = await createOrg(h);
    const ws = await createWorkspace(h, org);
    const id = (
      await create(
        org,
        { name: 'kept' },
        {
          workspaces: { data: [{ type: 'workspaces', id: ws.id }] },
          vars: {
            data: [{ type: 'vars', attributes: { key: 'k', value: 'v', category: 'terraform' } }],
          },
        },
      )
    ).json.data.id;
    const before = (await h.api('GET', `/varsets/${id}`)).text;
    const pages = (after: number, limit: number) => h.core.store.readAll(after, limit);
    expectEachProjectionRebuildsAlone(h.projections, pages);
    expect((await h.api('GET', `/varsets/${id}`)).text).toBe(before);
  });
});
