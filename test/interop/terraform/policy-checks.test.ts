import { describe, expect, it } from 'vitest';
import { cloudBlock, TerraformWorkdir, useTerraformHost } from '../../support/terraform.js';

/**
 * Issue 25, finding 3: policy checks as the terraform CLI shows them. After the plan it follows the
 * run's `policy-checks` relationship, prints each check's output under "Organization Policy
 * Check:", fails `terraform plan` on a soft failure, and on `terraform apply` asks whether to
 * override it; answering `override` overrides it and the apply goes on.
 */

const terraformHost = useTerraformHost(async (h) => {
  await h.organization('governed');
  const ws = await h.api('POST', '/organizations/governed/workspaces', {
    data: { type: 'workspaces', attributes: { name: 'checked', 'execution-engine': 'builtin' } },
  });
  expect(ws.status, ws.text).toBe(201);
  const wsId = (ws.json as { data: { id: string } }).data.id;
  const set = await h.api('POST', '/organizations/governed/policy-sets', {
    data: {
      type: 'policy-sets',
      attributes: { name: 'guardrails' },
      relationships: { workspaces: { data: [{ id: wsId, type: 'workspaces' }] } },
    },
  });
  expect(set.status, set.text).toBe(201);
  const setId = (set.json as { data: { id: string } }).data.id;
  const policy = await h.api('POST', '/organizations/governed/policies', {
    data: {
      type: 'policies',
      attributes: {
        name: 'no-new-resources',
        description: 'nothing may be created without a review',
        query: '$count(resource_changes["create" in change.actions]) = 0',
        'enforcement-level': 'soft-mandatory',
      },
      relationships: { 'policy-sets': { data: [{ id: setId, type: 'policy-sets' }] } },
    },
  });
  expect(policy.status, policy.text).toBe(201);
});

const config = (host: ReturnType<typeof terraformHost>, input: string) =>
  `${cloudBlock(host, 'governed', 'checked')}
resource "terraform_data" "a" {
  input = "${input}"
}
`;

describe('a soft-mandatory policy that fails', () => {
  it('terraform plan shows the check and fails; terraform apply asks to override, and applies', async () => {
    const host = terraformHost();
    const work = new TerraformWorkdir(host, { files: { 'main.tf': config(host, 'one') } });
    const init = await work.run(['init', '-input=false', '-no-color']);
    expect(init.code, `${init.stdout}\n${init.stderr}`).toBe(0);

    const plan = await work.run(['plan', '-input=false', '-no-color']);
    const planOut = `${plan.stdout}\n${plan.stderr}`;
    expect(plan.code, planOut).toBe(1);
    expect(planOut).toContain('Organization Policy Check:');
    expect(planOut).toContain('no-new-resources');
    expect(planOut).toContain('soft failed');

    const apply = work.start(['apply', '-no-color']);
    await apply.waitFor(/Do you want to override the soft failed policy check\?/);
    apply.answer('override');
    await apply.waitFor(/Do you want to perform these actions/);
    apply.answer('yes');
    const done = await apply.done;
    expect(done.code, apply.output()).toBe(0);
    expect(done.stdout).toContain('Apply complete! Resources: 1 added');
  });
});
