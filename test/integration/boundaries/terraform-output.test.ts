import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';

/**
 * What a terraform-compatible binary writes is JSON from outside Keel: a state file that parses
 * but is not a state errors the run, names the bad field in the log, and records no state.
 */

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

describe('the command driver reading what the binary wrote', () => {
  it('a state file that is JSON but not a state errors the apply, names the field, records nothing', async () => {
    const { ws } = await flow.workspace();
    await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      {
        data: {
          type: 'vars',
          attributes: { key: 'FAKE_TF_BROKEN_STATE', value: 'shape', category: 'env' },
        },
      },
      201,
    );
    const cv = await flow.upload(ws, CONFIG);
    const run = await flow.run(ws, { 'auto-apply': true }, cv);
    await t.settle();
    expect(await flow.status(run)).toBe('errored');
    const apply = await flow.phase(run, 'apply');
    expect(apply.log).toMatch(/Error: terraform\.tfstate is not a terraform state \(format 4\): /);
    expect(apply.log).toContain('/serial:');
    expect(apply.log).toContain('/resources:');
    expect((await flow.call('GET', `/workspaces/${ws}/current-state-version`)).status).toBe(404);
  });
});
