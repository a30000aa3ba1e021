import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createRun, readyWorkspace, status } from '../../support/runs-flow.js';

/** What the terraform CLI reads while its run waits: the organization queue and capacity. */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

describe('GET /organizations/:org/runs/queue', () => {
  it('lists the runs waiting for the executor, oldest first, with their position', async () => {
    const { org, ws } = await readyWorkspace(h);
    const other = await readyWorkspace(h);
    const first = await createRun(h, ws);
    const second = await createRun(h, ws, { 'plan-only': true });
    const waiting = await createRun(h, ws);
    const elsewhere = await createRun(h, other.ws);
    await h.settle();
    expect(await status(h, first.id)).toBe('plan_queued');
    expect(await status(h, waiting.id)).toBe('pending');

    const queue = await h.api('GET', `/organizations/${org}/runs/queue`);
    expect(queue.status, queue.text).toBe(200);
    expect(queue.json.data.map((r) => [r.id, r.attributes['position-in-queue']])).toEqual([
      [first.id, 0],
      [second.id, 1],
    ]);
    expect(queue.json.meta.pagination).toMatchObject({
      'current-page': 1,
      'total-pages': 1,
      'total-count': 2,
    });
    expect(queue.json.data.map((r) => r.id)).not.toContain(elsewhere.id);

    await h.runs.executor.planStarted(first.id);
    const capacity = await h.api('GET', `/organizations/${org}/capacity`);
    expect(capacity.status, capacity.text).toBe(200);
    expect(capacity.json.data).toMatchObject({
      type: 'organization-capacity',
      attributes: { pending: 1, running: 1 },
    });
    const paged = await h.api('GET', `/organizations/${org}/runs/queue?page%5Bsize%5D=1`);
    expect(paged.json.data.map((r) => r.id)).toEqual([second.id]);
  });

  it('is not found for an organization the caller does not belong to', async () => {
    const { org } = await readyWorkspace(h);
    const stranger = h.user('stranger');
    for (const path of [`/organizations/${org}/runs/queue`, `/organizations/${org}/capacity`]) {
      const res = await h.api('GET', path, { token: stranger.token });
      expect(res.status, res.text).toBe(404);
      expect(res.json.errors[0]?.status).toBe('404');
    }
  });
});

describe('GET /runs/:id?include=task_stages', () => {
  it('answers as real clients ask; a run without task stages includes none', async () => {
    const { ws } = await readyWorkspace(h);
    const run = await createRun(h, ws);
    const res = await h.api('GET', `/runs/${run.id}?include=task_stages,plan`);
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.id).toBe(run.id);
    expect(res.json.included?.map((r) => r.type)).toEqual(['plans']);
  });

  it('still refuses an include value no client sends, naming the parameter', async () => {
    const { ws } = await readyWorkspace(h);
    const run = await createRun(h, ws);
    const res = await h.api('GET', `/runs/${run.id}?include=bogus`);
    expect(res.status).toBe(400);
    expect(res.json.errors[0]?.detail).toContain('include parameter');
  });
});
