import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { flowApp } from '../../support/executor-flow.js';

/**
 * What a terraform-compatible binary writes is JSON from outside Keel: a state file or plan JSON
 * that parses but does not fit errors the run, names the bad field in the log, and records no
 * state.
 */

const FAKE = resolve('test/fixtures/fake-terraform');
const CONFIG = { 'main.tf': 'resource "aws_instance" "web" {\n  ami = "ami-123"\n}\n' };

const app = flowApp({ config: { engineBin: FAKE } });

describe('the command driver reading what the binary wrote', () => {
  it('plan JSON that is JSON but not a plan errors the plan, naming the field', async () => {
    const { ws } = await app.flow.workspace();
    await app.flow.envVar(ws, 'FAKE_TF_BROKEN_PLAN', 'shape');
    const cv = await app.flow.upload(ws, CONFIG);
    const run = await app.flow.run(ws, {}, cv);
    await app.t.settle();
    expect(await app.flow.status(run)).toBe('errored');
    const plan = await app.flow.phase(run, 'plan');
    expect(plan.log).toContain('Error: the plan JSON printed by "show -json" is not a plan: ');
    expect(plan.log).toContain('/resource_changes/0/change/actions:');
    expect((await app.flow.call('GET', `/workspaces/${ws}/current-state-version`)).status).toBe(
      404,
    );
  });

  it('a state file that is JSON but not a state errors the apply, names the field, records nothing', async () => {
    const { ws } = await app.flow.workspace();
    await app.flow.envVar(ws, 'FAKE_TF_BROKEN_STATE', 'shape');
    const cv = await app.flow.upload(ws, CONFIG);
    const run = await app.flow.run(ws, { 'auto-apply': true }, cv);
    await app.t.settle();
    expect(await app.flow.status(run)).toBe('errored');
    const apply = await app.flow.phase(run, 'apply');
    expect(apply.log).toMatch(/Error: terraform\.tfstate is not a terraform state \(format 4\): /);
    expect(apply.log).toContain('/serial:');
    expect(apply.log).toContain('/resources:');
    expect((await app.flow.call('GET', `/workspaces/${ws}/current-state-version`)).status).toBe(
      404,
    );
  });
});
