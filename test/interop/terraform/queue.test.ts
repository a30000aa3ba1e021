import { describe, expect, it } from 'vitest';
import { cloudBlock, useTerraformHost, TerraformWorkdir } from '../../support/terraform.js';

/** Two CLIs on one workspace: the second run waits in the queue while its CLI polls it. */

const config = (input: string) => `resource "terraform_data" "a" {
  input = "${input}"
}
`;

const terraformHost = useTerraformHost((h) => h.organization('acme'));

describe('a run that waits for the workspace', () => {
  it('keeps its CLI waiting until the run ahead is confirmed and applied, then applies', async () => {
    const host = terraformHost();
    const block = cloudBlock(host, 'acme', 'shared');
    const first = new TerraformWorkdir(host, {
      files: { 'main.tf': `${block}\n${config('one')}` },
    });
    const second = new TerraformWorkdir(host, {
      files: { 'main.tf': `${block}\n${config('two')}` },
    });
    const init = await first.run(['init', '-input=false', '-no-color']);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    expect((await second.run(['init', '-input=false', '-no-color'])).code).toBe(0);

    // the first apply plans and waits for its confirmation, holding the workspace
    const a = first.start(['apply', '-no-color']);
    await a.waitFor(/Enter a value:/, 20_000);
    // the second one's run waits in the queue behind it; its CLI polls and keeps waiting
    const b = second.start(['apply', '-auto-approve', '-input=false', '-no-color']);
    await b.waitFor(/Waiting for 1 run\(s\) to finish before being queued/, 20_000);
    const queue = await host.api('GET', '/organizations/acme/runs/queue');
    expect(queue.status, queue.text).toBe(200);
    a.answer('yes');
    const aDone = await a.done;
    expect(aDone.code, aDone.stdout + aDone.stderr).toBe(0);
    expect(aDone.stdout).toMatch(/Apply complete! Resources: 1 added/);
    const bDone = await b.done;
    expect(bDone.code, bDone.stdout + bDone.stderr).toBe(0);
    expect(bDone.stdout).toMatch(/Apply complete! Resources: 0 added, 1 changed/);
  }, 120_000);
});
