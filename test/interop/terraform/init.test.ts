import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cloudBlock,
  remoteBackendBlock,
  startTerraformHost,
  TerraformWorkdir,
  type TerraformHost,
} from '../../support/terraform.js';

const CONFIG = `resource "terraform_data" "example" {
  input = "hello"
}
`;

let host: TerraformHost;
beforeAll(async () => {
  host = await startTerraformHost();
  await host.organization('acme');
});
afterAll(async () => host?.stop());

describe('terraform init against Keel (real CLI, HTTPS with the listener CA)', () => {
  it('with a cloud block: discovers the host, creates the workspace, initializes', async () => {
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

  it('with backend "remote": initializes against an existing workspace', async () => {
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
