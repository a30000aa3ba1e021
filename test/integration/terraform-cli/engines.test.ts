import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';
import { requireTerraform } from '../../support/terraform.js';

/**
 * Real terraform as the command engine, on configurations the CLI uploads (still holding their
 * `cloud` block), and a workspace moving between the two engines without its state changing.
 */

const CLOUD = `terraform {
  cloud {
    hostname     = "keel.invalid"
    organization = "acme"
    workspaces {
      name = "web"
    }
  }
}
`;
const config = (input: string) => ({
  'main.tf': `${CLOUD}\nresource "terraform_data" "a" {\n  input = "${input}"\n}\n\noutput "a" {\n  value = terraform_data.a.output\n}\n`,
});

let t: TestApp;
let flow: Flow;
beforeAll(async () => {
  t = await startTestApp({ config: { engines: { terraform: requireTerraform() } } });
  flow = new Flow(t);
});
afterAll(async () => t.close());

const setEngine = (ws: string, engine: string) =>
  flow.call(
    'PATCH',
    `/workspaces/${ws}`,
    { data: { type: 'workspaces', attributes: { 'execution-engine': engine } } },
    200,
  );

async function runTo(ws: string, input: string, status: string): Promise<string> {
  const run = await flow.run(ws, {}, await flow.upload(ws, config(input)));
  await t.settle();
  const now = await flow.status(run);
  expect(now, (await flow.phase(run, 'plan')).log).toBe(status);
  return run;
}

async function apply(run: string): Promise<void> {
  await flow.action(run, 'apply');
  await t.settle();
  expect(await flow.status(run), (await flow.phase(run, 'apply')).log).toBe('applied');
}

describe('the command engine with real terraform', () => {
  it('runs a configuration that still has its cloud block, on local state Keel feeds it', async () => {
    const { ws } = await flow.workspace({ 'execution-engine': 'terraform' });
    const run = await runTo(ws, 'one', 'planned');
    expect((await flow.phase(run, 'plan')).log).toContain('Plan: 1 to add');
    await apply(run);
    const sv = await flow.call('GET', `/workspaces/${ws}/current-state-version`, undefined, 200);
    const state = await t.request(
      'GET',
      new URL(String(sv.doc.data.attributes['hosted-state-download-url']), 'http://x').pathname,
      { token: flow.token },
    );
    expect(state.text).toContain('provider[\\"terraform.io/builtin/terraform\\"]');
    const outputs = await flow.call(
      'GET',
      `/workspaces/${ws}/current-state-version-outputs`,
      undefined,
      200,
    );
    expect(outputs.text).toContain('"value":"one"');
  });

  it('moves between engines without changes: terraform → builtin → terraform', async () => {
    const { ws } = await flow.workspace({ 'execution-engine': 'terraform' });
    await apply(await runTo(ws, 'one', 'planned'));
    await setEngine(ws, 'builtin');
    await runTo(ws, 'one', 'planned_and_finished');
    await apply(await runTo(ws, 'two', 'planned'));
    await setEngine(ws, 'terraform');
    const run = await runTo(ws, 'two', 'planned_and_finished');
    expect((await flow.phase(run, 'plan')).log).toContain('No changes.');
  });
});
