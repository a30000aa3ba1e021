import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cloudBlock, useTerraformHost, TerraformWorkdir } from '../../support/terraform.js';

/**
 * Local execution: the CLI plans and applies itself and keeps its state in Keel (lock, state
 * versions, unlock); state pull and push; init -migrate-state from local state.
 */

const config = (input: string) => `resource "terraform_data" "a" {
  input = "${input}"
}

output "a" {
  value = terraform_data.a.output
}
`;

const terraformHost = useTerraformHost((h) => h.organization('acme'));

const ok = (r: { code: number | null; stdout: string; stderr: string }) =>
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);

type Doc = { data: { id: string; attributes: Record<string, unknown> } };

async function localWorkspace(name: string): Promise<string> {
  const res = await terraformHost().api('POST', '/organizations/acme/workspaces', {
    data: { type: 'workspaces', attributes: { name, 'execution-mode': 'local' } },
  });
  expect(res.status, res.text).toBe(201);
  return (res.json as Doc).data.id;
}

async function currentState(ws: string): Promise<Record<string, unknown>> {
  const sv = await terraformHost().api('GET', `/workspaces/${ws}/current-state-version`);
  expect(sv.status, sv.text).toBe(200);
  return (sv.json as Doc).data.attributes;
}

describe('local execution mode', () => {
  it('applies locally, keeps state in Keel, unlocks, and reads outputs', async () => {
    const host = terraformHost();
    const ws = await localWorkspace('local');
    const block = cloudBlock(host, 'acme', 'local');
    const work = new TerraformWorkdir(host, { files: { 'main.tf': `${block}\n${config('one')}` } });
    ok(await work.run(['init', '-input=false', '-no-color']));
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    ok(apply);
    expect(apply.stdout).toMatch(/Apply complete! Resources: 1 added/);
    expect(await currentState(ws)).toMatchObject({
      status: 'finalized',
      'terraform-version': '1.11.4',
    });
    const locked = await host.api('GET', `/workspaces/${ws}`);
    expect((locked.json as Doc).data.attributes.locked).toBe(false);
    expect((await work.run(['output', '-raw', 'a'])).stdout).toBe('one');
    const runs = await host.api('GET', `/workspaces/${ws}/runs`);
    expect((runs.json as { data: unknown[] }).data).toHaveLength(0);
  });

  it('state pull and push; another lineage only with -force', async () => {
    const host = terraformHost();
    const ws = await localWorkspace('pushed');
    const block = cloudBlock(host, 'acme', 'pushed');
    const work = new TerraformWorkdir(host, { files: { 'main.tf': `${block}\n${config('one')}` } });
    ok(await work.run(['init', '-input=false', '-no-color']));
    ok(await work.run(['apply', '-auto-approve', '-input=false', '-no-color']));
    const pulled = await work.run(['state', 'pull']);
    ok(pulled);
    const state = JSON.parse(pulled.stdout) as { serial: number; lineage: string };
    expect(state.lineage).toBe((await currentState(ws)).lineage);

    const before = Number((await currentState(ws)).serial);
    const next = { ...state, serial: state.serial + 1 };
    work.write('next.tfstate', JSON.stringify(next));
    ok(await work.run(['state', 'push', 'next.tfstate']));
    expect(Number((await currentState(ws)).serial)).toBeGreaterThan(before);

    // another lineage: terraform refuses it, and only -force makes Keel take it
    work.write('other.tfstate', JSON.stringify({ ...next, lineage: 'another-lineage' }));
    const refused = await work.run(['state', 'push', 'other.tfstate']);
    expect(refused.code).not.toBe(0);
    expect((await currentState(ws)).lineage).toBe(state.lineage);
    ok(await work.run(['state', 'push', '-force', 'other.tfstate']));
    expect((await currentState(ws)).lineage).toBe('another-lineage');
  });

  it('two local applies at once: the second waits on the lock, then applies', async () => {
    const host = terraformHost();
    const ws = await localWorkspace('busy');
    const block = cloudBlock(host, 'acme', 'busy');
    const first = new TerraformWorkdir(host, {
      files: { 'main.tf': `${block}\n${config('one')}` },
    });
    const second = new TerraformWorkdir(host, {
      files: { 'main.tf': `${block}\n${config('two')}` },
    });
    ok(await first.run(['init', '-input=false', '-no-color']));
    ok(await second.run(['init', '-input=false', '-no-color']));
    // the first holds the workspace lock while it waits for its confirmation
    const a = first.start(['apply', '-no-color']);
    await a.waitFor(/Enter a value:/, 30_000);
    const locked = await host.api('GET', `/workspaces/${ws}`);
    expect((locked.json as Doc).data.attributes.locked).toBe(true);
    const b = second.start([
      'apply',
      '-auto-approve',
      '-input=false',
      '-no-color',
      '-lock-timeout=60s',
    ]);
    await b.waitFor(/Acquiring state lock/, 30_000);
    a.answer('yes');
    ok(await a.done);
    const bDone = await b.done;
    ok(bDone);
    expect(bDone.stdout).toMatch(/Apply complete! Resources: 0 added, 1 changed/);
    expect((await second.run(['output', '-raw', 'a'])).stdout).toBe('two');
  }, 120_000);

  it('force-unlock takes the lock another client left, by the id terraform prints', async () => {
    const host = terraformHost();
    const ws = await localWorkspace('stuck');
    const block = cloudBlock(host, 'acme', 'stuck');
    const work = new TerraformWorkdir(host, { files: { 'main.tf': `${block}\n${config('one')}` } });
    ok(await work.run(['init', '-input=false', '-no-color']));
    const lock = await host.api('POST', `/workspaces/${ws}/actions/lock`, { reason: 'left' });
    expect(lock.status, lock.text).toBe(200);
    const blocked = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(blocked.code).not.toBe(0);
    expect(blocked.stderr).toMatch(/lock/i);
    const unlock = await work.run(['force-unlock', '-force', 'acme/stuck']);
    ok(unlock);
    ok(await work.run(['apply', '-auto-approve', '-input=false', '-no-color']));
  });

  it('init migrates a local state into Keel (a cloud block asks instead of -migrate-state)', async () => {
    const host = terraformHost();
    const work = new TerraformWorkdir(host, { files: { 'main.tf': config('local') } });
    ok(await work.run(['init', '-input=false', '-no-color']));
    ok(await work.run(['apply', '-auto-approve', '-input=false', '-no-color']));
    expect(
      (JSON.parse(readFileSync(join(work.dir, 'terraform.tfstate'), 'utf8')) as { resources: [] })
        .resources,
    ).toHaveLength(1);
    const ws = await localWorkspace('migrated');
    work.write('cloud.tf', cloudBlock(host, 'acme', 'migrated'));
    // a cloud block migrates on init after asking; -migrate-state is the backend blocks' flag
    const init = work.start(['init', '-no-color']);
    init.answer('yes');
    init.answer('yes');
    init.endInput();
    const migrated = await init.done;
    ok(migrated);
    // terraform uploads the local resources (as a new lineage, serial 1, as it migrates into a cloud workspace)
    const migratedState = await currentState(ws);
    expect(migratedState).toMatchObject({ status: 'finalized', serial: 1 });
    expect((await work.run(['output', '-raw', 'a'])).stdout).toBe('local');
    const plan = await work.run(['plan', '-input=false', '-no-color', '-detailed-exitcode']);
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
  });
});
