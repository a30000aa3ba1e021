import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cloudBlock,
  startTerraformHost,
  TerraformWorkdir,
  type TerraformHost,
} from '../../support/terraform.js';

/** The cloud block against Keel's builtin engine: the CLI's whole remote workflow. */

const config = (input: string) => `resource "terraform_data" "a" {
  input = "${input}"
}

output "a" {
  value = terraform_data.a.output
}
`;

let host: TerraformHost;
beforeAll(async () => {
  host = await startTerraformHost();
  await host.organization('acme');
});
afterAll(async () => host?.stop());

const ok = (r: { code: number | null; stdout: string; stderr: string }) =>
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);

describe('cloud block, builtin engine', () => {
  it('init, apply, output, state list/show, a change through a saved plan, destroy', async () => {
    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': `${cloudBlock(host, 'acme', 'web')}\n${config('one')}` },
    });
    ok(await work.run(['init', '-input=false', '-no-color']));
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    ok(apply);
    expect(apply.stdout).toMatch(/Apply complete! Resources: 1 added, 0 changed, 0 destroyed/);
    // every line of the apply log reaches the CLI, which skips the reference's three header lines
    expect(apply.stdout).toMatch(/terraform_data\.a: Creating\.\.\.\n/);
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

    work.write('main.tf', `${cloudBlock(host, 'acme', 'web')}\n${config('two')}`);
    const saved = await work.run(['plan', '-out', 'change.tfplan', '-input=false', '-no-color']);
    ok(saved);
    expect(saved.stdout).toMatch(/1 to change/);
    const applied = await work.run(['apply', '-input=false', '-no-color', 'change.tfplan']);
    ok(applied);
    expect(applied.stdout).toMatch(/Apply complete! Resources: 0 added, 1 changed, 0 destroyed/);
    expect((await work.run(['output', '-raw', 'a'])).stdout).toBe('two');

    const destroy = await work.run(['destroy', '-auto-approve', '-input=false', '-no-color']);
    ok(destroy);
    expect(destroy.stdout).toMatch(/Destroy complete! Resources: 1 destroyed/);
    expect((await work.run(['state', 'list'])).stdout.trim()).toBe('');
  });
});
