import { describe, expect, it } from 'vitest';
import {
  cloudBlock,
  TERRAFORM_BIN,
  TerraformWorkdir,
  useTerraformHost,
} from '../../support/terraform.js';

/**
 * Issue 25, driven with the real terraform CLI on the command engine (the real terraform binary
 * again): an organization that estimates costs, a configuration whose resources go from two to
 * none. Terraform's plan JSON then has no `resources`; the run must still be estimated and
 * applied, and the workspace must take its next run.
 */

const terraformHost = useTerraformHost(
  async (h) => {
    await h.organization('wedge');
    const org = await h.api('PATCH', '/organizations/wedge', {
      data: { type: 'organizations', attributes: { 'cost-estimation-enabled': true } },
    });
    expect(org.status, org.text).toBe(200);
    const ws = await h.api('POST', '/organizations/wedge/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'count', 'execution-engine': 'default' } },
    });
    expect(ws.status, ws.text).toBe(201);
    const moves = await h.api('POST', '/organizations/wedge/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'moves', 'execution-engine': 'default' } },
    });
    expect(moves.status, moves.text).toBe(201);
  },
  { args: ['--engine-bin', TERRAFORM_BIN] },
);

const counted = (
  host: ReturnType<typeof terraformHost>,
  n: number,
) => `${cloudBlock(host, 'wedge', 'count')}
resource "terraform_data" "a" {
  count = ${n}
  input = "x"
}
`;

describe('a plan that leaves no resources, on the command engine with cost estimation', () => {
  it('applies, and the next run of the workspace goes on', async () => {
    const host = terraformHost();
    const work = new TerraformWorkdir(host, { files: { 'main.tf': counted(host, 2) } });
    const init = await work.run(['init', '-input=false', '-no-color']);
    expect(init.code, `${init.stdout}\n${init.stderr}`).toBe(0);
    const up = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(up.code, `${up.stdout}\n${up.stderr}`).toBe(0);
    expect(up.stdout).toContain('2 added');

    work.write('main.tf', counted(host, 0));
    const down = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(down.code, `${down.stdout}\n${down.stderr}`).toBe(0);
    expect(down.stdout).toMatch(/Cost Estimation:/);
    expect(down.stdout).toContain('2 destroyed');

    work.write('main.tf', counted(host, 1));
    const again = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(again.code, `${again.stdout}\n${again.stderr}`).toBe(0);
    expect(again.stdout).toContain('1 added');
  });
});

describe('command engine plans without resource changes (issue 25, finding 4)', () => {
  const config = (host: ReturnType<typeof terraformHost>, body: string) =>
    `${cloudBlock(host, 'wedge', 'moves')}\n${body}`;

  it('a refresh-only apply with no drift, then a moved-only apply, then no changes', async () => {
    const host = terraformHost();
    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': config(host, 'resource "terraform_data" "a" {\n  input = "x"\n}\n') },
    });
    const init = await work.run(['init', '-input=false', '-no-color']);
    expect(init.code, `${init.stdout}\n${init.stderr}`).toBe(0);
    const up = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(up.code, `${up.stdout}\n${up.stderr}`).toBe(0);

    const refresh = await work.run([
      'apply',
      '-refresh-only',
      '-auto-approve',
      '-input=false',
      '-no-color',
    ]);
    expect(refresh.code, `${refresh.stdout}\n${refresh.stderr}`).toBe(0);
    expect(refresh.stdout).toContain('No changes');

    work.write(
      'main.tf',
      config(
        host,
        'resource "terraform_data" "b" {\n  input = "x"\n}\nmoved {\n  from = terraform_data.a\n  to   = terraform_data.b\n}\n',
      ),
    );
    const moved = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(moved.code, `${moved.stdout}\n${moved.stderr}`).toBe(0);
    expect(moved.stdout).toContain('has moved to terraform_data.b');
    const after = await work.run(['plan', '-input=false', '-no-color', '-detailed-exitcode']);
    expect(after.code, `${after.stdout}\n${after.stderr}`).toBe(0);
    expect(after.stdout).toContain('No changes');
  });
});
