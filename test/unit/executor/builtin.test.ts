import { describe, expect, it } from 'vitest';
import { builtinDriver } from '../../../src/runs/executor/builtin/index.js';
import { defaultFlags } from '../../../src/runs/executor/types.js';
import type { StateV4 } from '../../../src/runs/executor/types.js';
import { tarball } from '../../support/configuration.js';
import { identity, plan, planAndApply } from '../../support/builtin-driver.js';

const WEB = {
  'main.tf':
    'resource "aws_instance" "web" {\n  ami = "ami-123"\n  instance_type = "t3.micro"\n}\n',
};

describe('builtin driver: the spec flow with one resource', () => {
  it('plans 1 to add, applies 1 added, then finds no changes, then destroys it', async () => {
    const first = await planAndApply({ files: WEB });
    expect(first.plan.counts).toEqual({
      additions: 1,
      changes: 0,
      destructions: 0,
      imports: 0,
      hasChanges: true,
    });
    expect(first.planLog).toContain('Terraform will perform the following actions:');
    expect(first.planLog).toContain('  # aws_instance.web will be created');
    expect(first.planLog).toContain('      + id            = (known after apply)');
    expect(first.planLog).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
    const change = first.plan.plan.resource_changes?.[0];
    expect(change?.change).toMatchObject({
      actions: ['create'],
      before: null,
      after: { ami: 'ami-123' },
      after_unknown: { id: true },
    });
    expect(first.plan.plan).toMatchObject({
      format_version: '1.2',
      terraform_version: '1.9.8',
      applyable: true,
    });
    expect(first.applyLog).toContain('aws_instance.web: Creating...');
    expect(first.applyLog).toContain(
      'aws_instance.web: Creation complete after 0s [id=instance-1]',
    );
    expect(first.applyLog).toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
    expect(first.state).toMatchObject({ version: 4, serial: 1, lineage: 'lineage-1' });
    expect(first.state.resources).toEqual([
      {
        mode: 'managed',
        type: 'aws_instance',
        name: 'web',
        provider: 'provider["registry.terraform.io/hashicorp/aws"]',
        instances: [
          {
            schema_version: 0,
            attributes: { ami: 'ami-123', instance_type: 't3.micro', id: 'instance-1' },
            sensitive_attributes: [],
          },
        ],
      },
    ]);

    const second = await plan({ files: WEB, state: first.state });
    expect(second.result).toMatchObject({
      status: 'finished',
      counts: { hasChanges: false, additions: 0 },
    });
    expect(second.text).toContain('aws_instance.web: Refreshing state... [id=instance-1]');
    expect(second.text).toContain('No changes. Your infrastructure matches the configuration.');

    const destroy = await planAndApply({
      files: WEB,
      state: first.state,
      flags: { isDestroy: true },
    });
    expect(destroy.plan.counts).toMatchObject({ destructions: 1, additions: 0 });
    expect(destroy.planLog).toContain('Plan: 0 to add, 0 to change, 1 to destroy.');
    expect(destroy.applyLog).toContain('aws_instance.web: Destroying... [id=instance-1]');
    expect(destroy.applyLog).toContain('Destroy complete! Resources: 1 destroyed.');
    expect(destroy.state).toMatchObject({ serial: 2, lineage: 'lineage-1', resources: [] });

    const nothing = await plan({ files: WEB, state: destroy.state, flags: { isDestroy: true } });
    expect(nothing.text).toContain('No changes. No objects need to be destroyed.');
  });
});

describe('builtin driver: evaluation', () => {
  const counted = {
    'main.tf': [
      'variable "n" {\n  type = number\n  default = 2\n}',
      'variable "name" {}',
      'resource "aws_s3_bucket" "b" {\n  count = var.n\n  bucket = "${var.name}-${count.index}"\n}',
      'resource "aws_instance" "web" {\n  ami = "ami-1"\n  bucket = aws_s3_bucket.b[0].id\n}',
      'output "web_bucket" {\n  value = aws_instance.web.bucket\n}',
      'output "n" {\n  value = var.n\n}',
    ].join('\n'),
  };

  it('expands count, interpolates variables and resolves references after apply', async () => {
    const done = await planAndApply({
      files: counted,
      vars: [{ key: 'name', value: '"logs"' }],
      workspace: [{ key: 'n', value: '3', category: 'terraform', hcl: false, sensitive: false }],
    });
    expect(done.plan.plan.resource_changes?.map((c) => c.address)).toEqual([
      'aws_s3_bucket.b[0]',
      'aws_s3_bucket.b[1]',
      'aws_s3_bucket.b[2]',
      'aws_instance.web',
    ]);
    expect(done.plan.plan.resource_changes?.[1]?.change.after).toEqual({ bucket: 'logs-1' });
    expect(done.plan.plan.resource_changes?.[3]?.change.after_unknown).toEqual({
      bucket: true,
      id: true,
    });
    expect(done.plan.plan.variables).toEqual({ n: { value: 3 }, name: { value: 'logs' } });
    expect(done.plan.plan.output_changes?.n).toMatchObject({ actions: ['create'], after: 3 });
    expect(done.plan.plan.output_changes?.web_bucket).toMatchObject({
      actions: ['create'],
      after_unknown: true,
    });
    expect(done.planLog).toContain('Plan: 4 to add, 0 to change, 0 to destroy.');
    expect(done.planLog).toContain('  + web_bucket = (known after apply)');
    expect(done.state.outputs).toEqual({
      n: { value: 3, type: 'number' },
      web_bucket: { value: 's3-1', type: 'string' },
    });
    const web = done.state.resources.find((r) => r.type === 'aws_instance');
    expect(web?.instances[0]).toMatchObject({
      attributes: { bucket: 's3-1' },
      dependencies: ['aws_s3_bucket.b'],
    });
    expect(done.applyLog).toContain('Outputs:\n\nn = 3\nweb_bucket = "s3-1"');
  });

  it('run variables override workspace variables, which override defaults', async () => {
    const { result } = await plan({
      files: counted,
      vars: [
        { key: 'n', value: '1' },
        { key: 'name', value: '"run"' },
      ],
      workspace: [
        { key: 'n', value: '5', category: 'terraform', hcl: true, sensitive: false },
        { key: 'name', value: 'ws', category: 'terraform', hcl: false, sensitive: false },
        { key: 'AWS_REGION', value: 'x', category: 'env', hcl: false, sensitive: false },
      ],
    });
    expect(result.status === 'finished' && result.plan.variables).toEqual({
      n: { value: 1 },
      name: { value: 'run' },
    });
  });

  it('shrinking count destroys the instances no longer configured', async () => {
    const done = await planAndApply({ files: counted, vars: [{ key: 'name', value: '"x"' }] });
    const smaller = await plan({
      files: counted,
      state: done.state,
      vars: [
        { key: 'name', value: '"x"' },
        { key: 'n', value: '2' },
      ],
    });
    expect(smaller.result).toMatchObject({
      counts: { additions: 0, changes: 0, destructions: 0, hasChanges: false },
    });
    const one = await plan({
      files: counted,
      state: done.state,
      vars: [
        { key: 'name', value: '"x"' },
        { key: 'n', value: '1' },
      ],
    });
    expect(one.text).toContain('  # (because aws_s3_bucket.b[1] is not in configuration)');
    expect(one.text).toContain('Plan: 0 to add, 0 to change, 1 to destroy.');
    expect(one.result).toMatchObject({ counts: { additions: 0, changes: 0, destructions: 1 } });
  });

  it('updates in place when an attribute changes, and shows old -> new', async () => {
    const done = await planAndApply({ files: WEB });
    const changed = { 'main.tf': WEB['main.tf'].replace('t3.micro', 't3.large') };
    const next = await planAndApply({ files: changed, state: done.state });
    expect(next.planLog).toContain('      ~ instance_type = "t3.micro" -> "t3.large"');
    expect(next.planLog).toContain('        # (1 unchanged attribute hidden)');
    expect(next.plan.counts).toMatchObject({ changes: 1, additions: 0 });
    expect(next.applyLog).toContain('aws_instance.web: Modifying... [id=instance-1]');
    expect(next.state.resources[0]?.instances[0]?.attributes).toEqual({
      ami: 'ami-123',
      instance_type: 't3.large',
      id: 'instance-1',
    });
    expect(next.state.serial).toBe(2);
  });

  it('reports an HCL syntax error with the parser diagnostic', async () => {
    const { result, text } = await plan({
      files: { 'main.tf': 'resource "aws_instance" "web" {\n' },
    });
    expect(result.status).toBe('errored');
    expect(text).toContain(
      'Error: Unclosed configuration block\n\n  on main.tf line 1:\n    1: resource "aws_instance" "web" {\n\nThere is no closing brace for this block',
    );
  });

  it.each([
    [
      'a missing variable',
      { 'main.tf': 'variable "x" {}\n' },
      'Error: No value for required variable',
    ],
    [
      'an undeclared resource',
      { 'main.tf': 'resource "a_b" "c" {\n  x = a_b.missing.id\n}\n' },
      'Error: Reference to undeclared resource',
    ],
    [
      'an expression beyond literals',
      { 'main.tf': 'resource "a_b" "c" {\n  x = [for s in ["a"] : s]\n}\n' },
      'Error: Unsupported by the builtin engine: expression',
    ],
    [
      'a module block',
      { 'main.tf': 'module "m" {\n  source = "./m"\n}\n' },
      'Error: Unsupported by the builtin engine: module calls',
    ],
    ['no .tf files', { 'README.md': 'hi' }, 'Error: No configuration files'],
    [
      'a cycle',
      {
        'main.tf':
          'resource "a_b" "c" {\n  x = a_b.d.id\n}\nresource "a_b" "d" {\n  x = a_b.c.id\n}\n',
      },
      'Error: Cycle',
    ],
    [
      'a count from an unknown value',
      { 'main.tf': 'resource "a_b" "c" {}\nresource "a_b" "d" {\n  count = a_b.c.id\n}\n' },
      'Error: Invalid count argument',
    ],
  ])('errors with %s', async (_name, files, message) => {
    const { result, text } = await plan({ files });
    expect(result.status).toBe('errored');
    expect(text).toContain(message);
  });

  it('does not take a null interpolation in an HCL variable value as text', async () => {
    const { result, text } = await plan({
      files: { 'main.tf': 'variable "x" {}\n' },
      workspace: [
        { key: 'x', value: '"x${null}"', category: 'terraform', hcl: true, sensitive: false },
      ],
    });
    expect(result.status).toBe('errored');
    expect(text).toContain('Error: Variables not allowed');
  });

  it('errors on a run variable that is not a literal', async () => {
    const { result, text } = await plan({
      files: { 'main.tf': 'variable "x" {}\n' },
      vars: [{ key: 'x', value: 'var.y' }],
    });
    expect(result.status).toBe('errored');
    expect(text).toContain('Error: Variables not allowed');
  });

  it('refuses a run variable the configuration does not declare, as terraform refuses -var', async () => {
    const { result, text } = await plan({ files: WEB, vars: [{ key: 'extra', value: '1' }] });
    expect(result.status).toBe('errored');
    expect(text).toContain('Error: Value for undeclared variable');
    expect(text).toContain('A variable named "extra" was given as a run variable');
  });

  it('warns about an undeclared workspace variable, as terraform warns about one in a file', async () => {
    const { result, text } = await plan({
      files: WEB,
      workspace: [
        { key: 'extra', value: '1', category: 'terraform', hcl: false, sensitive: false },
      ],
    });
    expect(result.status).toBe('finished');
    expect(text).toContain('Warning: Value for undeclared variable');
  });
});

describe('builtin driver: run flags', () => {
  const two = {
    'main.tf':
      'resource "aws_instance" "a" {\n  ami = "x"\n}\nresource "aws_instance" "b" {\n  ami = aws_instance.a.id\n}\nresource "aws_instance" "c" {\n  ami = "z"\n}\n',
  };

  it('replace-addrs replaces a resource that would otherwise be unchanged', async () => {
    const done = await planAndApply({ files: WEB });
    const next = await planAndApply({
      files: WEB,
      state: done.state,
      flags: { replaceAddrs: ['aws_instance.web'] },
    });
    expect(next.plan.plan.resource_changes?.[0]).toMatchObject({
      change: { actions: ['delete', 'create'] },
      action_reason: 'replace_by_request',
    });
    expect(next.planLog).toContain('  # aws_instance.web will be replaced, as requested');
    expect(next.planLog).toContain('-/+ resource "aws_instance" "web" {');
    expect(next.planLog).toContain('Plan: 1 to add, 0 to change, 1 to destroy.');
    expect(next.applyLog).toContain('Apply complete! Resources: 1 added, 0 changed, 1 destroyed.');
    expect(next.state.resources[0]?.instances[0]?.attributes.id).toBe('instance-1');
  });

  it('replaces tainted instances', async () => {
    const done = await planAndApply({ files: WEB });
    const tainted: StateV4 = structuredClone(done.state);
    const instance = tainted.resources[0]?.instances[0];
    if (instance) instance.status = 'tainted';
    const { text, result } = await plan({ files: WEB, state: tainted });
    expect(text).toContain('is tainted, so must be replaced');
    expect(result.status === 'finished' && result.plan.resource_changes?.[0]?.action_reason).toBe(
      'replace_because_tainted',
    );
  });

  it('target-addrs keeps the targets and what they depend on', async () => {
    const { result, text } = await plan({ files: two, flags: { targetAddrs: ['aws_instance.b'] } });
    expect(
      result.status === 'finished' && result.plan.resource_changes?.map((c) => c.address),
    ).toEqual(['aws_instance.a', 'aws_instance.b']);
    expect(text).toContain('Warning: Resource targeting is in effect');
    expect(text).toContain('Plan: 2 to add, 0 to change, 0 to destroy.');
  });

  it('a targeted apply leaves untargeted resources alone', async () => {
    const done = await planAndApply({ files: two, flags: { targetAddrs: ['aws_instance.c'] } });
    expect(done.state.resources.map((r) => r.name)).toEqual(['c']);
    const rest = await plan({ files: two, state: done.state });
    expect(rest.result).toMatchObject({ counts: { additions: 2 } });
  });

  it('refresh-only plans no resource changes but records new outputs', async () => {
    const done = await planAndApply({ files: WEB });
    const withOutput = {
      'main.tf': `${WEB['main.tf']}output "ami" {\n  value = aws_instance.web.ami\n}\n`,
    };
    const refresh = await planAndApply({
      files: withOutput,
      state: done.state,
      flags: { refreshOnly: true },
    });
    expect(refresh.plan.plan.resource_changes?.map((c) => c.change.actions)).toEqual([['no-op']]);
    expect(refresh.planLog).toContain('Changes to Outputs:\n  + ami = "ami-123"');
    expect(refresh.state.outputs.ami?.value).toBe('ami-123');
    const again = await plan({
      files: withOutput,
      state: refresh.state,
      flags: { refreshOnly: true },
    });
    expect(again.text).toContain(
      'No changes. Your infrastructure still matches the configuration.',
    );
  });

  it('refresh=false skips the refresh lines', async () => {
    const done = await planAndApply({ files: WEB });
    const { text } = await plan({ files: WEB, state: done.state, flags: { refresh: false } });
    expect(text).not.toContain('Refreshing state');
  });

  it('imports an object named by an import block', async () => {
    const files = {
      'main.tf':
        'import {\n  to = aws_s3_bucket.b\n  id = "bucket-1"\n}\nresource "aws_s3_bucket" "b" {\n  bucket = "bucket-1"\n}\n',
    };
    const done = await planAndApply({ files });
    expect(done.plan.counts).toMatchObject({ imports: 1, additions: 0, hasChanges: true });
    expect(done.plan.plan.resource_changes?.[0]?.change).toMatchObject({
      actions: ['no-op'],
      importing: { id: 'bucket-1' },
    });
    expect(done.planLog).toContain('Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.');
    expect(done.applyLog).toContain(
      'Apply complete! Resources: 1 imported, 0 added, 0 changed, 0 destroyed.',
    );
    expect(done.state.resources[0]?.instances[0]?.attributes).toEqual({
      bucket: 'bucket-1',
      id: 'bucket-1',
    });
    const again = await plan({ files, state: done.state });
    expect(again.result).toMatchObject({ counts: { hasChanges: false } });
  });

  it('refuses an import without a resource block unless config generation is allowed', async () => {
    const files = { 'main.tf': 'import {\n  to = aws_s3_bucket.b\n  id = "bucket-1"\n}\n' };
    const refused = await plan({ files });
    expect(refused.result.status).toBe('errored');
    expect(refused.text).toContain('Error: Configuration for import target does not exist');
    const allowed = await planAndApply({ files, flags: { allowConfigGeneration: true } });
    expect(allowed.planLog).toContain('(config will be generated)');
    expect(allowed.state.resources[0]?.instances[0]?.attributes).toEqual({ id: 'bucket-1' });
  });

  it('allow-empty-apply makes a no-change plan applyable and the apply writes a new serial', async () => {
    const done = await planAndApply({ files: WEB });
    const empty = await planAndApply({
      files: WEB,
      state: done.state,
      flags: { allowEmptyApply: true },
    });
    expect(empty.plan.plan.applyable).toBe(true);
    expect(empty.plan.counts.hasChanges).toBe(false);
    expect(empty.state).toMatchObject({ serial: 2, lineage: 'lineage-1' });
    const strict = await plan({ files: WEB, state: done.state });
    expect(strict.result.status === 'finished' && strict.result.plan.applyable).toBe(false);
  });

  it('refuses to apply a plan whose state has moved on', async () => {
    const planned = await plan({ files: WEB });
    if (planned.result.status !== 'finished') throw new Error('plan failed');
    const done = await planAndApply({ files: WEB });
    const log: string[] = [];
    const stale = await planned.driver.apply({
      ...planned.request,
      state: done.state,
      artifact: planned.result.artifact,
      log: (l) => log.push(l),
    }).result;
    expect(stale.status).toBe('errored');
    expect(log).toContain('Error: Saved plan is stale');
  });

  it('is deterministic: the same inputs give the same plan, log and state', async () => {
    const a = await planAndApply({ files: two });
    const b = await planAndApply({ files: two });
    expect(b).toEqual(a);
  });

  it('an interrupt before planning ends the phase canceled with terraform wording', async () => {
    const log: string[] = [];
    const execution = builtinDriver(identity()).plan({
      configuration: tarball(WEB),
      workspaceVariables: [],
      runVariables: [],
      state: null,
      flags: defaultFlags,
      log: (l) => log.push(l),
    });
    execution.interrupt();
    expect(await execution.result).toEqual({ status: 'canceled' });
    expect(log[0]).toBe('Interrupt received.');
  });
});
