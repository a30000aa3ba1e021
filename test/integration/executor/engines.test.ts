import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';

/** A workspace's `execution-engine` chooses between the builtin driver and the operator's engines. */

const FAKE = resolve('test/fixtures/fake-terraform');
const CONFIG = { 'main.tf': 'resource "aws_instance" "web" {\n  ami = "ami-123"\n}\n' };
// Only the command driver runs `terraform init`.
const COMMAND_LINE = 'Terraform has been successfully initialized!';

let t: TestApp;
let flow: Flow;
beforeAll(async () => {
  t = await startTestApp({ config: { engines: { fake: FAKE } } });
  flow = new Flow(t);
});
afterAll(async () => {
  await t.close();
});

const engineOf = async (ws: string): Promise<unknown> =>
  (await flow.call('GET', `/workspaces/${ws}`, undefined, 200)).doc.data.attributes[
    'execution-engine'
  ];
const setEngine = (ws: string, engine: unknown, expected: number) =>
  flow.call(
    'PATCH',
    `/workspaces/${ws}`,
    { data: { type: 'workspaces', attributes: { 'execution-engine': engine } } },
    expected,
  );

async function planLog(ws: string): Promise<{ run: string; log: string }> {
  const run = await flow.run(ws, {}, await flow.upload(ws, CONFIG));
  await t.settle();
  expect(await flow.status(run)).toBe('planned');
  return { run, log: (await flow.phase(run, 'plan')).log };
}

describe('execution-engine', () => {
  it('is builtin by default when no KEEL_ENGINE_BIN is set, and runs use the builtin driver', async () => {
    const { ws } = await flow.workspace();
    expect(await engineOf(ws)).toBe('builtin');
    const { log } = await planLog(ws);
    expect(log).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
    expect(log).not.toContain(COMMAND_LINE);
  });

  it('a workspace created with a configured engine plans and applies with its binary', async () => {
    const { ws } = await flow.workspace({ 'execution-engine': 'fake' });
    expect(await engineOf(ws)).toBe('fake');
    const { run, log } = await planLog(ws);
    expect(log).toContain(COMMAND_LINE);
    await flow.action(run, 'apply');
    await t.settle();
    expect(await flow.status(run)).toBe('applied');
  });

  it('PATCH switches engines between runs, and not while a run holds the workspace', async () => {
    const { ws } = await flow.workspace();
    const set = await setEngine(ws, 'fake', 200);
    expect(set.doc.data.attributes['execution-engine']).toBe('fake');
    const { run, log } = await planLog(ws);
    expect(log).toContain(COMMAND_LINE);
    const busy = await setEngine(ws, 'builtin', 409);
    expect(busy.doc.errors?.[0]?.detail).toContain('in progress');
    await setEngine(ws, 'fake', 200); // unchanged: allowed
    await flow.action(run, 'discard');
    await t.settle();
    await setEngine(ws, 'builtin', 200);
    expect((await planLog(ws)).log).not.toContain(COMMAND_LINE);
  });

  it('a saved plan is not applied by another engine than the one that made it', async () => {
    const { ws } = await flow.workspace({ 'execution-engine': 'fake' });
    const run = await flow.run(ws, { 'save-plan': true }, await flow.upload(ws, CONFIG));
    await t.settle();
    expect(await flow.status(run)).toBe('planned_and_saved');
    // A saved plan does not hold the workspace, so its engine may change meanwhile.
    await setEngine(ws, 'builtin', 200);
    await flow.action(run, 'apply');
    await t.settle();
    expect(await flow.status(run)).toBe('errored');
    expect((await flow.phase(run, 'apply')).log).toContain(
      'the plan was made by execution engine fake and the workspace now uses builtin; start a new run',
    );
  });

  it('refuses names the operator did not configure with 422, changing nothing', async () => {
    const { org, ws } = await flow.workspace({ 'execution-engine': 'fake' });
    for (const bad of ['default', '/bin/sh', 'FAKE', '']) {
      const res = await setEngine(ws, bad, 422);
      expect(res.doc.errors?.[0]).toMatchObject({ status: '422' });
      expect(res.doc.errors?.[0]?.detail).toContain('execution-engine');
    }
    await setEngine(ws, 7, 422);
    expect(await engineOf(ws)).toBe('fake');
    await flow.call(
      'POST',
      `/organizations/${org}/workspaces`,
      { data: { type: 'workspaces', attributes: { name: 'rce', 'execution-engine': '/bin/sh' } } },
      422,
    );
    await flow.call('GET', `/organizations/${org}/workspaces/rce`, undefined, 404);
  });
});

describe('execution-engine with KEEL_ENGINE_BIN', () => {
  let d: TestApp;
  let dflow: Flow;
  beforeAll(async () => {
    d = await startTestApp({ config: { engineBin: FAKE } });
    dflow = new Flow(d);
  });
  afterAll(async () => {
    await d.close();
  });

  it('defaults to the engine named default, and builtin can still be chosen', async () => {
    const { ws } = await dflow.workspace();
    const shown = await dflow.call('GET', `/workspaces/${ws}`, undefined, 200);
    expect(shown.doc.data.attributes['execution-engine']).toBe('default');
    const { ws: own } = await dflow.workspace({ 'execution-engine': 'builtin' });
    const run = await dflow.run(own, {}, await dflow.upload(own, CONFIG));
    await d.settle();
    expect(await dflow.status(run)).toBe('planned');
    expect((await dflow.phase(run, 'plan')).log).not.toContain(COMMAND_LINE);
  });
});
