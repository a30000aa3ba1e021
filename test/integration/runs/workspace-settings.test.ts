import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace, uploadedCv } from '../../support/runs-flow.js';

/**
 * The workspace attributes go-tfe and the tfe provider send: each is stored and read back, or
 * refused with a 422 naming it — none is answered 201 and then lost.
 */

let h: RunsHarness;
let org: string;
beforeAll(async () => {
  h = await startRunsHarness();
  org = await createOrg(h);
});
afterAll(async () => h.close());

const STORED = {
  'allow-destroy-plan': false,
  'global-remote-state': true,
  'speculative-enabled': false,
  'queue-all-runs': true,
  'file-triggers-enabled': false,
  'trigger-prefixes': ['modules/', 'shared/'],
  'trigger-patterns': ['/envs/prod/**/*'],
  'structured-run-output-enabled': false,
  'source-name': 'ops-tooling',
  'source-url': 'https://ops.example.com/tooling',
  'working-directory': '',
  'assessments-enabled': false,
};

describe('workspace settings the tfe provider sends', () => {
  it('reads back the reference defaults on a workspace created without them', async () => {
    const ws = await createWorkspace(h, org);
    expect(ws.attributes).toMatchObject({
      'allow-destroy-plan': true,
      'global-remote-state': false,
      'speculative-enabled': true,
      'queue-all-runs': false,
      'file-triggers-enabled': true,
      'trigger-prefixes': [],
      'trigger-patterns': [],
      'structured-run-output-enabled': true,
      'source-name': null,
      'source-url': null,
      'working-directory': '',
      'assessments-enabled': false,
    });
  });

  it('stores every attribute given on create and on PATCH, and reads it back', async () => {
    const ws = await createWorkspace(h, org, STORED);
    expect(ws.attributes).toMatchObject(STORED);
    const read = await h.api('GET', `/workspaces/${ws.id}`);
    expect(read.json.data.attributes).toMatchObject(STORED);

    const patched = await h.api('PATCH', `/workspaces/${ws.id}`, {
      body: {
        data: {
          type: 'workspaces',
          attributes: {
            'allow-destroy-plan': true,
            'trigger-prefixes': [],
            'queue-all-runs': false,
          },
        },
      },
    });
    expect(patched.status, patched.text).toBe(200);
    const after = (await h.api('GET', `/workspaces/${ws.id}`)).json.data.attributes;
    expect(after).toMatchObject({
      ...STORED,
      'allow-destroy-plan': true,
      'trigger-prefixes': [],
      'queue-all-runs': false,
    });
    // An attribute left out of a PATCH keeps its value.
    expect(after['global-remote-state']).toBe(true);
  });

  it('takes the deprecated operations flag as the execution mode', async () => {
    const ws = await createWorkspace(h, org, { operations: false });
    expect(ws.attributes).toMatchObject({ operations: false, 'execution-mode': 'local' });
    const refused = await h.api('POST', `/organizations/${org}/workspaces`, {
      body: {
        data: {
          type: 'workspaces',
          attributes: { name: 'both-modes', operations: true, 'execution-mode': 'local' },
        },
      },
    });
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('operations');
  });

  it.each([
    ['an attribute Keel does not know', { frobnicate: true }, 'frobnicate'],
    ['a working directory', { 'working-directory': 'envs/prod' }, 'working-directory'],
    ['health assessments', { 'assessments-enabled': true }, 'assessments-enabled'],
    [
      'a VCS repository',
      { 'vcs-repo': { identifier: 'acme/infra', 'oauth-token-id': 'ot-1' } },
      'vcs-repo',
    ],
    ['an agent pool', { 'agent-pool-id': 'apool-1' }, 'agent-pool-id'],
  ])('refuses %s with a 422 naming it, on create and on PATCH', async (_what, attrs, name) => {
    const created = await h.api('POST', `/organizations/${org}/workspaces`, {
      body: { data: { type: 'workspaces', attributes: { name: `refused-${name}`, ...attrs } } },
    });
    expect(created.status, created.text).toBe(422);
    expect(created.text).toContain(name);
    expect((await h.api('GET', `/organizations/${org}/workspaces/refused-${name}`)).status).toBe(
      404,
    );
    const ws = await createWorkspace(h, org);
    const patched = await h.api('PATCH', `/workspaces/${ws.id}`, {
      body: { data: { type: 'workspaces', attributes: attrs } },
    });
    expect(patched.status, patched.text).toBe(422);
    expect(patched.text).toContain(name);
  });

  it('refuses a destroy run where allow-destroy-plan is false', async () => {
    const ws = await createWorkspace(h, org, { 'allow-destroy-plan': false });
    const cv = await uploadedCv(h, ws.id);
    const run = (attributes: Record<string, unknown>) =>
      h.api('POST', '/runs', {
        body: {
          data: {
            type: 'runs',
            attributes,
            relationships: {
              workspace: { data: { type: 'workspaces', id: ws.id } },
              'configuration-version': { data: { type: 'configuration-versions', id: cv } },
            },
          },
        },
      });
    const destroy = await run({ 'is-destroy': true });
    expect(destroy.status, destroy.text).toBe(422);
    expect(destroy.text).toContain('allow-destroy-plan');
    expect((await run({})).status).toBe(201);
  });
});

describe('GET /workspaces/:id/state-versions', () => {
  it('lists the workspace state versions, newest first, paged', async () => {
    const ws = await createWorkspace(h, org);
    const lock = await h.api('POST', `/workspaces/${ws.id}/actions/lock`, { body: {} });
    expect(lock.status, lock.text).toBe(200);
    const ids: string[] = [];
    for (const serial of [1, 2, 3]) {
      const text = JSON.stringify({
        version: 4,
        terraform_version: '1.11.4',
        serial,
        lineage: 'lin',
        outputs: {},
        resources: [],
      });
      const md5 = createHash('md5').update(text).digest('hex');
      const res = await h.api('POST', `/workspaces/${ws.id}/state-versions`, {
        body: {
          data: {
            type: 'state-versions',
            attributes: {
              serial,
              md5,
              lineage: 'lin',
              state: Buffer.from(text).toString('base64'),
            },
          },
        },
      });
      expect(res.status, res.text).toBe(201);
      ids.push(res.json.data.id);
    }
    const page = await h.api('GET', `/workspaces/${ws.id}/state-versions?page[size]=2`);
    expect(page.status, page.text).toBe(200);
    expect(page.json.data.map((sv) => sv.id)).toEqual([ids[2], ids[1]]);
    expect(page.json.data[0]!.type).toBe('state-versions');
    expect(page.json.meta.pagination['total-count']).toBe(3);
    const byFilter = await h.api(
      'GET',
      `/state-versions?filter[organization][name]=${org}&filter[workspace][name]=${ws.attributes.name as string}&page[size]=2`,
    );
    expect(page.json.data).toEqual(byFilter.json.data);
    expect((await h.api('GET', '/workspaces/ws-missing/state-versions')).status).toBe(404);
  });
});
