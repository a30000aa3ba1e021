import { describe, expect, it } from 'vitest';
import { cloudBlock, TerraformWorkdir, useTerraformHost } from '../../support/terraform.js';

/**
 * The real CLI against variable sets and run triggers: a remote apply gets its variables by the
 * reference's precedence (a priority set beats `-var`), and an apply in one workspace queues a
 * run in the workspace that follows it.
 */

const terraformHost = useTerraformHost((h) => h.organization('acme'));

const ok = (r: { code: number | null; stdout: string; stderr: string }) =>
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);

const config = `variable "plain" {}
variable "pinned" {}
variable "mine" {}

output "all" {
  value = "\${var.plain}/\${var.pinned}/\${var.mine}"
}

resource "terraform_data" "a" {
  input = "\${var.plain}/\${var.pinned}/\${var.mine}"
}
`;

type Doc = { data: { id: string; attributes: Record<string, unknown> } };
type List = {
  data: {
    id: string;
    attributes: Record<string, unknown>;
    relationships: Record<string, { data: { id: string } | null }>;
  }[];
};

const tf = (key: string, value: string) => ({
  type: 'vars',
  attributes: { key, value, category: 'terraform' },
});

describe('variable sets and run triggers with the terraform CLI', () => {
  it('a remote apply takes set, workspace and -var values by precedence', async () => {
    const host = terraformHost();
    const ws = await host.api('POST', '/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'vars' } },
    });
    expect(ws.status, ws.text).toBe(201);
    const wsId = (ws.json as Doc).data.id;
    const sets = [
      {
        name: 'org-defaults',
        global: true,
        priority: false,
        vars: [tf('plain', 'global'), tf('mine', 'global')],
      },
      { name: 'guardrails', global: true, priority: true, vars: [tf('pinned', 'priority')] },
    ];
    for (const s of sets) {
      const res = await host.api('POST', '/organizations/acme/varsets', {
        data: {
          type: 'varsets',
          attributes: { name: s.name, global: s.global, priority: s.priority },
          relationships: { vars: { data: s.vars } },
        },
      });
      expect(res.status, res.text).toBe(201);
    }
    const own = await host.api('POST', `/workspaces/${wsId}/vars`, {
      data: tf('mine', 'workspace'),
    });
    expect(own.status, own.text).toBe(201);

    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': `${cloudBlock(host, 'acme', 'vars')}\n${config}` },
    });
    ok(await work.run(['init', '-input=false', '-no-color']));
    const apply = await work.run([
      'apply',
      '-auto-approve',
      '-input=false',
      '-no-color',
      '-var',
      'pinned=from-cli',
    ]);
    ok(apply);
    const out = await work.run(['output', '-raw', 'all']);
    ok(out);
    expect(out.stdout).toBe('global/priority/workspace');
  });

  it('an apply in the source queues a run in its follower', async () => {
    const host = terraformHost();
    const names = ['upstream', 'downstream'];
    const ids: string[] = [];
    for (const name of names) {
      const res = await host.api('POST', '/organizations/acme/workspaces', {
        data: { type: 'workspaces', attributes: { name } },
      });
      expect(res.status, res.text).toBe(201);
      ids.push((res.json as Doc).data.id);
    }
    const [up, down] = ids as [string, string];
    const trigger = await host.api('POST', `/workspaces/${down}/run-triggers`, {
      data: { relationships: { sourceable: { data: { type: 'workspaces', id: up } } } },
    });
    expect(trigger.status, trigger.text).toBe(201);
    const simple = 'resource "terraform_data" "a" {\n  input = "x"\n}\n';
    const workdirs = names.map(
      (name) =>
        new TerraformWorkdir(host, {
          files: { 'main.tf': `${cloudBlock(host, 'acme', name)}\n${simple}` },
        }),
    );
    const [upWork, downWork] = workdirs as [TerraformWorkdir, TerraformWorkdir];
    // the follower needs a configuration of its own: its first apply gives it one
    for (const w of [downWork, upWork]) {
      ok(await w.run(['init', '-input=false', '-no-color']));
    }
    ok(await downWork.run(['apply', '-auto-approve', '-input=false', '-no-color']));
    const before = (await host.api('GET', `/workspaces/${down}/runs`)).json as List;
    expect(before.data).toHaveLength(1);

    ok(await upWork.run(['apply', '-auto-approve', '-input=false', '-no-color']));
    const upRuns = (await host.api('GET', `/workspaces/${up}/runs`)).json as List;
    // the trigger is a reactor after the apply: wait for the follower's run to show up
    const runsOfDown = async () => (await host.api('GET', `/workspaces/${down}/runs`)).json as List;
    await expect.poll(async () => (await runsOfDown()).data.length, { timeout: 10_000 }).toBe(2);
    const after = await runsOfDown();
    const triggered = after.data[0]!;
    expect(triggered.attributes.source).toBe('tfe-run-trigger');
    expect(triggered.relationships['triggering-run']?.data?.id).toBe(upRuns.data[0]!.id);
    expect(triggered.relationships['triggering-source']?.data?.id).toBe(up);
  });
});
