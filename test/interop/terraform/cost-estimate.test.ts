import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cloudBlock, useTerraformHost, TerraformWorkdir } from '../../support/terraform.js';

/**
 * The CLI's "Cost Estimation" section: it follows a run's `cost-estimate` relationship after the
 * plan. The data directory's price table prices `terraform_data` (no provider to install).
 */

const terraformHost = useTerraformHost(async (h) => {
  writeFileSync(
    join(h.daemon.dataDir, 'prices.json'),
    JSON.stringify({ resources: { terraform_data: { monthly: 12.5 } } }),
  );
  await h.organization('priced');
  const org = await h.api('PATCH', '/organizations/priced', {
    data: { type: 'organizations', attributes: { 'cost-estimation-enabled': true } },
  });
  expect(org.status, org.text).toBe(200);
  const ws = await h.api('POST', '/organizations/priced/workspaces', {
    data: { type: 'workspaces', attributes: { name: 'estimated', 'execution-engine': 'builtin' } },
  });
  expect(ws.status, ws.text).toBe(201);
});

describe('cost estimation through the cloud block', () => {
  it('terraform plan prints the run cost estimate', async () => {
    const host = terraformHost();
    const main = `${cloudBlock(host, 'priced', 'estimated')}
resource "terraform_data" "a" {
  input = "one"
}

resource "terraform_data" "b" {
  input = "two"
}
`;
    const work = new TerraformWorkdir(host, { files: { 'main.tf': main } });
    const init = await work.run(['init', '-input=false', '-no-color']);
    expect(init.code, `${init.stdout}\n${init.stderr}`).toBe(0);
    const plan = await work.run(['plan', '-input=false', '-no-color']);
    expect(plan.code, `${plan.stdout}\n${plan.stderr}`).toBe(0);
    expect(plan.stdout).toMatch(/2 to add/);
    expect(plan.stdout).toMatch(/Cost Estimation:/);
    expect(plan.stdout).toMatch(/Resources: 2 of 2 estimated/);
    expect(plan.stdout).toMatch(/\$25\.00\/mo \+\$25\.00/);
  });
});
