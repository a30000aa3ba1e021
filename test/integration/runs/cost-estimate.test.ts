import { describe, expect, it } from 'vitest';
import { flowApp, type Doc, type ListDoc } from '../../support/executor-flow.js';

/** A run's `cost-estimate` relationship and `include=cost_estimate`, as the terraform CLI reads them. */

const INSTANCE = {
  'main.tf': 'resource "aws_instance" "small" {\n  instance_type = "t3.micro"\n}\n',
};

const app = flowApp();

type Included = { included?: { id: string; type: string; attributes: Record<string, unknown> }[] };

async function plannedRun(estimating: boolean): Promise<{ run: string; ws: string }> {
  const { flow, t } = app;
  const { org, ws } = await flow.workspace();
  if (estimating) {
    await flow.call(
      'PATCH',
      `/organizations/${org}`,
      { data: { type: 'organizations', attributes: { 'cost-estimation-enabled': true } } },
      200,
    );
  }
  const run = await flow.run(ws, {}, await flow.upload(ws, INSTANCE));
  await t.settle();
  return { run, ws };
}

describe('a run with a cost estimate', () => {
  it('names it in relationships.cost-estimate, and include=cost_estimate adds it', async () => {
    const { flow } = app;
    const { run, ws } = await plannedRun(true);
    expect(await flow.status(run)).toBe('cost_estimated');
    const estimate = await flow.call('GET', `/runs/${run}/cost-estimate`, undefined, 200);
    const ref = { id: estimate.doc.data.id, type: 'cost-estimates' };

    const shown = await flow.call<Doc & Included>(
      'GET',
      `/runs/${run}?include=cost_estimate`,
      undefined,
      200,
    );
    expect(shown.doc.data.relationships['cost-estimate']?.data).toEqual(ref);
    expect(shown.doc.included).toEqual([estimate.doc.data]);
    expect(shown.doc.included?.[0]?.attributes).toMatchObject({
      status: 'finished',
      'proposed-monthly-cost': '7.59',
      'matched-resources-count': 1,
      'resources-count': 1,
    });

    // The relationship's id resolves, and lists show the same relationship and inclusion.
    const byId = await flow.call('GET', `/cost-estimates/${ref.id}`, undefined, 200);
    expect(byId.doc.data).toEqual(estimate.doc.data);
    const list = await flow.call<ListDoc & Included>(
      'GET',
      `/workspaces/${ws}/runs?include=cost_estimate`,
      undefined,
      200,
    );
    expect(list.doc.data.map((r) => r.relationships['cost-estimate']?.data)).toEqual([ref]);
    expect(list.doc.included?.map((r) => r.id)).toEqual([ref.id]);
  });

  it('a run without one keeps the relationship null and includes nothing', async () => {
    const { flow } = app;
    const { run } = await plannedRun(false);
    expect(await flow.status(run)).toBe('planned');
    const shown = await flow.call<Doc & Included>(
      'GET',
      `/runs/${run}?include=cost_estimate`,
      undefined,
      200,
    );
    expect(shown.doc.data.relationships['cost-estimate']?.data).toBeNull();
    expect(shown.doc.included).toEqual([]);
  });
});
