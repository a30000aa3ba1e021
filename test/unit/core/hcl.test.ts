import { describe, expect, it } from 'vitest';
import { parseHcl } from '../../../src/core/hcl.js';

// What Keel relies on from its HCL parser (ADR 0011): a replacement must pass this file unchanged.
describe('parseHcl', () => {
  it('turns blocks into arrays of objects keyed by their labels, and keeps literals', async () => {
    const doc = await parseHcl(
      'main.tf',
      `resource "terraform_data" "a" {
  input = "x"
  count = 2
  on    = true
  list  = ["a", 1]
}
path "pki/*" { capabilities = ["read", "list"] }`,
    );
    expect(doc).toEqual({
      resource: { terraform_data: { a: [{ input: 'x', count: 2, on: true, list: ['a', 1] }] } },
      path: { 'pki/*': [{ capabilities: ['read', 'list'] }] },
    });
  });

  it('leaves expressions unevaluated as ${…} strings', async () => {
    const doc = await parseHcl(
      'main.tf',
      `variable "region" { type = string }
output "o" { value = "\${var.region}-x" }
locals { n = var.count + 1 }`,
    );
    expect(doc).toEqual({
      variable: { region: [{ type: '${string}' }] },
      output: { o: [{ value: '${var.region}-x' }] },
      locals: [{ n: '${var.count + 1}' }],
    });
  });

  it('rejects a syntax error with the diagnostic naming file, line and column', async () => {
    await expect(parseHcl('bad.tf', 'resource "a" "b" {')).rejects.toThrow(/bad\.tf:1,\d+-\d+: /);
  });
});
