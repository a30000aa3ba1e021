import { describe, expect, it } from 'vitest';
import {
  cloudBlock,
  remoteBackendBlock,
  useTerraformHost,
  TerraformWorkdir,
  TERRAFORM_BIN,
} from '../../support/terraform.js';

/**
 * The CLI's remote operations against Keel, with both engines (real terraform as the daemon's
 * default engine, and the builtin one chosen per workspace), through a `cloud` block and through
 * `backend "remote"`.
 */

const config = (input: string) => `resource "terraform_data" "a" {
  input = "${input}"
}

output "a" {
  value = terraform_data.a.output
}
`;

const terraformHost = useTerraformHost((h) => h.organization('acme'), {
  env: { KEEL_ENGINE_BIN: TERRAFORM_BIN },
});

const ok = (r: { code: number | null; stdout: string; stderr: string }) =>
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);

async function workspace(name: string, engine: string): Promise<void> {
  const res = await terraformHost().api('POST', '/organizations/acme/workspaces', {
    data: { type: 'workspaces', attributes: { name, 'execution-engine': engine } },
  });
  expect(res.status, res.text).toBe(201);
}

describe.each([
  ['builtin', 'builtin'],
  ['real terraform', 'default'],
])('cloud block, %s engine', (_label, engine) => {
  it('init, apply, output, state list/show, a change through a saved plan, destroy', async () => {
    const host = terraformHost();
    const name = `web-${engine}`;
    await workspace(name, engine);
    const block = cloudBlock(host, 'acme', name);
    const work = new TerraformWorkdir(host, { files: { 'main.tf': `${block}\n${config('one')}` } });
    ok(await work.run(['init', '-input=false', '-no-color']));
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    ok(apply);
    expect(apply.stdout).toMatch(/Apply complete! Resources: 1 added, 0 changed, 0 destroyed/);
    // every line of the apply log reaches the CLI, which skips the reference's three header lines
    expect(apply.stdout).toMatch(/terraform_data\.a: Creating\.\.\./);
    expect(apply.stdout).toMatch(/terraform_data\.a: Creation complete/);
    const output = await work.run(['output', '-no-color', '-raw', 'a']);
    ok(output);
    expect(output.stdout).toBe('one');

    const list = await work.run(['state', 'list']);
    ok(list);
    expect(list.stdout.trim()).toBe('terraform_data.a');
    const show = await work.run(['state', 'show', '-no-color', 'terraform_data.a']);
    ok(show);
    expect(show.stdout).toMatch(/input\s+= "one"/);

    work.write('main.tf', `${block}\n${config('two')}`);
    const saved = await work.run(['plan', '-out', 'change.tfplan', '-input=false', '-no-color']);
    ok(saved);
    expect(saved.stdout).toMatch(/1 to change/);
    // `show` of a saved cloud plan reads the run's plan JSON through json-output-redacted.
    const shown = await work.run(['show', '-no-color', 'change.tfplan']);
    ok(shown);
    expect(shown.stdout).toMatch(/terraform_data\.a will be updated in-place/);
    expect(shown.stdout).toMatch(/"one" -> "two"/);
    const applied = await work.run(['apply', '-input=false', '-no-color', 'change.tfplan']);
    ok(applied);
    expect(applied.stdout).toMatch(/Apply complete! Resources: 0 added, 1 changed, 0 destroyed/);
    expect((await work.run(['output', '-raw', 'a'])).stdout).toBe('two');

    const destroy = await work.run(['destroy', '-auto-approve', '-input=false', '-no-color']);
    ok(destroy);
    // terraform applying a destroy plan file words it as an apply; the builtin engine as a destroy
    expect(destroy.stdout).toMatch(
      /(Destroy complete! Resources: 1 destroyed|Apply complete! Resources: 0 added, 0 changed, 1 destroyed)/,
    );
    expect((await work.run(['state', 'list'])).stdout.trim()).toBe('');
  });
});

describe('backend "remote"', () => {
  it('plans, applies, reads outputs and destroys', async () => {
    const host = terraformHost();
    await workspace('legacy', 'default');
    const block = remoteBackendBlock(host, 'acme', 'legacy');
    const work = new TerraformWorkdir(host, { files: { 'main.tf': `${block}\n${config('one')}` } });
    ok(await work.run(['init', '-input=false', '-no-color']));
    const plan = await work.run(['plan', '-input=false', '-no-color']);
    ok(plan);
    expect(plan.stdout).toMatch(/Plan: 1 to add, 0 to change, 0 to destroy/);
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    ok(apply);
    expect(apply.stdout).toMatch(/terraform_data\.a: Creation complete/);
    expect((await work.run(['output', '-raw', 'a'])).stdout).toBe('one');
    ok(await work.run(['destroy', '-auto-approve', '-input=false', '-no-color']));
  });
});
