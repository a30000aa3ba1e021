import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';

const FAKE = resolve('test/fixtures/fake-terraform');
const CONFIG = { 'main.tf': 'resource "aws_instance" "web" {\n  ami = "ami-123"\n}\n' };

let t: TestApp;
let flow: Flow;
beforeAll(async () => {
  t = await startTestApp({ config: { engineBin: FAKE } });
  flow = new Flow(t);
});
afterAll(async () => {
  await t.close();
});

/** Resolves when a phase's live log receives a line matching `pattern` (no waiting on time). */
function logged(pattern: RegExp): Promise<void> {
  const logs = t.app.executor.liveLogs;
  const append = logs.append.bind(logs);
  return new Promise((done) => {
    logs.append = (id, line) => {
      append(id, line);
      if (pattern.test(line)) {
        logs.append = append;
        done();
      }
    };
  });
}

describe('the command driver through the API', () => {
  it('plans and applies with the binary and records the state it writes', async () => {
    const { ws } = await flow.workspace();
    const cv = await flow.upload(ws, CONFIG);
    const run = await flow.run(ws, {}, cv);
    await t.settle();
    expect(await flow.status(run)).toBe('planned');
    const plan = await flow.phase(run, 'plan');
    expect(plan.log).toContain('Terraform has been successfully initialized!');
    expect(plan.log).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
    await flow.action(run, 'apply');
    await t.settle();
    expect(await flow.status(run)).toBe('applied');
    const sv = await flow.call('GET', `/workspaces/${ws}/current-state-version`, undefined, 200);
    expect(sv.doc.data.attributes).toMatchObject({ serial: 1 });
  });

  it('an apply that leaves a state file that is not JSON errors and says so in its log', async () => {
    const { ws } = await flow.workspace();
    await flow.envVar(ws, 'FAKE_TF_BROKEN_STATE', '1');
    const cv = await flow.upload(ws, CONFIG);
    const run = await flow.run(ws, { 'auto-apply': true }, cv);
    await t.settle();
    expect(await flow.status(run)).toBe('errored');
    const apply = await flow.phase(run, 'apply');
    expect(apply.log).toMatch(/Error: terraform\.tfstate is not valid JSON: /);
  });

  it('cancel during a long plan delivers SIGINT and the run ends canceled', async () => {
    const { ws } = await flow.workspace();
    const cv = await flow.upload(ws, CONFIG);
    const first = await flow.run(ws, { 'auto-apply': true }, cv);
    await t.settle();
    expect(await flow.status(first)).toBe('applied');
    await flow.envVar(ws, 'FAKE_TF_PLAN_DELAY_MS', '600000');

    const refreshing = logged(/Refreshing state/);
    const run = await flow.run(ws, {}, cv);
    await refreshing;
    expect(await flow.status(run)).toBe('planning');
    const live = await flow.phase(run, 'plan');
    expect(live.log).toContain('aws_instance.web: Refreshing state...');
    expect(live.log.endsWith('\u0003')).toBe(false);

    await flow.action(run, 'cancel');
    await t.settle();
    expect(await flow.status(run)).toBe('canceled');
    const plan = await flow.phase(run, 'plan');
    expect(plan.log).toContain('Interrupt received.');
    expect(plan.attributes.status).toBe('canceled');
  });

  it('force-cancel after the cool-off kills an apply that ignores the interrupt and unlocks the workspace', async () => {
    const { ws } = await flow.workspace();
    await flow.envVar(ws, 'FAKE_TF_APPLY_DELAY_MS', '600000');
    const cv = await flow.upload(ws, CONFIG);
    const run = await flow.run(ws, {}, cv);
    await t.settle();
    const creating = logged(/Creating\.\.\./);
    await flow.action(run, 'apply');
    await creating;
    expect(await flow.status(run)).toBe('applying');

    const interrupted = logged(/Gracefully shutting down/);
    await flow.action(run, 'cancel');
    await interrupted;
    expect(await flow.status(run)).toBe('applying');
    const details = await flow.get(run);
    expect(
      details.attributes['force-cancel-available-at'] ??
        details.attributes.force_cancel_available_at,
    ).toBeTruthy();
    await flow.action(run, 'force-cancel', 409);

    t.clock.advance(t.config.forceCancelCooloffMs);
    await flow.action(run, 'force-cancel');
    await t.settle();
    expect(await flow.status(run)).toBe('force_canceled');
    const workspace = await flow.call('GET', `/workspaces/${ws}`, undefined, 200);
    expect(workspace.doc.data.attributes.locked).toBe(false);
  });
});
