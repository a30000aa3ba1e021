import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createRun, drivePlan, getRun, readyWorkspace, status } from '../../support/runs-flow.js';

/** The workspace queue and lock: user locks, plan-only bypass, force-execute, auto-apply. */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

describe('queue and lock', () => {
  it('keeps runs pending while a user holds the lock; plan-only runs go ahead', async () => {
    const { ws } = await readyWorkspace(h);
    expect(
      (await h.api('POST', `/workspaces/${ws}/actions/lock`, { body: { reason: 'hold' } })).status,
    ).toBe(200);
    const run = await createRun(h, ws);
    const speculative = await createRun(h, ws, { 'plan-only': true });
    await h.settle();
    expect(await status(h, run.id)).toBe('pending');
    expect(await status(h, speculative.id)).toBe('plan_queued');
    const locked = await h.api('GET', `/workspaces/${ws}`);
    expect(locked.json.data.attributes).toMatchObject({ locked: true, 'locked-reason': 'hold' });
    expect(locked.json.data.relationships['locked-by']?.data?.type).toBe('users');
    await h.api('POST', `/workspaces/${ws}/actions/unlock`, { body: {} });
    await h.settle();
    expect(await status(h, run.id)).toBe('plan_queued');
    expect(
      (await h.api('GET', `/workspaces/${ws}`)).json.data.relationships['locked-by']?.data,
    ).toEqual({ type: 'runs', id: run.id });
  });

  it('force-execute discards the run awaiting confirmation and every earlier pending run, then runs the target', async () => {
    const { ws } = await readyWorkspace(h);
    const holder = await createRun(h, ws);
    const earlier = await createRun(h, ws);
    const target = await createRun(h, ws);
    const later = await createRun(h, ws);
    await h.settle();
    await drivePlan(h, holder.id);
    expect(await status(h, holder.id)).toBe('planned');
    expect((await getRun(h, target.id)).attributes.permissions['can-force-execute']).toBe(true);
    const res = await h.api('POST', `/runs/${target.id}/actions/force-execute`);
    expect(res.status, res.text).toBe(202);
    await h.settle();
    expect(await status(h, holder.id)).toBe('discarded');
    expect(await status(h, earlier.id)).toBe('discarded');
    expect(await status(h, target.id)).toBe('plan_queued');
    expect(await status(h, later.id)).toBe('pending');
  });

  it('auto-applies when the workspace says so and the caller may apply', async () => {
    const { ws } = await readyWorkspace(h, { 'auto-apply': true });
    const run = await createRun(h, ws);
    expect(run.attributes['auto-apply']).toBe(true);
    await h.settle();
    await drivePlan(h, run.id);
    expect(await status(h, run.id)).toBe('apply_queued');
    const override = await createRun(h, ws, { 'auto-apply': false });
    expect(override.attributes['auto-apply']).toBe(false);
  });

  it('uses the latest configuration version when the relationship is null', async () => {
    const { ws } = await readyWorkspace(h);
    const latest = h.runs.model.workspaces.get(ws)!.latestConfigurationVersionId;
    const run = await createRun(h, ws);
    expect(run.relationships['configuration-version']?.data?.id).toBe(latest);
  });

  it('cancel interrupts, the executor acknowledges, and the next run proceeds', async () => {
    const { ws } = await readyWorkspace(h);
    const a = await createRun(h, ws);
    const b = await createRun(h, ws);
    await h.settle();
    await h.runs.executor.planStarted(a.id);
    expect((await getRun(h, a.id)).attributes.actions['is-cancelable']).toBe(true);
    expect(
      (await h.api('POST', `/runs/${a.id}/actions/cancel`, { body: { comment: 'wrong branch' } }))
        .status,
    ).toBe(202);
    const asked = await getRun(h, a.id);
    expect(asked.attributes.status).toBe('planning');
    expect(asked.attributes['canceled-at']).toBe('2026-03-01T12:00:00.000Z');
    expect(asked.attributes.actions).toMatchObject({
      'is-cancelable': false,
      'is-force-cancelable': false,
    });
    h.clock.advance(10_000);
    expect((await getRun(h, a.id)).attributes.actions['is-force-cancelable']).toBe(true);
    await h.runs.executor.canceled(a.id, 'Interrupt received.\n');
    await h.settle();
    expect(await status(h, a.id)).toBe('canceled');
    expect(await status(h, b.id)).toBe('plan_queued');
  });
});
