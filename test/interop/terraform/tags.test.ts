import { describe, expect, it } from 'vitest';
import { TerraformWorkdir, useTerraformHost } from '../../support/terraform.js';

/** `workspaces { tags = [...] }`: the CLI finds, creates and tags workspaces by tag. */

const terraformHost = useTerraformHost((h) => h.organization('acme'));

const taggedBlock = (hostname: string) => `terraform {
  cloud {
    hostname     = "${hostname}"
    organization = "acme"
    workspaces {
      tags = ["app"]
    }
  }
}

resource "terraform_data" "a" {
  input = "one"
}
`;

type List = { data: { attributes: { name: string; 'tag-names': string[] } }[] };

describe('cloud block with workspace tags', () => {
  it('lists the tagged workspaces, creates a new one with the tag, and applies in it', async () => {
    const host = terraformHost();
    const created = await host.api('POST', '/organizations/acme/workspaces', {
      data: {
        type: 'workspaces',
        attributes: { name: 'app-one' },
        relationships: { tags: { data: [{ type: 'tags', attributes: { name: 'app' } }] } },
      },
    });
    expect(created.status, created.text).toBe(201);
    const work = new TerraformWorkdir(host, { files: { 'main.tf': taggedBlock(host.hostname) } });
    const init = await work.run(['init', '-input=false', '-no-color'], {
      env: { TF_WORKSPACE: 'app-one' },
    });
    expect(init.code, init.stdout + init.stderr).toBe(0);
    const list = await work.run(['workspace', 'list', '-no-color'], {
      env: { TF_WORKSPACE: 'app-one' },
    });
    expect(list.stdout).toMatch(/app-one/);

    const made = await work.run(['workspace', 'new', '-no-color', 'app-two']);
    expect(made.code, made.stdout + made.stderr).toBe(0);
    const tagged = await host.api('GET', '/organizations/acme/workspaces?search%5Btags%5D=app');
    expect((tagged.json as List).data.map((w) => w.attributes.name).sort()).toEqual([
      'app-one',
      'app-two',
    ]);
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(apply.code, apply.stdout + apply.stderr).toBe(0);
    const two = await host.api('GET', '/organizations/acme/workspaces/app-two');
    const rel = (two.json as { data: { relationships: Record<string, { data: unknown }> } }).data
      .relationships;
    expect(rel['current-state-version']?.data).not.toBeNull();
  });
});
