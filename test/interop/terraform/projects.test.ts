import { describe, expect, it } from 'vitest';
import { TerraformWorkdir, useTerraformHost } from '../../support/terraform.js';

/**
 * Projects with the real CLI: `workspaces { project = "…" }` in the cloud block and
 * `TF_CLOUD_PROJECT`. Before Keel served projects, `terraform init` with either panicked with a nil
 * pointer in the CLI's cloud backend (the project lookup answered 404). A project that does not
 * exist is made by the CLI itself before it makes the workspace.
 */

const terraformHost = useTerraformHost((h) => h.organization('acme'));

const block = (hostname: string, workspaces: string) => `terraform {
  cloud {
    hostname     = "${hostname}"
    organization = "acme"
    workspaces {
      ${workspaces}
    }
  }
}

resource "terraform_data" "a" {
  input = "one"
}
`;

type Workspace = {
  data: { id: string; relationships: { project: { data: { id: string } | null } } };
};
type Projects = { data: { id: string; attributes: { name: string } }[] };

describe('cloud block with a project', () => {
  it('init creates the named workspace in the named project, and apply runs there', async () => {
    const host = terraformHost();
    const made = await host.api('POST', '/organizations/acme/projects', {
      data: { type: 'projects', attributes: { name: 'platform' } },
    });
    expect(made.status, made.text).toBe(201);
    const projectId = (made.json as { data: { id: string } }).data.id;

    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': block(host.hostname, 'project = "platform"\n      name = "net"') },
    });
    const init = await work.run(['init', '-input=false', '-no-color']);
    expect(init.stdout + init.stderr).not.toMatch(/panic/);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    const ws = await host.api('GET', '/organizations/acme/workspaces/net');
    expect(ws.status, ws.text).toBe(200);
    expect((ws.json as Workspace).data.relationships.project.data?.id).toBe(projectId);

    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(apply.code, apply.stdout + apply.stderr).toBe(0);
  });

  it('TF_CLOUD_PROJECT names the project a new workspace goes to', async () => {
    const host = terraformHost();
    const made = await host.api('POST', '/organizations/acme/projects', {
      data: { type: 'projects', attributes: { name: 'data' } },
    });
    expect(made.status, made.text).toBe(201);
    const projectId = (made.json as { data: { id: string } }).data.id;
    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': block(host.hostname, 'name = "warehouse"') },
    });
    const init = await work.run(['init', '-input=false', '-no-color'], {
      env: { TF_CLOUD_PROJECT: 'data' },
    });
    expect(init.stdout + init.stderr).not.toMatch(/panic/);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    const ws = await host.api('GET', '/organizations/acme/workspaces/warehouse');
    expect((ws.json as Workspace).data.relationships.project.data?.id).toBe(projectId);
  });

  it('without a project a new workspace goes to the default project', async () => {
    const host = terraformHost();
    const list = await host.api('GET', '/organizations/acme/projects');
    expect(list.status, list.text).toBe(200);
    const fallback = (list.json as Projects).data.find(
      (p) => p.attributes.name === 'Default Project',
    );
    expect(fallback).toBeDefined();
    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': block(host.hostname, 'name = "plain"') },
    });
    const init = await work.run(['init', '-input=false', '-no-color']);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    const ws = await host.api('GET', '/organizations/acme/workspaces/plain');
    expect((ws.json as Workspace).data.relationships.project.data?.id).toBe(fallback!.id);
  });

  it('a project that does not exist is made by init (as the CLI does), the workspace in it', async () => {
    const host = terraformHost();
    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': block(host.hostname, 'project = "new-team"\n      name = "fresh"') },
    });
    const init = await work.run(['init', '-input=false', '-no-color']);
    expect(init.stdout + init.stderr).not.toMatch(/panic/);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    const list = await host.api('GET', '/organizations/acme/projects?filter%5Bnames%5D=new-team');
    const made = (list.json as Projects).data;
    expect(made.map((p) => p.attributes.name)).toEqual(['new-team']);
    const ws = await host.api('GET', '/organizations/acme/workspaces/fresh');
    expect((ws.json as Workspace).data.relationships.project.data?.id).toBe(made[0]!.id);
  });
});
