import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace } from '../../support/runs-flow.js';

/** Workspace settings and tags the terraform CLI reads and writes. */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

const patch = (ws: string, attributes: Record<string, unknown>) =>
  h.api('PATCH', `/workspaces/${ws}`, { body: { data: { type: 'workspaces', attributes } } });

describe('terraform-version and execution-mode', () => {
  it('keeps and reports what the CLI sets, latest and remote by default', async () => {
    const org = await createOrg(h);
    const ws = await createWorkspace(h, org);
    expect(ws.attributes).toMatchObject({
      'terraform-version': 'latest',
      'execution-mode': 'remote',
      operations: true,
      'tag-names': [],
    });
    const set = await patch(ws.id, { 'terraform-version': '1.11.4', 'execution-mode': 'local' });
    expect(set.status, set.text).toBe(200);
    expect(set.json.data.attributes).toMatchObject({
      'terraform-version': '1.11.4',
      'execution-mode': 'local',
      operations: false,
    });
    const read = await h.api(
      'GET',
      `/organizations/${org}/workspaces/${String(ws.attributes.name)}`,
    );
    expect(read.json.data.attributes).toMatchObject({
      'terraform-version': '1.11.4',
      'execution-mode': 'local',
    });
    const constraint = await patch(ws.id, { 'terraform-version': '~> 1.11' });
    expect(constraint.json.data.attributes['terraform-version']).toBe('~> 1.11');
    const back = await patch(ws.id, { 'execution-mode': 'remote' });
    expect(back.json.data.attributes['execution-mode']).toBe('remote');
    const created = await createWorkspace(h, org, {
      'terraform-version': '1.9.8',
      'execution-mode': 'local',
    });
    expect(created.attributes).toMatchObject({
      'terraform-version': '1.9.8',
      'execution-mode': 'local',
    });
  });

  it('refuses agent execution and a malformed version, changing nothing', async () => {
    const org = await createOrg(h);
    const ws = await createWorkspace(h, org);
    const agent = await patch(ws.id, { 'execution-mode': 'agent' });
    expect(agent.status).toBe(422);
    expect(agent.json.errors[0]?.detail).toContain('Keel has no agents');
    const bad = await patch(ws.id, { 'terraform-version': 'one point eleven' });
    expect(bad.status).toBe(422);
    expect(bad.json.errors[0]?.detail).toContain('terraform-version');
    const read = await h.api('GET', `/workspaces/${ws.id}`);
    expect(read.json.data.attributes).toMatchObject({
      'terraform-version': 'latest',
      'execution-mode': 'remote',
    });
  });
});

describe('workspace tags', () => {
  it('adds, lists, finds by tag and removes tags as go-tfe sends them', async () => {
    const org = await createOrg(h);
    const a = await createWorkspace(h, org);
    const b = await createWorkspace(h, org);
    const add = (ws: string, names: string[]) =>
      h.api('POST', `/workspaces/${ws}/relationships/tags`, {
        body: { data: names.map((name) => ({ type: 'tags', attributes: { name } })) },
      });
    expect((await add(a.id, ['app', 'prod'])).status).toBe(204);
    expect((await add(b.id, ['app'])).status).toBe(204);
    const listed = await h.api('GET', `/workspaces/${a.id}/relationships/tags`);
    expect(listed.json.data.map((t) => t.attributes.name)).toEqual(['app', 'prod']);
    expect((await h.api('GET', `/workspaces/${a.id}`)).json.data.attributes['tag-names']).toEqual([
      'app',
      'prod',
    ]);

    const both = await h.api('GET', `/organizations/${org}/workspaces?search%5Btags%5D=app`);
    expect(both.json.data.map((w) => w.id).sort()).toEqual([a.id, b.id].sort());
    const prod = await h.api('GET', `/organizations/${org}/workspaces?search%5Btags%5D=app,prod`);
    expect(prod.json.data.map((w) => w.id)).toEqual([a.id]);
    expect(prod.json.meta.pagination['total-count']).toBe(1);

    // removal by id, as a tag list answer names them
    const prodTag = listed.json.data.find((t) => t.attributes.name === 'prod')!;
    const removed = await h.api('DELETE', `/workspaces/${a.id}/relationships/tags`, {
      body: { data: [{ type: 'tags', id: prodTag.id }] },
    });
    expect(removed.status, removed.text).toBe(204);
    expect(
      (await h.api('GET', `/workspaces/${a.id}/relationships/tags`)).json.data.map(
        (t) => t.attributes.name,
      ),
    ).toEqual(['app']);
  });

  it('creates a workspace with tag bindings, as the CLI does for a tags map', async () => {
    const org = await createOrg(h);
    const res = await h.api('POST', `/organizations/${org}/workspaces`, {
      body: {
        data: {
          type: 'workspaces',
          attributes: { name: 'bound' },
          relationships: {
            'tag-bindings': {
              data: [{ type: 'tag-bindings', attributes: { key: 'env', value: 'dev' } }],
            },
          },
        },
      },
    });
    expect(res.status, res.text).toBe(201);
    const bindings = await h.api('GET', `/workspaces/${res.json.data.id}/tag-bindings`);
    expect(bindings.json.data.map((b) => b.attributes)).toEqual([{ key: 'env', value: 'dev' }]);
  });

  it('creates a workspace with tags, and refuses a bad tag changing nothing', async () => {
    const org = await createOrg(h);
    const res = await h.api('POST', `/organizations/${org}/workspaces`, {
      body: {
        data: {
          type: 'workspaces',
          attributes: { name: 'tagged' },
          relationships: { tags: { data: [{ type: 'tags', attributes: { name: 'ci' } }] } },
        },
      },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.json.data.attributes['tag-names']).toEqual(['ci']);
    const bad = await h.api('POST', `/workspaces/${res.json.data.id}/relationships/tags`, {
      body: { data: [{ type: 'tags', attributes: { name: 'no spaces' } }] },
    });
    expect(bad.status).toBe(422);
    const unknownId = await h.api('POST', `/workspaces/${res.json.data.id}/relationships/tags`, {
      body: { data: [{ type: 'tags', id: 'tag-nope' }] },
    });
    expect(unknownId.status).toBe(422);
    expect(
      (await h.api('GET', `/workspaces/${res.json.data.id}`)).json.data.attributes['tag-names'],
    ).toEqual(['ci']);
  });

  it('keeps tag bindings, a new value replacing the old one, and finds workspaces by key', async () => {
    const org = await createOrg(h);
    const ws = await createWorkspace(h, org);
    const bind = (bindings: { key: string; value?: string }[]) =>
      h.api('PATCH', `/workspaces/${ws.id}/tag-bindings`, {
        body: { data: bindings.map((attributes) => ({ type: 'tag-bindings', attributes })) },
      });
    expect((await bind([{ key: 'env', value: 'dev' }, { key: 'team' }])).status).toBe(200);
    const res = await bind([{ key: 'env', value: 'prod' }]);
    expect(res.json.data.map((b) => b.attributes)).toEqual([
      { key: 'env', value: 'prod' },
      { key: 'team', value: '' },
    ]);
    const listed = await h.api('GET', `/workspaces/${ws.id}/tag-bindings`);
    expect(listed.json.data.map((b) => b.attributes.key)).toEqual(['env', 'team']);
    const found = await h.api('GET', `/organizations/${org}/workspaces?search%5Btags%5D=env`);
    expect(found.json.data.map((w) => w.id)).toEqual([ws.id]);
    const other = await createWorkspace(h, org);
    const tagged = (query: string) =>
      h
        .api('GET', `/organizations/${org}/workspaces?${query}`)
        .then((r) => r.json.data.map((w) => w.id));
    expect(
      await tagged(
        'filter%5Btagged%5D%5B0%5D%5Bkey%5D=env&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=prod',
      ),
    ).toEqual([ws.id]);
    expect(
      await tagged(
        'filter%5Btagged%5D%5B0%5D%5Bkey%5D=env&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=dev',
      ),
    ).toEqual([]);
    expect(await tagged('filter%5Btagged%5D%5B0%5D%5Bkey%5D=team')).toEqual([ws.id]);
    expect((await tagged('page%5Bsize%5D=100')).sort()).toEqual([ws.id, other.id].sort());
    const bad = await h.api(
      'GET',
      `/organizations/${org}/workspaces?filter%5Btagged%5D%5B0%5D%5Bvalue%5D=x`,
    );
    expect(bad.status).toBe(422);
  });

  it('needs admin access to change tags', async () => {
    const org = await createOrg(h);
    const ws = await createWorkspace(h, org);
    const stranger = h.user('tagless');
    const res = await h.api('POST', `/workspaces/${ws.id}/relationships/tags`, {
      token: stranger.token,
      body: { data: [{ type: 'tags', attributes: { name: 'x' } }] },
    });
    expect(res.status).toBe(404);
  });
});
