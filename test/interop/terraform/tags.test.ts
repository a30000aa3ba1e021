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

  it('with tags as a map: lists by tag binding and creates workspaces with the binding', async () => {
    const host = terraformHost();
    const create = async (name: string) => {
      const res = await host.api('POST', '/organizations/acme/workspaces', {
        data: { type: 'workspaces', attributes: { name } },
      });
      expect(res.status, res.text).toBe(201);
      return (res.json as { data: { id: string } }).data.id;
    };
    const dev = await create('dev-one');
    await create('untagged');
    const bound = await host.api('PATCH', `/workspaces/${dev}/tag-bindings`, {
      data: [{ type: 'tag-bindings', attributes: { key: 'env', value: 'dev' } }],
    });
    expect(bound.status, bound.text).toBe(200);
    const block = taggedBlock(host.hostname).replace('tags = ["app"]', 'tags = { env = "dev" }');
    const work = new TerraformWorkdir(host, { files: { 'main.tf': block } });
    const env = { TF_WORKSPACE: 'dev-one' };
    const init = await work.run(['init', '-input=false', '-no-color'], { env });
    expect(init.code, init.stdout + init.stderr).toBe(0);
    const list = await work.run(['workspace', 'list', '-no-color'], { env });
    expect(list.stdout).toMatch(/dev-one/);
    expect(list.stdout).not.toMatch(/untagged/);
    const made = await work.run(['workspace', 'new', '-no-color', 'dev-two']);
    expect(made.code, made.stdout + made.stderr).toBe(0);
    const two = await host.api('GET', '/organizations/acme/workspaces/dev-two');
    const id = (two.json as { data: { id: string } }).data.id;
    const bindings = await host.api('GET', `/workspaces/${id}/tag-bindings`);
    expect(
      (bindings.json as { data: { attributes: unknown }[] }).data.map((b) => b.attributes),
    ).toEqual([{ key: 'env', value: 'dev' }]);
  });
});
