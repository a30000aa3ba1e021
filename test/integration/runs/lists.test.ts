import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createRun, drivePlan, readyWorkspace } from '../../support/runs-flow.js';

/** The two run lists: pagination, links, meta, every filter and search, newest first. */

let h: RunsHarness;
let org: string;
let ws: string;
const ids: string[] = [];
let planOnly: string;

beforeAll(async () => {
  h = await startRunsHarness();
  ({ org, ws } = await readyWorkspace(h));
  for (let i = 0; i < 25; i++) {
    ids.push((await createRun(h, ws, { message: i === 3 ? 'Deploy the Widget' : `run ${i}` })).id);
    h.clock.advance(1000);
  }
  planOnly = (await createRun(h, ws, { 'plan-only': true })).id;
  await h.settle();
  // the first run plans and ends without changes; the second then holds the lock
  await drivePlan(h, ids[0]!, false);
});
afterAll(async () => h.close());

const listIds = (data: { id: string }[]) => data.map((r) => r.id);

describe('GET /workspaces/:id/runs', () => {
  it('pages 20 by default, newest first, without plan-only runs, with total count and links', async () => {
    const res = await h.api('GET', `/workspaces/${ws}/runs`);
    expect(res.status).toBe(200);
    expect(listIds(res.json.data)).toEqual([...ids].reverse().slice(0, 20));
    expect(res.json.meta.pagination).toEqual({
      'current-page': 1,
      'next-page': 2,
      'prev-page': null,
      'page-size': 20,
      'total-count': 25,
      'total-pages': 2,
    });
    const links = res.json.links;
    expect(Object.keys(links).sort()).toEqual(['first', 'last', 'next', 'prev', 'self']);
    expect(links.next).toBe(
      `${h.url}/api/v2/workspaces/${ws}/runs?page%5Bnumber%5D=2&page%5Bsize%5D=20`,
    );
    expect(links.prev).toBeNull();
    expect(links.last).toContain('page%5Bnumber%5D=2');
  });

  it('serves the last page, an empty page past the end, and clamps page[size] to 100', async () => {
    const p2 = await h.api('GET', `/workspaces/${ws}/runs?page[number]=2&page[size]=20`);
    expect(listIds(p2.json.data)).toEqual([...ids].reverse().slice(20));
    expect(p2.json.meta.pagination).toMatchObject({
      'current-page': 2,
      'next-page': null,
      'prev-page': 1,
    });
    const past = await h.api('GET', `/workspaces/${ws}/runs?page%5Bnumber%5D=9`);
    expect(past.status).toBe(200);
    expect(past.json.data).toEqual([]);
    expect(past.json.meta.pagination['current-page']).toBe(9);
    const big = await h.api('GET', `/workspaces/${ws}/runs?page[size]=500`);
    expect(big.json.meta.pagination['page-size']).toBe(100);
    expect(big.json.data).toHaveLength(25);
    const bad = await h.api('GET', `/workspaces/${ws}/runs?page[number]=0`);
    expect(bad.status).toBe(422);
  });

  it('includes plan-only runs when filter[operation] asks for them', async () => {
    const all = await h.api(
      'GET',
      `/workspaces/${ws}/runs?filter[operation]=plan_only,plan_and_apply,save_plan,refresh_only,destroy,empty_apply&page[size]=100`,
    );
    expect(all.json.data).toHaveLength(26);
    expect(all.json.data[0]!.id).toBe(planOnly);
    const only = await h.api('GET', `/workspaces/${ws}/runs?filter[operation]=plan_only`);
    expect(listIds(only.json.data)).toEqual([planOnly]);
    const bad = await h.api('GET', `/workspaces/${ws}/runs?filter[operation]=teleport`);
    expect(bad.status).toBe(422);
  });

  it('filters by status, status group, source, timeframe and agent pool', async () => {
    const finished = await h.api(
      'GET',
      `/workspaces/${ws}/runs?filter[status]=planned_and_finished`,
    );
    expect(listIds(finished.json.data)).toEqual([ids[0]]);
    expect(finished.json.meta.pagination['total-count']).toBe(1);
    const final = await h.api('GET', `/workspaces/${ws}/runs?filter[status_group]=final`);
    expect(listIds(final.json.data)).toEqual([ids[0]]);
    const nonFinal = await h.api(
      'GET',
      `/workspaces/${ws}/runs?filter[status_group]=non_final&page[size]=100`,
    );
    expect(nonFinal.json.data).toHaveLength(24);
    const discardable = await h.api(
      'GET',
      `/workspaces/${ws}/runs?filter[status_group]=discardable`,
    );
    expect(discardable.json.data).toEqual([]);
    const api = await h.api(
      'GET',
      `/workspaces/${ws}/runs?filter[source]=engine-api&page[size]=100`,
    );
    expect(api.json.data).toHaveLength(25);
    const ui = await h.api('GET', `/workspaces/${ws}/runs?filter[source]=engine-ui`);
    expect(ui.json.data).toEqual([]);
    expect(
      (await h.api('GET', `/workspaces/${ws}/runs?filter[timeframe]=2026&page[size]=100`)).json
        .data,
    ).toHaveLength(25);
    expect((await h.api('GET', `/workspaces/${ws}/runs?filter[timeframe]=2025`)).json.data).toEqual(
      [],
    );
    expect(
      (await h.api('GET', `/workspaces/${ws}/runs?filter[timeframe]=year&page[size]=100`)).json
        .data,
    ).toHaveLength(25);
    expect((await h.api('GET', `/workspaces/${ws}/runs?filter[timeframe]=soon`)).status).toBe(422);
    expect(
      (await h.api('GET', `/workspaces/${ws}/runs?filter[agent_pool_names]=pool-a`)).json.data,
    ).toEqual([]);
    expect((await h.api('GET', `/workspaces/${ws}/runs?filter[workspace_names]=x`)).status).toBe(
      422,
    );
  });

  it('searches by user, commit and basic text', async () => {
    expect(
      (await h.api('GET', `/workspaces/${ws}/runs?search[user]=admin&page[size]=100`)).json.data,
    ).toHaveLength(25);
    expect((await h.api('GET', `/workspaces/${ws}/runs?search[user]=nobody`)).json.data).toEqual(
      [],
    );
    expect((await h.api('GET', `/workspaces/${ws}/runs?search[commit]=abc123`)).json.data).toEqual(
      [],
    );
    expect(
      listIds((await h.api('GET', `/workspaces/${ws}/runs?search[basic]=widget`)).json.data),
    ).toEqual([ids[3]]);
    expect(
      listIds((await h.api('GET', `/workspaces/${ws}/runs?search[basic]=${ids[7]}`)).json.data),
    ).toEqual([ids[7]]);
    // search[basic] is ignored when search[user] is present
    expect(
      (
        await h.api(
          'GET',
          `/workspaces/${ws}/runs?search[basic]=widget&search[user]=admin&page[size]=100`,
        )
      ).json.data,
    ).toHaveLength(25);
  });

  it('includes related resources', async () => {
    const res = await h.api(
      'GET',
      `/workspaces/${ws}/runs?page[size]=2&include=plan,apply,created_by,workspace,configuration_version,cost_estimate`,
    );
    const types = (res.json.included ?? []).map((r) => r.type).sort();
    expect(types).toEqual([
      'applies',
      'applies',
      'configuration-versions',
      'plans',
      'plans',
      'users',
      'workspaces',
    ]);
  });
});

describe('GET /organizations/:org/runs', () => {
  it('lists the last year by default with only self, prev and next links and no totals', async () => {
    const res = await h.api('GET', `/organizations/${org}/runs`);
    expect(res.status).toBe(200);
    expect(listIds(res.json.data)).toEqual([...ids].reverse().slice(0, 20));
    expect(Object.keys(res.json.links).sort()).toEqual(['next', 'prev', 'self']);
    expect(res.json.meta.pagination).toEqual({
      'current-page': 1,
      'next-page': 2,
      'prev-page': null,
      'page-size': 20,
    });
    const p2 = await h.api('GET', `/organizations/${org}/runs?page[number]=2`);
    expect(p2.json.meta.pagination).toEqual({
      'current-page': 2,
      'next-page': null,
      'prev-page': 1,
      'page-size': 20,
    });
    h.clock.advance(400 * 24 * 3600 * 1000);
    expect((await h.api('GET', `/organizations/${org}/runs`)).json.data).toEqual([]);
    expect(
      (await h.api('GET', `/organizations/${org}/runs?filter[timeframe]=2026&page[size]=100`)).json
        .data,
    ).toHaveLength(25);
  });

  it('filters by workspace names', async () => {
    const name = h.runs.model.workspaces.get(ws)!.name;
    expect(
      (
        await h.api(
          'GET',
          `/organizations/${org}/runs?filter[workspace_names]=${name}&filter[timeframe]=2026&page[size]=100`,
        )
      ).json.data,
    ).toHaveLength(25);
    expect(
      (
        await h.api(
          'GET',
          `/organizations/${org}/runs?filter[workspace_names]=other&filter[timeframe]=2026`,
        )
      ).json.data,
    ).toEqual([]);
  });

  it('is 404 for an organization the caller does not belong to', async () => {
    const stranger = h.user('outsider');
    expect(
      (await h.api('GET', `/organizations/${org}/runs`, { token: stranger.token })).status,
    ).toBe(404);
  });
});
