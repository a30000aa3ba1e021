import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';
import type { ListDoc } from '../../support/executor-flow.js';

const ONE_RESOURCE = {
  'main.tf':
    'resource "aws_instance" "web" {\n  ami           = "ami-123"\n  instance_type = "t3.micro"\n}\n\noutput "id" {\n  value = aws_instance.web.id\n}\n',
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

describe('the builtin driver through the API', () => {
  it('plans 1 to add, applies 1 added, finds no changes next time, and destroys it', async () => {
    const { org, ws, name } = await flow.workspace();
    const cv = await flow.upload(ws, ONE_RESOURCE);

    const first = await flow.run(ws, {}, cv);
    await t.settle();
    expect(await flow.status(first)).toBe('planned');
    const plan = await flow.phase(first, 'plan');
    expect(plan.attributes).toMatchObject({
      status: 'finished',
      'has-changes': true,
      'resource-additions': 1,
    });
    expect(plan.log).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
    expect(plan.log.endsWith('\u0003')).toBe(true);
    const json = await t.request('GET', `/api/v2/runs/${first}/plan/json-output`, {
      token: flow.token,
    });
    expect(
      (json.json as { resource_changes: { change: { actions: string[] } }[] }).resource_changes[0]
        ?.change.actions,
    ).toEqual(['create']);

    await flow.action(first, 'apply');
    await t.settle();
    expect(await flow.status(first)).toBe('applied');
    const apply = await flow.phase(first, 'apply');
    expect(apply.attributes).toMatchObject({ status: 'finished', 'resource-additions': 1 });
    expect(apply.log).toContain('aws_instance.web: Creating...');
    expect(apply.log).toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
    const sv1 = await flow.call('GET', `/workspaces/${ws}/current-state-version`, undefined, 200);
    expect(sv1.doc.data.attributes).toMatchObject({ serial: 1, 'terraform-version': '1.9.8' });
    expect(sv1.doc.data.relationships.run?.data?.id).toBe(first);
    // The apply names the state version it recorded, as the reference's applies do.
    const applyDoc = await flow.call('GET', `/runs/${first}/apply`, undefined, 200);
    expect(applyDoc.doc.data.relationships['state-versions']?.data).toEqual([
      { type: 'state-versions', id: sv1.doc.data.id },
    ]);
    const included = await flow.call('GET', `/runs/${first}?include=apply`, undefined, 200);
    expect(JSON.stringify(included.doc)).toContain(sv1.doc.data.id);

    const second = await flow.run(ws, {}, cv);
    await t.settle();
    expect(await flow.status(second)).toBe('planned_and_finished');
    const again = await flow.phase(second, 'plan');
    expect(again.attributes['has-changes']).toBe(false);
    expect(again.log).toContain('No changes. Your infrastructure matches the configuration.');
    const noApply = await flow.call('GET', `/runs/${second}/apply`, undefined, 200);
    expect(noApply.doc.data.relationships['state-versions']?.data).toEqual([]);

    const destroy = await flow.run(ws, { 'is-destroy': true }, cv);
    await t.settle();
    expect(await flow.status(destroy)).toBe('planned');
    expect((await flow.phase(destroy, 'plan')).log).toContain(
      'Plan: 0 to add, 0 to change, 1 to destroy.',
    );
    await flow.action(destroy, 'apply');
    await t.settle();
    expect(await flow.status(destroy)).toBe('applied');
    expect((await flow.phase(destroy, 'apply')).log).toContain(
      'Destroy complete! Resources: 1 destroyed.',
    );

    const versions = await flow.call<ListDoc>(
      'GET',
      `/state-versions?filter%5Borganization%5D%5Bname%5D=${org}&filter%5Bworkspace%5D%5Bname%5D=${name}`,
      undefined,
      200,
    );
    expect(versions.doc.data.map((v) => v.attributes.serial)).toEqual([2, 1]);
    const download = await t.request(
      'GET',
      `/api/v2/state-versions/${versions.doc.data[0]?.id ?? ''}/download`,
      { token: flow.token },
    );
    expect(JSON.parse(download.text)).toMatchObject({ version: 4, serial: 2, resources: [] });
  });

  it('auto-applies when the workspace says so', async () => {
    const { ws } = await flow.workspace({ 'auto-apply': true });
    const cv = await flow.upload(ws, ONE_RESOURCE);
    const run = await flow.run(ws, {}, cv);
    await t.settle();
    expect(await flow.status(run)).toBe('applied');
  });

  it('a saved-plan run stops at planned_and_saved and applies when confirmed later', async () => {
    const { ws } = await flow.workspace();
    const cv = await flow.upload(ws, ONE_RESOURCE);
    const run = await flow.run(ws, { 'save-plan': true }, cv);
    await t.settle();
    expect(await flow.status(run)).toBe('planned_and_saved');
    await flow.action(run, 'apply');
    await t.settle();
    const details = await flow.get(run);
    expect(details.attributes.status).toBe('applied');
    expect(Object.keys(details.attributes['status-timestamps'] as object)).toEqual(
      expect.arrayContaining([
        'planned-and-saved-at',
        'confirmed-at',
        'apply-queued-at',
        'applying-at',
        'applied-at',
      ]),
    );
  });

  it('a planned run can be discarded, and the next run goes ahead', async () => {
    const { ws } = await flow.workspace();
    const cv = await flow.upload(ws, ONE_RESOURCE);
    const first = await flow.run(ws, {}, cv);
    const second = await flow.run(ws, {}, cv);
    await t.settle();
    expect(await flow.status(first)).toBe('planned');
    expect(await flow.status(second)).toBe('pending');
    await flow.action(first, 'discard');
    await t.settle();
    expect(await flow.status(first)).toBe('discarded');
    expect(await flow.status(second)).toBe('planned');
  });

  it('errors the run with the parser diagnostic in the plan log', async () => {
    const { ws } = await flow.workspace();
    const cv = await flow.upload(ws, { 'main.tf': 'resource "aws_instance" "web" {\n' });
    const run = await flow.run(ws, {}, cv);
    await t.settle();
    expect(await flow.status(run)).toBe('errored');
    const plan = await flow.phase(run, 'plan');
    expect(plan.attributes.status).toBe('errored');
    expect(plan.log).toContain('Error: Unclosed configuration block');
  });
});
