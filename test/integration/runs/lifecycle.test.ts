import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import {
  createRun,
  drivePlan,
  driveApply,
  getRun,
  readyWorkspace,
  status,
} from '../../support/runs-flow.js';

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

describe('run lifecycle over HTTP', () => {
  it('creates a pending run with the spec defaults', async () => {
    const { ws } = await readyWorkspace(h);
    const run = await createRun(h, ws);
    expect(run.id).toMatch(/^run-/);
    expect(run.type).toBe('runs');
    expect(run.attributes).toMatchObject({
      status: 'pending',
      refresh: true,
      'refresh-only': false,
      'is-destroy': false,
      'plan-only': false,
      'auto-apply': false,
      'save-plan': false,
      source: 'engine-api',
      'trigger-reason': 'manual',
      variables: [],
      'target-addrs': null,
      'replace-addrs': null,
      'has-changes': false,
      actions: {
        'is-cancelable': false,
        'is-confirmable': false,
        'is-discardable': true,
        'is-force-cancelable': false,
      },
    });
    expect(run.attributes['status-timestamps']).toEqual({
      'plan-queueable-at': '2026-03-01T12:00:00.000Z',
    });
    expect(run.attributes['created-at']).toBe('2026-03-01T12:00:00.000Z');
    expect(run.links.self).toBe(`/api/v2/runs/${run.id}`);
    expect(run.relationships.workspace?.data).toEqual({ type: 'workspaces', id: ws });
  });

  it('plans, waits for confirmation, applies, and frees the workspace', async () => {
    const { ws } = await readyWorkspace(h);
    const run = await createRun(h, ws);
    await h.settle();
    expect(await status(h, run.id)).toBe('plan_queued');
    await drivePlan(h, run.id);
    const planned = await getRun(h, run.id);
    expect(planned.attributes.status).toBe('planned');
    expect(planned.attributes.actions['is-confirmable']).toBe(true);
    expect(planned.attributes['has-changes']).toBe(true);
    const apply = await h.api('POST', `/runs/${run.id}/actions/apply`, {
      body: { comment: 'ship it' },
    });
    expect(apply.status).toBe(202);
    expect(apply.text).toBe('');
    await h.settle();
    expect(await status(h, run.id)).toBe('apply_queued');
    await driveApply(h, run.id);
    const applied = await getRun(h, run.id);
    expect(applied.attributes.status).toBe('applied');
    expect(Object.keys(applied.attributes['status-timestamps'])).toEqual([
      'plan-queueable-at',
      'plan-queued-at',
      'planning-at',
      'planned-at',
      'confirmed-at',
      'apply-queued-at',
      'applying-at',
      'applied-at',
    ]);
    const wsDoc = await h.api('GET', `/workspaces/${ws}`);
    expect(wsDoc.json.data.attributes.locked).toBe(false);
    expect(wsDoc.json.data.relationships['current-run']?.data?.id).toBe(run.id);
  });

  it('keeps later runs pending until the first completes (FIFO)', async () => {
    const { ws } = await readyWorkspace(h);
    const a = await createRun(h, ws);
    const b = await createRun(h, ws);
    await h.settle();
    expect(await status(h, a.id)).toBe('plan_queued');
    expect(await status(h, b.id)).toBe('pending');
    await drivePlan(h, a.id, false);
    expect(await status(h, a.id)).toBe('planned_and_finished');
    expect(await status(h, b.id)).toBe('plan_queued');
  });
});
