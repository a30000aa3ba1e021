import { describe, expect, it } from 'vitest';
import { plan } from '../../support/builtin-driver.js';

/**
 * The builtin engine refuses at plan time what it does not model exactly (issue 25), naming the
 * construct and pointing at the command engine. The differential corpus
 * (`test/interop/terraform/builtin-corpus.test.ts`) shows against the real terraform that what it
 * does not refuse it plans as terraform does; this is the fast list of what it refuses.
 */

const data = (body: string) => `resource "terraform_data" "a" {\n${body}\n}\n`;

const REFUSED: [construct: string, mainTf: string, named: string][] = [
  [
    'moved',
    `${data('')}moved {\n  from = terraform_data.x\n  to = terraform_data.a\n}\n`,
    'moved blocks',
  ],
  ['removed', 'removed {\n  from = terraform_data.a\n}\n', 'removed blocks'],
  [
    'check',
    `check "c" {\n  assert {\n    condition = true\n    error_message = "x"\n  }\n}\n`,
    'check blocks',
  ],
  ['module', 'module "m" {\n  source = "./m"\n}\n', 'module calls'],
  ['data', 'data "terraform_remote_state" "r" {\n  backend = "local"\n}\n', 'data sources'],
  [
    'prevent_destroy',
    data('  lifecycle {\n    prevent_destroy = true\n  }'),
    'lifecycle prevent_destroy',
  ],
  [
    'ignore_changes',
    data('  lifecycle {\n    ignore_changes = [input]\n  }'),
    'lifecycle ignore_changes',
  ],
  [
    'create_before_destroy',
    data('  lifecycle {\n    create_before_destroy = true\n  }'),
    'lifecycle create_before_destroy',
  ],
  [
    'replace_triggered_by',
    data('  lifecycle {\n    replace_triggered_by = [terraform_data.b]\n  }'),
    'lifecycle replace_triggered_by',
  ],
  [
    'precondition',
    data(
      '  lifecycle {\n    precondition {\n      condition = true\n      error_message = "x"\n    }\n  }',
    ),
    'lifecycle precondition',
  ],
  [
    'provisioner',
    data('  provisioner "local-exec" {\n    command = "true"\n  }'),
    'provisioner blocks',
  ],
  ['provider', data('  provider = terraform'), 'the provider meta-argument'],
  [
    'validation',
    `variable "v" {\n  default = "x"\n  validation {\n    condition = true\n    error_message = "x"\n  }\n}\n`,
    'the validation argument of a variable',
  ],
  [
    'a collection type',
    'variable "v" {\n  type = list(string)\n  default = []\n}\n',
    'the type constraint list(string)',
  ],
  [
    'an output precondition',
    `output "o" {\n  value = 1\n  precondition {\n    condition = true\n    error_message = "x"\n  }\n}\n`,
    'the precondition argument of an output',
  ],
  ['an unmodelled function', data('  input = format("%s", "x")'), 'the function format'],
  ['division', data('  input = 6 / 3'), 'the operator or symbol "/"'],
  [
    'a splat',
    `${data('  count = 1')}resource "terraform_data" "b" {\n  input = terraform_data.a[*].id\n}\n`,
    'splat expressions',
  ],
  ['a template directive', data('  input = "%{if true}x%{endif}"'), 'the template directives'],
  [
    'importing a terraform_data',
    `${data('')}import {\n  to = terraform_data.a\n  id = "x"\n}\n`,
    'importing a terraform_data resource',
  ],
  [
    'a whole number past 2^53',
    data('  input = { account = 12345678901234567890 }'),
    'whole numbers past 2^53',
  ],
  [
    'a whole number past 2^53 in an expression',
    data('  input = 9007199254740993 + 0'),
    'whole numbers past 2^53',
  ],
  [
    'a typed null reaching a terraform_data',
    `variable "v" {\n  type = string\n  default = null\n}\nlocals {\n  l = var.v\n}\n${data('  input = local.l')}`,
    'a null value of a variable with a type constraint (var.v: terraform keeps its type string)',
  ],
  [
    'a conditional choosing a typed null',
    data('  input = true ? null : "x"'),
    'a conditional choosing null against a value',
  ],
  [
    'an import for_each',
    `import {\n  for_each = { a = "i-1" }\n  to = aws_instance.web[each.key]\n  id = each.value\n}\n`,
    'the for_each argument of an import block',
  ],
  [
    'an import provider',
    `import {\n  provider = aws.east\n  to = aws_instance.web\n  id = "i-1"\n}\n`,
    'the provider argument of an import block',
  ],
  [
    'a sensitive variable in terraform_data',
    `variable "s" {\n  default = "x"\n  sensitive = true\n}\n${data('  input = var.s')}`,
    'sensitive variables in resource arguments',
  ],
];

describe('the builtin engine refuses what it does not model', () => {
  it.each(REFUSED)('%s', async (_construct, mainTf, named) => {
    const { result, text } = await plan({ files: { 'main.tf': mainTf } });
    expect(result.status).toBe('errored');
    expect(text).toContain('Error: Unsupported by the builtin engine');
    expect(text).toContain(`does not model ${named}`);
    expect(text).toContain('use the command engine');
  });
});

describe('a run flag the builtin engine cannot honour', () => {
  it('debugging-mode fails the plan, naming it: there is no terraform whose trace it would log', async () => {
    const { result, text } = await plan({
      files: { 'main.tf': data('  input = "x"') },
      flags: { debuggingMode: true },
    });
    expect(result.status).toBe('errored');
    expect(text).toContain('Error: Unsupported by the builtin engine: debugging-mode');
    expect(text).toContain('use the command engine');
  });
});

describe("the terraform block, as terraform reads it at the builtin engine's version (1.9.8)", () => {
  const required = (c: string) =>
    `terraform {\n  required_version = ${JSON.stringify(c)}\n}\n${data('  input = "x"')}`;

  it.each([
    ['>= 1.10', 'Unsupported Terraform Core version', 'does not support Terraform version 1.9.8'],
    ['~> 1.9.9', 'Unsupported Terraform Core version', 'required_version = "~> 1.9.9"'],
    ['~> banana', 'Invalid version constraint', 'does not use correct version constraint syntax'],
    ['>= 1.9.0-rc1', 'Invalid required_version constraint', 'not supported: >= 1.9.0-rc1'],
  ])('%s fails the plan: %s', async (constraint, summary, detail) => {
    const { result, text } = await plan({ files: { 'main.tf': required(constraint) } });
    expect(result.status).toBe('errored');
    expect(text).toContain(`Error: ${summary}`);
    expect(text).toContain('on main.tf line 2, in terraform:');
    expect(text).toContain(detail);
  });

  it.each(['~> 1.9', '~> 1.9.8', '>= 1.0, < 1.10', '1.9.8+build', '!= 1.9.7'])(
    '%s plans',
    async (constraint) => {
      const { result } = await plan({ files: { 'main.tf': required(constraint) } });
      expect(result.status).toBe('finished');
    },
  );

  it('refuses a variable in required_version and any experiment, as terraform does', async () => {
    const variable = await plan({
      files: { 'main.tf': `terraform {\n  required_version = var.v\n}\n${data('')}` },
    });
    expect(variable.text).toContain('Error: Variables not allowed');
    const experiments = await plan({
      files: { 'main.tf': `terraform {\n  experiments = [x]\n}\n${data('')}` },
    });
    expect(experiments.text).toContain('Error: Module uses experimental features');
  });
});

describe('numbers the builtin engine cannot carry exactly', () => {
  it('are refused in variable files and in run variables too', async () => {
    const main = `variable "n" {\n  default = 1\n}\n${data('  input = var.n')}`;
    const file = await plan({
      files: { 'main.tf': main, 'terraform.tfvars': 'n = 12345678901234567890\n' },
    });
    expect(file.text).toContain('does not model whole numbers past 2^53');
    const run = await plan({
      files: { 'main.tf': main },
      vars: [{ key: 'n', value: '-9007199254740993' }],
    });
    expect(run.text).toContain('does not model whole numbers past 2^53');
    // Up to 2^53 they are exact, and planned.
    const safe = await plan({
      files: { 'main.tf': main },
      vars: [{ key: 'n', value: '9007199254740991' }],
    });
    expect(safe.result.status).toBe('finished');
  });
});

describe('a typed variable that is null but reaches no terraform_data', () => {
  it('plans: only a resource records the type terraform keeps', async () => {
    const { result } = await plan({
      files: {
        'main.tf': `variable "v" {\n  type = string\n  default = null\n}\n${data('  input = "x"')}output "o" {\n  value = var.v\n}\n`,
      },
    });
    expect(result.status).toBe('finished');
  });
});
