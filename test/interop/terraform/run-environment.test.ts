import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../support/daemon.js';
import { httpsGet } from '../../support/https.js';
import {
  cloudBlock,
  remoteBackendBlock,
  useTerraformHost,
  TerraformWorkdir,
  TERRAFORM_BIN,
  type TerraformHost,
} from '../../support/terraform.js';

/**
 * What a run on the command engine (real terraform) is given, as HCP Terraform gives it (issue 25,
 * finding 4): TFC_* variables, a token for Keel scoped to the run and Keel's CA, so that
 * `terraform_remote_state` reads another workspace's outputs when remote-state sharing allows it
 * and is refused when it does not; and no trace of the local backend Keel runs terraform on.
 */

const terraformHost = useTerraformHost((h) => h.organization('acme'), {
  env: { KEEL_ENGINE_BIN: TERRAFORM_BIN },
});

const ok = (r: { code: number | null; stdout: string; stderr: string }) =>
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);

type Doc = { data: { id: string; attributes: Record<string, unknown> } };

async function workspace(
  name: string,
  attributes: Record<string, unknown> = {},
): Promise<{ id: string }> {
  const res = await terraformHost().api('POST', '/organizations/acme/workspaces', {
    data: {
      type: 'workspaces',
      attributes: { name, 'execution-engine': 'default', ...attributes },
    },
  });
  expect(res.status, res.text).toBe(201);
  return { id: (res.json as Doc).data.id };
}

/** A producer workspace with one applied output, `greeting`. */
async function producer(host: TerraformHost, name: string, shared: boolean): Promise<void> {
  await workspace(name, { 'global-remote-state': shared });
  const work = new TerraformWorkdir(host, {
    files: {
      'main.tf': `${cloudBlock(host, 'acme', name)}
output "greeting" {
  value = "hello from ${name}"
}
`,
    },
  });
  ok(await work.run(['init', '-input=false', '-no-color']));
  ok(await work.run(['apply', '-auto-approve', '-input=false', '-no-color']));
}

/** A consumer reading `greeting` from another workspace with terraform_remote_state. */
const consumer = (host: TerraformHost, name: string, from: string, backend: 'remote' | 'cloud') =>
  `${cloudBlock(host, 'acme', name)}
data "terraform_remote_state" "p" {
  backend = "${backend}"
  # The cloud backend has no default workspace: the data source names it (terraform's rule).
  ${backend === 'cloud' ? `workspace = "${from}"` : ''}
  config = {
    hostname     = "${host.hostname}"
    organization = "acme"
    workspaces = {
      name = "${from}"
    }
  }
}

output "read" {
  value = data.terraform_remote_state.p.outputs.greeting
}
`;

describe('a run on the command engine', () => {
  it('gets TFC_RUN_ID, TFC_WORKSPACE_NAME, TFC_WORKSPACE_SLUG, TFC_PROJECT_NAME, a token and the CA', async () => {
    const host = terraformHost();
    const { id } = await workspace('envs');
    const work = new TerraformWorkdir(host, {
      files: {
        'main.tf': `${cloudBlock(host, 'acme', 'envs')}
resource "terraform_data" "env" {
  provisioner "local-exec" {
    command = "echo \\"run=$TFC_RUN_ID ws=$TFC_WORKSPACE_NAME slug=$TFC_WORKSPACE_SLUG project=$TFC_PROJECT_NAME atlas=$\${ATLAS_TOKEN:+set} ca=$\${SSL_CERT_FILE:+set}\\""
  }
}
`,
      },
    });
    ok(await work.run(['init', '-input=false', '-no-color']));
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    ok(apply);
    const runs = await host.api('GET', `/workspaces/${id}/runs`);
    const runId = (runs.json as { data: { id: string }[] }).data[0]?.id;
    expect(runId).toMatch(/^run-/);
    expect(apply.stdout).toContain(
      `run=${runId} ws=envs slug=acme/envs project=Default Project atlas=set ca=set`,
    );
  });

  it('shows no trace of the local backend it runs terraform on', async () => {
    const host = terraformHost();
    await workspace('quiet');
    const work = new TerraformWorkdir(host, {
      files: {
        'main.tf': `${cloudBlock(host, 'acme', 'quiet')}
resource "terraform_data" "a" {
  input = "x"
}
`,
      },
    });
    ok(await work.run(['init', '-input=false', '-no-color']));
    const plan = await work.run(['plan', '-input=false', '-no-color']);
    ok(plan);
    expect(plan.stdout).toMatch(/Plan: 1 to add/);
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    ok(apply);
    for (const out of [plan.stdout, apply.stdout]) {
      expect(out).not.toContain('Successfully configured the backend "local"!');
      expect(out).not.toContain('use this backend unless the backend configuration changes');
    }
  });

  it.each(['remote', 'cloud'] as const)(
    'reads a shared workspace with terraform_remote_state (backend "%s"), and is refused an unshared one',
    async (backend) => {
      const host = terraformHost();
      await producer(host, `shared-${backend}`, true);
      await producer(host, `private-${backend}`, false);

      await workspace(`reader-${backend}`);
      const reader = new TerraformWorkdir(host, {
        files: { 'main.tf': consumer(host, `reader-${backend}`, `shared-${backend}`, backend) },
      });
      ok(await reader.run(['init', '-input=false', '-no-color']));
      const applied = await reader.run(['apply', '-auto-approve', '-input=false', '-no-color']);
      ok(applied);
      expect((await reader.run(['output', '-raw', 'read'])).stdout).toBe(
        `hello from shared-${backend}`,
      );

      await workspace(`snoop-${backend}`);
      const snoop = new TerraformWorkdir(host, {
        files: { 'main.tf': consumer(host, `snoop-${backend}`, `private-${backend}`, backend) },
      });
      ok(await snoop.run(['init', '-input=false', '-no-color']));
      const refused = await snoop.run(['plan', '-input=false', '-no-color']);
      expect(refused.code).not.toBe(0);
      // refused by Keel, saying why (not a workspace terraform then tries to create)
      expect(`${refused.stdout}${refused.stderr}`.replace(/\s+/g, ' ')).toMatch(
        new RegExp(
          `workspace acme/private-${backend} does not share its state with workspace acme/snoop-${backend}`,
        ),
      );
      expect(`${refused.stdout}${refused.stderr}`).not.toContain(`hello from private-${backend}`);
    },
  );
});

describe("a run's debugging-mode on the command engine", () => {
  it("runs terraform with TF_LOG=TRACE: terraform's own trace is in the plan's log, and only there", async () => {
    const host = terraformHost();
    const { id } = await workspace('traced');
    const work = new TerraformWorkdir(host, {
      files: {
        'main.tf': `${cloudBlock(host, 'acme', 'traced')}
resource "terraform_data" "a" {
  input = "x"
}
`,
      },
    });
    ok(await work.run(['init', '-input=false', '-no-color']));
    // The CLI's speculative plan uploads the configuration (and plans it without a trace).
    ok(await work.run(['plan', '-input=false', '-no-color']));
    const cvs = await host.api('GET', `/workspaces/${id}/configuration-versions`);
    const cv = (cvs.json as { data: { id: string }[] }).data[0]!.id;
    const created = await host.api('POST', '/runs', {
      data: {
        type: 'runs',
        attributes: { 'plan-only': true, 'debugging-mode': true },
        relationships: {
          workspace: { data: { type: 'workspaces', id } },
          'configuration-version': { data: { type: 'configuration-versions', id: cv } },
        },
      },
    });
    expect(created.status, created.text).toBe(201);
    const traced = (created.json as Doc).data.id;
    const logOf = async (run: string) => {
      const plan = await host.api('GET', `/runs/${run}/plan`);
      const url = String((plan.json as Doc).data.attributes['log-read-url']);
      return (await httpsGet(url, readFileSync(host.caFile, 'utf8'))).body;
    };
    await eventually(async () => {
      const r = await host.api('GET', `/runs/${traced}`);
      const status = String((r.json as Doc).data.attributes.status);
      return ['planned_and_finished', 'errored'].includes(status) ? status : undefined;
    }, 60_000);
    const log = await logOf(traced);
    expect(log).toMatch(/\[TRACE\]/);
    expect(log).toContain('Plan: 1 to add');
    const runs = await host.api('GET', `/workspaces/${id}/runs?filter%5Boperation%5D=plan_only`);
    const untraced = (runs.json as { data: { id: string }[] }).data
      .map((r) => r.id)
      .filter((r) => r !== traced);
    expect(untraced.length).toBe(1);
    expect(await logOf(untraced[0]!)).not.toMatch(/\[TRACE\]/);
  });
});

describe('state push -force of a lower serial', () => {
  /** A local-execution workspace with three applies; returns the state after the first. */
  async function history(host: TerraformHost, name: string, block: string) {
    const res = await host.api('POST', '/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name, 'execution-mode': 'local' } },
    });
    expect(res.status, res.text).toBe(201);
    const ws = (res.json as Doc).data.id;
    const config = (input: string) =>
      `${block}\nresource "terraform_data" "a" {\n  input = "${input}"\n}\n`;
    const work = new TerraformWorkdir(host, { files: { 'main.tf': config('one') } });
    ok(await work.run(['init', '-input=false', '-no-color']));
    ok(await work.run(['apply', '-auto-approve', '-input=false', '-no-color']));
    const old = await work.run(['state', 'pull']);
    ok(old);
    work.write('old.tfstate', old.stdout);
    for (const input of ['two', 'three']) {
      work.write('main.tf', config(input));
      ok(await work.run(['apply', '-auto-approve', '-input=false', '-no-color']));
    }
    const serial = async () => {
      const sv = await host.api('GET', `/workspaces/${ws}/current-state-version`);
      return Number((sv.json as Doc).data.attributes.serial);
    };
    return { work, serial, old: JSON.parse(old.stdout) as { serial: number } };
  }

  it('cloud block: terraform sends force false, and the lower serial is refused with 409 as by HCP Terraform', async () => {
    const host = terraformHost();
    const { work, serial, old } = await history(
      host,
      'push-cloud',
      cloudBlock(host, 'acme', 'push-cloud'),
    );
    const before = await serial();
    expect(old.serial + 1).toBeLessThan(before);
    const pushed = await work.run(['state', 'push', '-force', 'old.tfstate']);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toMatch(/conflict/i);
    expect(pushed.stderr).toMatch(/lower than the current state's serial/);
    expect(await serial()).toBe(before);
  });

  it('backend "remote": terraform sends force true, and the older state becomes current', async () => {
    const host = terraformHost();
    const { work, serial, old } = await history(
      host,
      'push-remote',
      remoteBackendBlock(host, 'acme', 'push-remote'),
    );
    const before = await serial();
    ok(await work.run(['state', 'push', '-force', 'old.tfstate']));
    expect(await serial()).toBeLessThan(before);
    const pulled = await work.run(['state', 'pull']);
    ok(pulled);
    expect(pulled.stdout).toMatch(/"input": \{\s*"value": "one"/);
    expect(old.serial).toBeGreaterThan(0);
  });
});
