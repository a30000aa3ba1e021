import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import {
  createOrg,
  createRun,
  createWorkspace,
  driveApply,
  readyWorkspace,
} from '../../support/runs-flow.js';

/** Plans, applies, logs, run events, workspaces, organizations, teams and team access. */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

describe('plans, applies and logs', () => {
  it('shows the phases, frames logs with STX/ETX and serves the plan JSON', async () => {
    const { ws } = await readyWorkspace(h);
    const run = await createRun(h, ws);
    const planId = run.relationships.plan?.data?.id;
    expect(planId).toMatch(/^plan-/);
    const pending = await h.api('GET', `/plans/${planId}`);
    expect(pending.json.data.attributes).toMatchObject({ status: 'pending', 'has-changes': false });
    expect((await h.api('GET', `/plans/${planId}/json-output`)).status).toBe(204);
    await h.settle();
    await h.runs.executor.planStarted(run.id);
    const running = await h.api('GET', `/plans/${planId}`);
    const logUrl = String(running.json.data.attributes['log-read-url']);
    const partial = await h.api('GET', logUrl, { token: null });
    expect(partial.text).toBe('\u0002');
    await h.runs.executor.planFinished(run.id, {
      hasChanges: true,
      counts: { additions: 1, changes: 0, destructions: 0, imports: 0 },
      log: 'Plan: 1 to add, 0 to change, 0 to destroy.\n',
      jsonOutput: { format_version: '1.2' },
    });
    const plan = await h.api('GET', `/runs/${run.id}/plan`);
    expect(plan.json.data.attributes).toMatchObject({
      status: 'finished',
      'has-changes': true,
      'resource-additions': 1,
      'resource-changes': 0,
      'resource-destructions': 0,
      'resource-imports': 0,
    });
    expect(Object.keys(plan.json.data.attributes['status-timestamps'] as object).sort()).toEqual([
      'finished-at',
      'queued-at',
      'started-at',
    ]);
    const log = await h.api('GET', logUrl, { token: null });
    expect(log.text).toBe('\u0002Plan: 1 to add, 0 to change, 0 to destroy.\n\u0003');
    expect((await h.api('GET', `${logUrl}?offset=1&limit=5`, { token: null })).text).toBe('Plan:');
    expect((await h.api('GET', logUrl.replace(/.$/, 'x'), { token: null })).status).toBe(404);
    const json = await h.api('GET', `/plans/${planId}/json-output`);
    expect(json.status).toBe(200);
    expect(json.text).toContain('format_version');

    await h.api('POST', `/runs/${run.id}/actions/apply`, { body: { comment: 'go' } });
    await h.settle();
    await driveApply(h, run.id);
    const apply = await h.api('GET', `/applies/${run.relationships.apply?.data?.id}`);
    expect(apply.json.data.attributes).toMatchObject({
      status: 'finished',
      'resource-additions': 1,
    });
    const applyLog = await h.api('GET', String(apply.json.data.attributes['log-read-url']), {
      token: null,
    });
    expect(applyLog.text).toBe('\u0002Apply complete! Resources: 1 added.\n\u0003');

    const events = await h.api('GET', `/runs/${run.id}/run-events`);
    const actions = events.json.data.map((e) => e.attributes.action);
    expect(actions).toEqual([
      'created',
      'plan_queued',
      'plan_started',
      'plan_finished',
      'plan_stage_completed',
      'confirmed',
      'apply_queued',
      'apply_started',
      'apply_finished',
    ]);
    expect(
      events.json.data.find((e) => e.attributes.action === 'confirmed')?.attributes.description,
    ).toBe('go');
  });
});

describe('workspaces', () => {
  it('creates, shows by id and by name, lists, updates auto-apply and deletes', async () => {
    const org = await createOrg(h);
    const ws = await createWorkspace(h, org, { name: 'prod' });
    expect(ws.attributes).toMatchObject({ name: 'prod', 'auto-apply': false, locked: false });
    expect((await h.api('GET', `/organizations/${org}/workspaces/prod`)).json.data.id).toBe(ws.id);
    const dup = await h.api('POST', `/organizations/${org}/workspaces`, {
      body: { data: { type: 'workspaces', attributes: { name: 'prod' } } },
    });
    expect(dup.status).toBe(422);
    const updated = await h.api('PATCH', `/workspaces/${ws.id}`, {
      body: { data: { type: 'workspaces', attributes: { 'auto-apply': true } } },
    });
    expect(updated.json.data.attributes['auto-apply']).toBe(true);
    const list = await h.api('GET', `/organizations/${org}/workspaces`);
    expect(list.json.data.map((w) => w.id)).toEqual([ws.id]);
    expect(list.json.meta.pagination['total-count']).toBe(1);
    expect((await h.api('DELETE', `/workspaces/${ws.id}`)).status).toBe(204);
    expect((await h.api('GET', `/workspaces/${ws.id}`)).status).toBe(404);
  });
});

describe('organizations, teams and access', () => {
  it('gives a team exactly the access granted, through its team token', async () => {
    const org = await createOrg(h);
    expect((await h.api('GET', `/organizations/${org}`)).json.data.attributes.name).toBe(org);
    expect((await h.api('GET', '/organizations')).json.data.map((o) => o.id)).toContain(org);
    const ws = (await createWorkspace(h, org)).id;
    const team = await h.api('POST', `/organizations/${org}/teams`, {
      body: { data: { type: 'teams', attributes: { name: 'deployers' } } },
    });
    expect(team.status).toBe(201);
    const grant = await h.api('POST', '/team-workspaces', {
      body: {
        data: {
          type: 'team-workspaces',
          attributes: { access: 'plan' },
          relationships: {
            team: { data: { type: 'teams', id: team.json.data.id } },
            workspace: { data: { type: 'workspaces', id: ws } },
          },
        },
      },
    });
    expect(grant.status).toBe(201);
    expect(
      (await h.api('GET', `/team-workspaces?filter[workspace][id]=${ws}`)).json.data,
    ).toHaveLength(1);
    const token = String(
      (await h.api('POST', `/teams/${team.json.data.id}/authentication-token`, { body: {} })).json
        .data.attributes.token,
    );
    const cv = await h.api('POST', `/workspaces/${ws}/configuration-versions`, {
      token,
      body: { data: { attributes: { 'auto-queue-runs': true } } },
    });
    expect(cv.status).toBe(201);
    const upload = await h.api('PUT', String(cv.json.data.attributes['upload-url']), {
      token: null,
      raw: (await import('../../support/runs-harness.js')).configTarball(),
    });
    expect(upload.status).toBe(200);
    const runs = await h.api('GET', `/workspaces/${ws}/runs`, { token });
    const run = runs.json.data[0]!;
    expect(run.attributes.permissions).toMatchObject({
      'can-apply': false,
      'can-discard': false,
      'can-comment': true,
      'can-force-cancel': false,
    });
    expect(
      (await h.api('POST', `/runs/${run.id}/actions/discard`, { token, body: {} })).status,
    ).toBe(404);
    const write = await h.api('PATCH', `/team-workspaces/${grant.json.data.id}`, {
      body: { data: { attributes: { access: 'write' } } },
    });
    expect(write.json.data.attributes.access).toBe('write');
    expect(
      (await h.api('GET', `/runs/${run.id}`, { token })).json.data.attributes.permissions[
        'can-discard'
      ],
    ).toBe(true);
    expect(
      (await h.api('POST', `/runs/${run.id}/actions/discard`, { token, body: {} })).status,
    ).toBe(202);
    expect((await h.api('DELETE', `/team-workspaces/${grant.json.data.id}`)).status).toBe(204);
    expect((await h.api('GET', `/runs/${run.id}`, { token })).status).toBe(404);
  });

  it('makes a team member see what the team sees, and account details name the user', async () => {
    const org = await createOrg(h);
    const ws = (await createWorkspace(h, org)).id;
    const member = h.user('member');
    const team = await h.api('POST', `/organizations/${org}/teams`, {
      body: { data: { attributes: { name: 'readers' } } },
    });
    expect(
      (
        await h.api('POST', `/teams/${team.json.data.id}/relationships/users`, {
          body: { data: [{ type: 'users', id: member.id }] },
        })
      ).status,
    ).toBe(204);
    expect((await h.api('GET', `/workspaces/${ws}`, { token: member.token })).status).toBe(404);
    await h.api('POST', '/team-workspaces', {
      body: {
        data: {
          attributes: { access: 'read' },
          relationships: {
            team: { data: { id: team.json.data.id } },
            workspace: { data: { id: ws } },
          },
        },
      },
    });
    expect((await h.api('GET', `/workspaces/${ws}`, { token: member.token })).status).toBe(200);
    expect(
      (await h.api('GET', '/account/details', { token: member.token })).json.data.attributes
        .username,
    ).toBe('member');
  });
});

describe('state versions', () => {
  it('lists, shows and downloads the states the executor records; the newest is current', async () => {
    const { org, ws } = await readyWorkspace(h);
    expect((await h.api('GET', `/workspaces/${ws}/current-state-version`)).status).toBe(404);
    const state = JSON.stringify({
      version: 4,
      serial: 1,
      lineage: 'l-1',
      resources: [{ type: 'null_resource', name: 'a' }],
    });
    // Recorded at once, they still take one serial each.
    const [first, second] = await Promise.all([
      h.runs.recordStateVersion({ workspaceId: ws, runId: null, state }),
      h.runs.recordStateVersion({ workspaceId: ws, runId: null, state }),
    ]);
    expect([first.serial, second.serial]).toEqual([1, 2]);
    const current = await h.api('GET', `/workspaces/${ws}/current-state-version`);
    expect(current.json.data).toMatchObject({
      id: second.id,
      type: 'state-versions',
      attributes: { serial: 2, lineage: 'l-1', status: 'finalized' },
    });
    expect(
      (await h.api('GET', `/workspaces/${ws}`)).json.data.relationships['current-state-version']
        ?.data?.id,
    ).toBe(second.id);
    expect((await h.api('GET', `/state-versions/${first.id}`)).json.data.attributes.serial).toBe(1);
    expect((await h.api('GET', `/state-versions/${first.id}/download`)).text).toBe(state);
    const name = h.runs.model.workspaces.get(ws)!.name;
    const list = await h.api(
      'GET',
      `/state-versions?filter[organization][name]=${org}&filter[workspace][name]=${name}`,
    );
    expect(list.json.data.map((s) => s.id)).toEqual([second.id, first.id]);
    expect((await h.api('GET', '/state-versions')).status).toBe(422);
    expect((await h.api('GET', '/state-versions/sv-nope')).status).toBe(404);
  });
});
