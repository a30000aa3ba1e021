import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEachProjectionRebuildsAlone } from '../../support/rebuild.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import {
  createOrg,
  createRun,
  createWorkspace,
  driveApply,
  drivePlan,
  status,
  uploadedCv,
} from '../../support/runs-flow.js';

/** Run triggers: a workspace's successful apply queues a run in the workspaces that follow it. */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

const follow = (follower: string, source: string) =>
  h.api('POST', `/workspaces/${follower}/run-triggers`, {
    body: {
      data: { relationships: { sourceable: { data: { type: 'workspaces', id: source } } } },
    },
  });

/** A workspace in `org` with an uploaded configuration. */
const ready = async (org: string) => {
  const ws = (await createWorkspace(h, org)).id;
  await uploadedCv(h, ws);
  return ws;
};

/** A run in `ws`, planned and applied. */
const applied = async (ws: string) => {
  const run = await createRun(h, ws, { 'auto-apply': true });
  await h.settle();
  await drivePlan(h, run.id);
  await h.settle();
  await driveApply(h, run.id);
  expect(await status(h, run.id)).toBe('applied');
  return run.id;
};

const runsOf = async (ws: string) => (await h.api('GET', `/workspaces/${ws}/runs`)).json.data;

describe('run triggers', () => {
  it('an apply in the source queues a run in each follower, naming the source run', async () => {
    const org = await createOrg(h);
    const [source, follower, next] = [await ready(org), await ready(org), await ready(org)];
    const made = await follow(follower, source);
    expect(made.status, made.text).toBe(201);
    expect(made.json.data).toMatchObject({
      type: 'run-triggers',
      relationships: {
        workspace: { data: { type: 'workspaces', id: follower } },
        sourceable: { data: { type: 'workspaces', id: source } },
      },
    });
    expect((await follow(next, follower)).status).toBe(201);
    const inbound = await h.api(
      'GET',
      `/workspaces/${follower}/run-triggers?filter%5Brun-trigger%5D%5Btype%5D=inbound`,
    );
    expect(inbound.json.data.map((t) => t.id)).toEqual([made.json.data.id]);
    const outbound = await h.api(
      'GET',
      `/workspaces/${source}/run-triggers?filter%5Brun-trigger%5D%5Btype%5D=outbound`,
    );
    expect(outbound.json.data.map((t) => t.id)).toEqual([made.json.data.id]);
    expect((await h.api('GET', `/workspaces/${source}/run-triggers`)).status).toBe(400);

    const sourceRun = await applied(source);
    await h.settle();
    const queued = await runsOf(follower);
    expect(queued).toHaveLength(1);
    const run = queued[0]!;
    expect(
      (await h.api('GET', `/workspaces/${follower}`)).json.data.attributes[
        'auto-apply-run-trigger'
      ],
    ).toBe(false);
    expect(run.attributes).toMatchObject({
      source: 'tfe-run-trigger',
      'triggering-source-name': (await h.api('GET', `/workspaces/${source}`)).json.data.attributes
        .name,
      'auto-apply': false,
    });
    expect(run.relationships['triggering-source']?.data).toEqual({
      type: 'workspaces',
      id: source,
    });
    expect(run.relationships['triggering-run']?.data).toEqual({ type: 'runs', id: sourceRun });
    // only a follower's own apply reaches the next one
    expect(await runsOf(next)).toHaveLength(0);
  });

  it('refuses a trigger from itself, a duplicate and any cycle (422), and stops after delete', async () => {
    const org = await createOrg(h);
    const [a, b, c] = [await ready(org), await ready(org), await ready(org)];
    expect((await follow(a, a)).status).toBe(422);
    const ab = await follow(b, a);
    expect(ab.status).toBe(201);
    expect((await follow(b, a)).status).toBe(422);
    const back = await follow(a, b);
    expect(back.status).toBe(422);
    expect(back.json.errors[0]!.detail).toMatch(/cycle/);
    expect((await follow(c, b)).status).toBe(201);
    expect((await follow(a, c)).status).toBe(422);

    expect((await h.api('DELETE', `/run-triggers/${ab.json.data.id}`)).status).toBe(204);
    expect((await h.api('GET', `/run-triggers/${ab.json.data.id}`)).status).toBe(404);
    await applied(a);
    await h.settle();
    expect(await runsOf(b)).toHaveLength(0);
  });

  it('a follower with auto-apply-run-trigger applies its triggered runs on its own', async () => {
    const org = await createOrg(h);
    const [source, follower] = [await ready(org), await ready(org)];
    const set = await h.api('PATCH', `/workspaces/${follower}`, {
      body: { data: { type: 'workspaces', attributes: { 'auto-apply-run-trigger': true } } },
    });
    expect(set.status, set.text).toBe(200);
    expect(set.json.data.attributes['auto-apply-run-trigger']).toBe(true);
    expect((await follow(follower, source)).status).toBe(201);
    await applied(source);
    await h.settle();
    const [run] = await runsOf(follower);
    expect(run!.attributes['auto-apply']).toBe(true);
  });

  it('a source in another organization, or one the caller cannot read, is not found', async () => {
    const org = await createOrg(h);
    const other = await createOrg(h);
    const follower = await ready(org);
    const foreign = await ready(other);
    expect((await follow(follower, foreign)).status).toBe(404);
  });

  it('the read model rebuilds from the log as it was', async () => {
    const org = await createOrg(h);
    const [a, b] = [await ready(org), await ready(org)];
    const id = (await follow(b, a)).json.data.id;
    const before = (await h.api('GET', `/run-triggers/${id}`)).text;
    const pages = (after: number, limit: number) => h.core.store.readAll(after, limit);
    expectEachProjectionRebuildsAlone(h.projections, pages);
    expect((await h.api('GET', `/run-triggers/${id}`)).text).toBe(before);
  });
});
