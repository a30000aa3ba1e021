import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyCountsFrom,
  commandDriver,
  planArguments,
  tfvars,
} from '../../../src/runs/executor/command/index.js';
import type { PlanRequest } from '../../../src/runs/executor/driver.js';
import { defaultFlags } from '../../../src/runs/executor/types.js';
import type { RunFlags, StateV4 } from '../../../src/runs/executor/types.js';
import { tarball } from '../../support/configuration.js';

const FAKE = resolve('test/fixtures/fake-terraform');
const CONFIG = {
  'main.tf':
    'variable "name" {\n  type = string\n}\nvariable "size" {\n  default = 1\n}\nresource "aws_instance" "web" {\n  ami = "ami-${var.name}"\n  size = var.size\n}\noutput "name" {\n  value = var.name\n}\n',
};

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'keel-command-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function driver(env: Record<string, string> = {}) {
  return commandDriver({
    binary: FAKE,
    scratchRoot: scratch,
    baseEnv: { PATH: process.env.PATH ?? '', ...env },
  });
}

function request(
  state: StateV4 | null,
  flags: Partial<RunFlags> = {},
  log: string[] = [],
): PlanRequest {
  return {
    configuration: tarball(CONFIG),
    workspaceVariables: [
      { key: 'name', value: 'ws', category: 'terraform', hcl: false, sensitive: false },
      { key: 'TF_LOG', value: '', category: 'env', hcl: false, sensitive: false },
    ],
    runVariables: [{ key: 'name', value: '"run"' }],
    state,
    flags: { ...defaultFlags, ...flags },
    log: (line) => log.push(line),
  };
}

/** Resolves when a line matching `pattern` has been logged. */
function lineSeen(log: string[], pattern: RegExp): Promise<void> {
  return new Promise((done) => {
    const push = log.push.bind(log);
    log.push = (...lines: string[]) => {
      const n = push(...lines);
      if (lines.some((l) => pattern.test(l))) done();
      return n;
    };
  });
}

async function applied(state: StateV4 | null = null, flags: Partial<RunFlags> = {}) {
  const d = driver();
  const planLog: string[] = [];
  const plan = await d.plan(request(state, flags, planLog)).result;
  if (plan.status !== 'finished') throw new Error(planLog.join('\n'));
  const applyLog: string[] = [];
  const apply = await d.apply({ ...request(state, flags, applyLog), artifact: plan.artifact })
    .result;
  if (apply.status !== 'finished') throw new Error(applyLog.join('\n'));
  return { plan, planLog, apply, applyLog };
}

describe('command driver against a terraform-compatible binary', () => {
  it('builds the plan arguments from the run flags', () => {
    expect(
      planArguments(
        {
          ...defaultFlags,
          isDestroy: true,
          refresh: false,
          replaceAddrs: ['a.b'],
          targetAddrs: ['c.d[0]'],
        },
        [
          { key: 'name', value: '"x y"' },
          { key: 'n', value: '3' },
          { key: 'l', value: '["a"]' },
        ],
      ),
    ).toEqual([
      'plan',
      '-input=false',
      '-no-color',
      '-out=plan.tfplan',
      '-destroy',
      '-refresh=false',
      '-replace=a.b',
      '-target=c.d[0]',
      '-var',
      'name=x y',
      '-var',
      'n=3',
      '-var',
      'l=["a"]',
    ]);
    expect(planArguments({ ...defaultFlags, refreshOnly: true }, [])).toContain('-refresh-only');
  });

  it('writes workspace terraform variables as tfvars, quoting plain strings', () => {
    expect(
      tfvars([
        { key: 'a', value: 'x"${y}', category: 'terraform', hcl: false, sensitive: false },
        { key: 'b', value: '[1]', category: 'terraform', hcl: true, sensitive: false },
        { key: 'C', value: 'env', category: 'env', hcl: false, sensitive: false },
      ]),
    ).toBe('a = "x\\"$${y}"\nb = [1]\n');
  });

  it('reads apply counts from the summary line', () => {
    expect(
      applyCountsFrom([
        'x',
        'Apply complete! Resources: 1 imported, 2 added, 3 changed, 4 destroyed.',
      ]),
    ).toEqual({ additions: 2, changes: 3, destructions: 4, imports: 1 });
    expect(applyCountsFrom(['Destroy complete! Resources: 2 destroyed.'])).toEqual({
      additions: 0,
      changes: 0,
      destructions: 2,
      imports: 0,
    });
  });

  it('plans, shows and applies, then plans no changes', async () => {
    const first = await applied();
    expect(first.planLog).toContain('Terraform has been successfully initialized!');
    expect(first.planLog).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
    expect(first.plan).toMatchObject({
      status: 'finished',
      counts: { additions: 1, hasChanges: true },
    });
    if (first.plan.status !== 'finished') return;
    // run variables override workspace ones: -var wins over *.auto.tfvars
    expect(first.plan.plan.resource_changes?.[0]?.change.after).toMatchObject({
      ami: 'ami-run',
      size: 1,
    });
    expect(first.applyLog).toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
    expect(first.apply).toMatchObject({
      status: 'finished',
      counts: { additions: 1 },
      state: { serial: 1, outputs: { name: { value: 'run' } } },
    });
    if (first.apply.status !== 'finished') return;
    const state = first.apply.state;

    const log: string[] = [];
    const again = await driver().plan(request(state, {}, log)).result;
    expect(again).toMatchObject({ status: 'finished', counts: { hasChanges: false } });
    expect(log).toContain('No changes. Your infrastructure matches the configuration.');

    expect(await readdir(scratch)).toEqual([]);
  });

  it('errors with the exit code and the diagnostic in the log on a syntax error', async () => {
    const log: string[] = [];
    const result = await driver().plan({
      ...request(null, {}, log),
      configuration: tarball({ 'main.tf': 'resource "a" "b" {\n' }),
    }).result;
    expect(result).toEqual({ status: 'errored', message: 'terraform plan exited with code 1' });
    expect(log).toContain('Error: Unclosed configuration block');
  });

  it('errors when the binary cannot be started', async () => {
    const log: string[] = [];
    const d = commandDriver({
      binary: join(scratch, 'missing-terraform'),
      scratchRoot: scratch,
      baseEnv: {},
    });
    const result = await d.plan(request(null, {}, log)).result;
    expect(result.status).toBe('errored');
    // setpriv's words when it starts the engine, Node's when it is not installed: one message.
    const missing = join(scratch, 'missing-terraform');
    expect(log).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^Error: could not start ${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: (No such file or directory|spawn .* ENOENT)$`,
        ),
      ),
    );
  });

  it('refuses incompatible flags the way the CLI does', async () => {
    const log: string[] = [];
    const result = await driver().plan(request(null, { isDestroy: true, refreshOnly: true }, log))
      .result;
    expect(result.status).toBe('errored');
    expect(log).toContain('Error: Incompatible plan mode options');
  });

  it('interrupt delivers SIGINT to a long plan and the phase ends canceled', async () => {
    // a workspace that already has the resource, so the plan refreshes it (slowly) first
    const state: StateV4 = {
      version: 4,
      terraform_version: '1.9.8',
      serial: 1,
      lineage: 'lineage',
      outputs: {},
      resources: [
        {
          mode: 'managed',
          type: 'aws_instance',
          name: 'web',
          provider: 'provider["registry.terraform.io/hashicorp/aws"]',
          instances: [
            {
              schema_version: 0,
              attributes: { ami: 'ami-run', size: 1, id: 'i-1' },
              sensitive_attributes: [],
            },
          ],
        },
      ],
    };
    const log: string[] = [];
    const refreshing = lineSeen(log, /Refreshing state/);
    const execution = driver({ FAKE_TF_PLAN_DELAY_MS: '600000' }).plan(request(state, {}, log));
    await refreshing;
    execution.interrupt();
    expect(await execution.result).toEqual({ status: 'canceled' });
    expect(log).toContain('Interrupt received.');
    expect(log).toContain('Error: execution halted');
  });

  it('kill ends an apply that is still finishing after an interrupt', async () => {
    const d = driver({ FAKE_TF_APPLY_DELAY_MS: '600000' });
    const plan = await d.plan(request(null)).result;
    if (plan.status !== 'finished') throw new Error('plan failed');
    const log: string[] = [];
    const creating = lineSeen(log, /Creating\.\.\./);
    const execution = d.apply({ ...request(null, {}, log), artifact: plan.artifact });
    await creating;
    const interrupted = lineSeen(log, /Gracefully shutting down/);
    execution.interrupt();
    await interrupted;
    execution.kill();
    expect(await execution.result).toEqual({ status: 'canceled' });
    expect(log).not.toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
  });
});
