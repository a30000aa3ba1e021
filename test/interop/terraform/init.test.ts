import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  cloudBlock,
  remoteBackendBlock,
  TerraformWorkdir,
  useTerraformHost,
} from '../../support/terraform.js';

const CONFIG = `resource "terraform_data" "example" {
  input = "hello"
}
`;

const terraformHost = useTerraformHost((host) => host.organization('acme'));

describe('terraform init against Keel (real CLI, HTTPS with the listener CA)', () => {
  it('with a cloud block: discovers the host, creates the workspace, initializes', async () => {
    const host = terraformHost();
    expect((await host.api('GET', '/organizations/acme/workspaces/web')).status).toBe(404);
    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': `${cloudBlock(host, 'acme', 'web')}\n${CONFIG}` },
    });
    const result = await work.run(['init', '-input=false', '-no-color']);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/has been successfully initialized/);
    const ws = await host.api('GET', '/organizations/acme/workspaces/web');
    expect(ws.status).toBe(200);
    expect((ws.json as { data: { attributes: { name: string } } }).data.attributes.name).toBe(
      'web',
    );
  });

  it('names the host by its IP address too (the certificate covers 127.0.0.1)', async () => {
    const host = terraformHost();
    const byIp = host.hostname.replace('localhost', '127.0.0.1');
    const work = new TerraformWorkdir(host, {
      credentials: false,
      files: {
        'main.tf': `${cloudBlock(host, 'acme', 'by-ip').replace(host.hostname, byIp)}\n${CONFIG}`,
      },
    });
    writeFileSync(work.configFile, `credentials "${byIp}" {\n  token = "${host.token}"\n}\n`);
    const result = await work.run(['init', '-input=false', '-no-color']);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect((await host.api('GET', '/organizations/acme/workspaces/by-ip')).status).toBe(200);
  });

  it('with backend "remote": initializes against an existing workspace', async () => {
    const host = terraformHost();
    const created = await host.api('POST', '/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'legacy' } },
    });
    expect(created.status, created.text).toBe(201);
    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': `${remoteBackendBlock(host, 'acme', 'legacy')}\n${CONFIG}` },
    });
    const result = await work.run(['init', '-input=false', '-no-color']);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/Successfully configured the backend "remote"/);
  });

  it('without credentials the host refuses, and without the CA terraform refuses the host', async () => {
    const host = terraformHost();
    const anonymous = new TerraformWorkdir(host, {
      credentials: false,
      files: { 'main.tf': `${cloudBlock(host, 'acme', 'web')}\n${CONFIG}` },
    });
    const refused = await anonymous.run(['init', '-input=false', '-no-color']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/token|credentials|unauthorized/i);

    const untrusting = new TerraformWorkdir(host, {
      files: { 'main.tf': `${cloudBlock(host, 'acme', 'web')}\n${CONFIG}` },
    });
    const x509 = await untrusting.run(['init', '-input=false', '-no-color'], {
      env: { SSL_CERT_FILE: '/dev/null' },
    });
    expect(x509.code).not.toBe(0);
    expect(x509.stderr).toMatch(/x509|certificate/i);
  });
});
