import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';

/** Cost estimation switched on through the organization's `cost-estimation-enabled` attribute. */

const INSTANCE = {
  'main.tf': 'resource "aws_instance" "small" {\n  instance_type = "t3.micro"\n}\n',
};

let t: TestApp;
let flow: Flow;
beforeAll(async () => {
  t = await startTestApp();
  flow = new Flow(t);
});
afterAll(async () => {
  await t.close();
});

const patchOrg = (org: string, attributes: Record<string, unknown>, expected: number) =>
  flow.call(
    'PATCH',
    `/organizations/${org}`,
    { data: { type: 'organizations', attributes } },
    expected,
  );

async function planned(ws: string) {
  const run = await flow.run(ws, {}, await flow.upload(ws, INSTANCE));
  await t.settle();
  return run;
}

describe('the organization attribute cost-estimation-enabled', () => {
  it('is false by default, and PATCH /organizations/:name turns it on and off', async () => {
    const { org } = await flow.workspace();
    const shown = await flow.call('GET', `/organizations/${org}`, undefined, 200);
    expect(shown.doc.data.attributes['cost-estimation-enabled']).toBe(false);
    const on = await patchOrg(org, { 'cost-estimation-enabled': true }, 200);
    expect(on.doc.data.attributes['cost-estimation-enabled']).toBe(true);
    const again = await flow.call('GET', `/organizations/${org}`, undefined, 200);
    expect(again.doc.data.attributes['cost-estimation-enabled']).toBe(true);
    // The execution-settings resource shows the same flag, and setting it there shows here.
    const settings = await flow.call(
      'GET',
      `/organizations/${org}/execution-settings`,
      undefined,
      200,
    );
    expect(settings.doc.data.attributes['cost-estimation-enabled']).toBe(true);
    await flow.call(
      'PATCH',
      `/organizations/${org}/execution-settings`,
      { data: { attributes: { 'cost-estimation-enabled': false } } },
      200,
    );
    const off = await flow.call('GET', `/organizations/${org}`, undefined, 200);
    expect(off.doc.data.attributes['cost-estimation-enabled']).toBe(false);
  });

  it('a run in an organization with it enabled gets a cost estimate; one without does not', async () => {
    const on = await flow.workspace();
    await patchOrg(on.org, { 'cost-estimation-enabled': true }, 200);
    const off = await flow.workspace();

    const estimated = await planned(on.ws);
    expect(await flow.status(estimated)).toBe('cost_estimated');
    const estimate = await flow.call('GET', `/runs/${estimated}/cost-estimate`, undefined, 200);
    expect(estimate.doc.data.attributes).toMatchObject({
      status: 'finished',
      'proposed-monthly-cost': '7.59',
      'resources-count': 1,
    });

    const plain = await planned(off.ws);
    expect(await flow.status(plain)).toBe('planned');
    expect((await flow.get(plain)).attributes['status-timestamps']).not.toHaveProperty(
      'cost-estimating-at',
    );
    await flow.call('GET', `/runs/${plain}/cost-estimate`, undefined, 404);
  });

  it('refuses bad input with 422, changing nothing, and hides the organization from non-owners', async () => {
    const { org } = await flow.workspace();
    const bad = await patchOrg(org, { 'cost-estimation-enabled': 'yes' }, 422);
    expect(bad.doc.errors?.[0]?.status).toBe('422');
    await patchOrg(org, { 'no-such-attribute': true }, 422);
    await flow.call('PATCH', `/organizations/${org}`, { data: 'nope' }, 422);
    const shown = await flow.call('GET', `/organizations/${org}`, undefined, 200);
    expect(shown.doc.data.attributes['cost-estimation-enabled']).toBe(false);
    await patchOrg('org-that-does-not-exist', { 'cost-estimation-enabled': true }, 404);

    const team = await flow.call(
      'POST',
      `/organizations/${org}/teams`,
      { data: { type: 'teams', attributes: { name: 'readers' } } },
      201,
    );
    const token = await flow.call(
      'POST',
      `/teams/${team.doc.data.id}/authentication-token`,
      {},
      201,
    );
    const res = await t.request('PATCH', `/api/v2/organizations/${org}`, {
      token: token.doc.data.attributes.token as string,
      body: { data: { attributes: { 'cost-estimation-enabled': true } } },
    });
    expect(res.status).toBe(404);
    const after = await flow.call('GET', `/organizations/${org}`, undefined, 200);
    expect(after.doc.data.attributes['cost-estimation-enabled']).toBe(false);
  });
});
