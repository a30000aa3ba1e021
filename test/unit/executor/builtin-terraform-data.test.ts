import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { StateV4 } from '../../../src/runs/executor/types.js';
import { plan, planAndApply } from '../../support/builtin-driver.js';

/** `terraform_data` as terraform writes and reads it: the builtin driver and real terraform share state. */

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/terraform/${name}`, import.meta.url), 'utf8');
const REAL_STATE = JSON.parse(fixture('terraform-data.tfstate')) as StateV4;
const CONFIG = { 'main.tf': fixture('terraform-data.tf') };

describe('builtin driver: terraform_data', () => {
  it('finds no changes against the state real terraform wrote for the same configuration', async () => {
    const { result, text } = await plan({ files: CONFIG, state: REAL_STATE });
    expect(result.status, text).toBe('finished');
    if (result.status !== 'finished') return;
    expect(result.counts.hasChanges, text).toBe(false);
    expect(text).toContain('No changes.');
  });

  it("writes state in terraform's own shape: the builtin provider, typed dynamic values", async () => {
    const { state } = await planAndApply({ files: CONFIG });
    const [a, b] = state.resources;
    expect(a).toMatchObject({
      type: 'terraform_data',
      name: 'a',
      provider: 'provider["terraform.io/builtin/terraform"]',
    });
    expect(a?.instances[0]?.attributes).toEqual({
      id: expect.any(String) as string,
      input: { value: 'one', type: 'string' },
      output: { value: 'one', type: 'string' },
      triggers_replace: null,
    });
    const real = REAL_STATE.resources[1]?.instances[0]?.attributes;
    const ours = b?.instances[0]?.attributes;
    expect(ours?.input).toEqual(real?.input);
    expect(ours?.output).toEqual(real?.output);
    expect(Object.keys(ours ?? {}).sort()).toEqual(Object.keys(real ?? {}).sort());
    expect(state.outputs.a).toEqual({ value: 'one', type: 'string' });
    // and reads its own state back without changes
    const again = await plan({ files: CONFIG, state });
    expect(again.result.status === 'finished' && again.result.counts.hasChanges, again.text).toBe(
      false,
    );
  });

  it('updates input in place and replaces on new triggers_replace', async () => {
    const config = (input: string) => ({
      'main.tf': `resource "terraform_data" "a" {\n  input = "${input}"\n}\nresource "terraform_data" "b" {\n  triggers_replace = [terraform_data.a.output]\n}\n`,
    });
    const first = await planAndApply({ files: config('one') });
    const changed = await plan({ files: config('two'), state: first.state });
    expect(changed.result.status === 'finished' && changed.result.counts).toMatchObject({
      additions: 1,
      changes: 1,
      destructions: 1,
    });
    expect(changed.text).toContain('# terraform_data.a will be updated in-place');
    expect(changed.text).toContain('# terraform_data.b must be replaced');
  });

  it('refuses an argument terraform_data does not take, clearly', async () => {
    const { result, text } = await plan({
      files: { 'main.tf': 'resource "terraform_data" "x" {\n  value = 1\n}\n' },
    });
    expect(result.status).toBe('errored');
    expect(text).toContain('Error: Unsupported argument');
    expect(text).toContain('An argument named "value" is not expected here');
  });
});
