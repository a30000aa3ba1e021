/**
 * The builtin engine's differential corpus (see `builtin-corpus.test.ts`): two-step
 * configurations of `terraform_data` resources covering what such a configuration can use. Each
 * step is the whole configuration directory at that step.
 */
export interface CorpusCase {
  name: string;
  steps: Record<string, string>[];
}

const main = (text: string): Record<string, string> => ({ 'main.tf': text });
const two = (name: string, first: string, second: string): CorpusCase => ({
  name,
  steps: [main(first), main(second)],
});

const data = (name: string, body: string) => `resource "terraform_data" "${name}" {\n${body}\n}\n`;
const required = (constraint: string) =>
  `terraform {\n  required_version = ${JSON.stringify(constraint)}\n}\n`;

export const CORPUS: CorpusCase[] = [
  // --- resources, arguments and values ------------------------------------------------------
  two('create then update input', data('a', '  input = "one"'), data('a', '  input = "two"')),
  two('no input, then an input', data('a', ''), data('a', '  input = "x"')),
  two('input set to null', data('a', '  input = "x"'), data('a', '  input = null')),
  two('number and bool inputs', data('a', '  input = 3'), data('a', '  input = true')),
  two(
    'nested object and list input',
    data('a', '  input = { name = "web", ports = [80, 443], tags = { env = "prod" } }'),
    data('a', '  input = { name = "web", ports = [80], tags = { env = "dev" } }'),
  ),
  two(
    'triggers_replace change replaces',
    data('a', '  input = "x"\n  triggers_replace = "1"'),
    data('a', '  input = "x"\n  triggers_replace = "2"'),
  ),
  two(
    'triggers_replace unchanged is a no-op',
    data('a', '  triggers_replace = ["a", "b"]'),
    data('a', '  triggers_replace = ["a", "b"]'),
  ),
  two(
    'heredoc input',
    data('a', '  input = <<-EOT\n    line one\n    line two\n  EOT'),
    data('a', '  input = <<-EOT\n    line one\n  EOT'),
  ),
  two(
    'escaped interpolation',
    data('a', '  input = "$${not.a.reference}"'),
    data('a', '  input = "%%{nope}"'),
  ),
  two(
    'resource removed from configuration',
    data('a', '  input = "x"') + data('b', '  input = "y"'),
    data('a', '  input = "x"'),
  ),
  two('resource renamed without moved', data('a', '  input = "x"'), data('b', '  input = "x"')),
  two('everything removed', data('a', '  input = "x"'), '# nothing left\n'),
  two('unsupported argument', data('a', '  input = "x"'), data('a', '  inputs = "x"')),
  // --- count ----------------------------------------------------------------------------------
  two(
    'count two to zero',
    data('a', '  count = 2\n  input = "x"'),
    data('a', '  count = 0\n  input = "x"'),
  ),
  two(
    'count one to three',
    data('a', '  count = 1\n  input = "x"'),
    data('a', '  count = 3\n  input = "x"'),
  ),
  two(
    'count.index in input',
    data('a', '  count = 2\n  input = "item-${count.index}"'),
    data('a', '  count = 3\n  input = "item-${count.index}"'),
  ),
  two(
    'count from a variable',
    'variable "n" {\n  default = 2\n}\n' + data('a', '  count = var.n'),
    'variable "n" {\n  default = 1\n}\n' + data('a', '  count = var.n'),
  ),
  two('no count to count', data('a', '  input = "x"'), data('a', '  count = 1\n  input = "x"')),
  // --- variables, locals, outputs -----------------------------------------------------------
  two(
    'variable default changes',
    'variable "name" {\n  default = "one"\n}\n' + data('a', '  input = var.name'),
    'variable "name" {\n  default = "two"\n}\n' + data('a', '  input = var.name'),
  ),
  two(
    'string template of variables',
    'variable "a" {\n  default = "x"\n}\nvariable "b" {\n  default = "y"\n}\n' +
      data('a', '  input = "${var.a}-${var.b}"'),
    'variable "a" {\n  default = "x"\n}\nvariable "b" {\n  default = "z"\n}\n' +
      data('a', '  input = "${var.a}-${var.b}"'),
  ),
  two(
    'typed string variable from a number',
    'variable "v" {\n  type = string\n  default = 5\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  type = string\n  default = 6\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'list(string) variable',
    'variable "v" {\n  type = list(string)\n  default = ["a", "b"]\n}\n' +
      data('a', '  input = var.v'),
    'variable "v" {\n  type = list(string)\n  default = ["a"]\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'map(string) variable converting numbers',
    'variable "v" {\n  type = map(string)\n  default = { a = 1 }\n}\n' +
      data('a', '  input = var.v'),
    'variable "v" {\n  type = map(string)\n  default = { a = 2 }\n}\n' +
      data('a', '  input = var.v'),
  ),
  two(
    'variable validation',
    'variable "v" {\n  default = "ok"\n  validation {\n    condition     = length(var.v) > 1\n    error_message = "too short"\n  }\n}\n' +
      data('a', '  input = var.v'),
    'variable "v" {\n  default = "x"\n  validation {\n    condition     = length(var.v) > 1\n    error_message = "too short"\n  }\n}\n' +
      data('a', '  input = var.v'),
  ),
  two(
    'sensitive variable',
    'variable "secret" {\n  default = "hunter22"\n  sensitive = true\n}\n' +
      data('a', '  input = var.secret'),
    'variable "secret" {\n  default = "hunter23"\n  sensitive = true\n}\n' +
      data('a', '  input = var.secret'),
  ),
  two(
    'locals chain',
    'locals {\n  env = "dev"\n  name = "web-${local.env}"\n}\n' + data('a', '  input = local.name'),
    'locals {\n  env = "prod"\n  name = "web-${local.env}"\n}\n' +
      data('a', '  input = local.name'),
  ),
  two(
    'outputs added, changed and removed',
    data('a', '  input = "x"') +
      'output "one" {\n  value = "1"\n}\noutput "two" {\n  value = terraform_data.a.input\n}\n',
    data('a', '  input = "y"') + 'output "two" {\n  value = terraform_data.a.input\n}\n',
  ),
  two(
    'output of a computed attribute',
    data('a', '  input = "x"') + 'output "out" {\n  value = terraform_data.a.output\n}\n',
    data('a', '  input = "y"') + 'output "out" {\n  value = terraform_data.a.output\n}\n',
  ),
  two(
    'sensitive output',
    data('a', '  input = "x"') + 'output "s" {\n  value = "shh"\n  sensitive = true\n}\n',
    data('a', '  input = "x"') + 'output "s" {\n  value = "hush"\n  sensitive = true\n}\n',
  ),
  two(
    'number variable from a string',
    'variable "n" {\n  type = number\n  default = "5"\n}\n' + data('a', '  input = var.n'),
    'variable "n" {\n  type = number\n  default = "6"\n}\n' + data('a', '  input = var.n'),
  ),
  two(
    'null default',
    'variable "v" {\n  default = null\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  default = "set"\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'count zero, then two',
    data('a', '  count = 0\n  input = "x"'),
    data('a', '  count = 2\n  input = "x"'),
  ),
  two(
    'heredoc with interpolation',
    'variable "who" {\n  default = "world"\n}\n' +
      data('a', '  input = <<EOT\nhello ${var.who}\nEOT'),
    'variable "who" {\n  default = "there"\n}\n' +
      data('a', '  input = <<EOT\nhello ${var.who}\nEOT'),
  ),
  two(
    'a nested block where an argument belongs',
    data('a', '  input = "x"'),
    data('a', '  input {\n    a = 1\n  }'),
  ),
  // --- references between resources -------------------------------------------------------
  two(
    'reference to another resource',
    data('a', '  input = "x"') + data('b', '  input = terraform_data.a.output'),
    data('a', '  input = "y"') + data('b', '  input = terraform_data.a.output'),
  ),
  two(
    'triggers_replace from another resource',
    data('a', '  input = "x"') + data('b', '  triggers_replace = terraform_data.a.id'),
    data('a', '  input = "x"\n  triggers_replace = "new"') +
      data('b', '  triggers_replace = terraform_data.a.id'),
  ),
  two(
    'depends_on',
    data('a', '  input = "x"') + data('b', '  input = "y"\n  depends_on = [terraform_data.a]'),
    data('a', '  input = "x2"') + data('b', '  input = "y"\n  depends_on = [terraform_data.a]'),
  ),
  two(
    'counted reference by index',
    data('a', '  count = 2\n  input = "x${count.index}"') +
      data('b', '  input = terraform_data.a[1].input'),
    data('a', '  count = 2\n  input = "y${count.index}"') +
      data('b', '  input = terraform_data.a[1].input'),
  ),
  two(
    'local from a resource attribute',
    data('a', '  input = "x"') +
      'locals {\n  out = terraform_data.a.output\n}\noutput "o" {\n  value = local.out\n}\n',
    data('a', '  input = "y"') +
      'locals {\n  out = terraform_data.a.output\n}\noutput "o" {\n  value = local.out\n}\n',
  ),
  two(
    'output of a whole resource',
    data('a', '  input = "x"') + 'output "all" {\n  value = terraform_data.a\n}\n',
    data('a', '  input = "y"') + 'output "all" {\n  value = terraform_data.a\n}\n',
  ),
  two(
    'output of a counted resource list',
    data('a', '  count = 2\n  input = "x${count.index}"') +
      'output "all" {\n  value = terraform_data.a\n}\n',
    data('a', '  count = 1\n  input = "x${count.index}"') +
      'output "all" {\n  value = terraform_data.a\n}\n',
  ),
  // --- expressions ----------------------------------------------------------------------------
  two('function call', data('a', '  input = upper("x")'), data('a', '  input = upper("y")')),
  two(
    'string functions',
    data('a', '  input = "${upper("web")}-${lower("DB")}-${trimspace("  x ")}"'),
    data('a', '  input = join("/", ["a", lower("B")])'),
  ),
  two(
    'length of a string, a list and a map',
    data('a', '  input = [length("four"), length(["a", "b"]), length({ k = 1 })]'),
    data('a', '  input = length("fives")'),
  ),
  two(
    'comparisons and logic',
    'variable "n" {\n  default = 3\n}\n' +
      data('a', '  input = [var.n > 2, var.n == 3, var.n != 3 || !true, 1 <= 1 && 2 >= 3]'),
    'variable "n" {\n  default = 1\n}\n' +
      data('a', '  input = [var.n > 2, var.n == 3, var.n != 3 || !true, 1 <= 1 && 2 >= 3]'),
  ),
  two(
    'equality across types is false',
    data('a', '  input = 1 == "1"'),
    data('a', '  input = "a" == "a"'),
  ),
  two(
    'arithmetic with a variable and a negative number',
    'variable "n" {\n  default = 4\n}\n' +
      data('a', '  count = var.n - 2\n  input = -1 * (count.index + var.n)'),
    'variable "n" {\n  default = 5\n}\n' +
      data('a', '  count = var.n - 2\n  input = -1 * (count.index + var.n)'),
  ),
  two(
    'conditional on an unknown value',
    data('a', '  input = "x"') +
      data('b', '  input = terraform_data.a.output == "x" ? "same" : "other"'),
    data('a', '  input = "y"') +
      data('b', '  input = terraform_data.a.output == "x" ? "same" : "other"'),
  ),
  two(
    'function of an unknown value',
    data('a', '  input = "x"') + data('b', '  input = upper(terraform_data.a.output)'),
    data('a', '  input = "y"') + data('b', '  input = upper(terraform_data.a.output)'),
  ),
  two('division', data('a', '  input = 6 / 3'), data('a', '  input = 7 / 2')),
  two(
    'conditional between types',
    'variable "on" {\n  default = true\n}\n' + data('a', '  input = var.on ? 1 : "one"'),
    'variable "on" {\n  default = false\n}\n' + data('a', '  input = var.on ? 1 : "one"'),
  ),
  two('unicode upper', data('a', '  input = upper("straße")'), data('a', '  input = upper("ǆ")')),
  two(
    'length with a carriage return',
    data('a', '  input = length("a\\r\\nb")'),
    data('a', '  input = length("ab")'),
  ),
  two(
    'conditional',
    'variable "on" {\n  default = true\n}\n' + data('a', '  input = var.on ? "yes" : "no"'),
    'variable "on" {\n  default = false\n}\n' + data('a', '  input = var.on ? "yes" : "no"'),
  ),
  two('arithmetic', data('a', '  input = 1 + 2'), data('a', '  input = 2 * 3')),
  two(
    'splat',
    data('a', '  count = 2\n  input = "x"') + data('b', '  input = terraform_data.a[*].input'),
    data('a', '  count = 1\n  input = "x"') + data('b', '  input = terraform_data.a[*].input'),
  ),
  two(
    'for expression',
    data('a', '  input = [for s in ["a", "b"] : upper(s)]'),
    data('a', '  input = [for s in ["a"] : upper(s)]'),
  ),
  two(
    'for_each over a map',
    data('a', '  for_each = { a = "x", b = "y" }\n  input = "${each.key}=${each.value}"'),
    data('a', '  for_each = { b = "y", c = "z" }\n  input = "${each.key}=${each.value}"'),
  ),
  two(
    'for_each over a set of strings',
    data('a', '  for_each = toset(["a", "b"])\n  input = each.key'),
    data('a', '  for_each = toset(["b"])\n  input = each.key'),
  ),
  two(
    'for_each from a variable map',
    'variable "m" {\n  default = { web = 1, db = 2 }\n}\n' +
      data('a', '  for_each = var.m\n  input = { name = each.key, n = each.value }'),
    'variable "m" {\n  default = { web = 3 }\n}\n' +
      data('a', '  for_each = var.m\n  input = { name = each.key, n = each.value }'),
  ),
  two(
    'reference into a for_each instance',
    data('a', '  for_each = { x = "1", y = "2" }\n  input = each.value') +
      data('b', '  input = terraform_data.a["y"].input'),
    data('a', '  for_each = { x = "1", y = "3" }\n  input = each.value') +
      data('b', '  input = terraform_data.a["y"].input'),
  ),
  two(
    'for_each over a list is an error',
    data('a', '  input = "x"'),
    data('b', '  for_each = ["a"]\n  input = each.value'),
  ),
  two(
    'count to for_each',
    data('a', '  count = 1\n  input = "x"'),
    data('a', '  for_each = { k = "x" }\n  input = each.value'),
  ),
  two(
    'dynamic block',
    data('a', '  input = "x"'),
    data('a', '  dynamic "x" {\n    for_each = [1]\n    content {}\n  }'),
  ),
  // --- lifecycle and refactoring blocks ------------------------------------------------------
  two(
    'moved block',
    data('a', '  input = "x"'),
    data('b', '  input = "x"') +
      'moved {\n  from = terraform_data.a\n  to   = terraform_data.b\n}\n',
  ),
  two(
    'removed block keeping the object',
    data('a', '  input = "x"'),
    'removed {\n  from = terraform_data.a\n  lifecycle {\n    destroy = false\n  }\n}\n',
  ),
  two(
    'import block',
    '# nothing yet\n',
    data('a', '  input = "x"') + 'import {\n  to = terraform_data.a\n  id = "imported"\n}\n',
  ),
  two(
    'prevent_destroy with a replacement',
    data('a', '  triggers_replace = "1"\n  lifecycle {\n    prevent_destroy = true\n  }'),
    data('a', '  triggers_replace = "2"\n  lifecycle {\n    prevent_destroy = true\n  }'),
  ),
  two(
    'ignore_changes',
    data('a', '  input = "x"\n  lifecycle {\n    ignore_changes = [input]\n  }'),
    data('a', '  input = "y"\n  lifecycle {\n    ignore_changes = [input]\n  }'),
  ),
  two(
    'create_before_destroy',
    data('a', '  triggers_replace = "1"\n  lifecycle {\n    create_before_destroy = true\n  }'),
    data('a', '  triggers_replace = "2"\n  lifecycle {\n    create_before_destroy = true\n  }'),
  ),
  two(
    'replace_triggered_by',
    data('a', '  input = "x"') +
      data('b', '  input = "y"\n  lifecycle {\n    replace_triggered_by = [terraform_data.a]\n  }'),
    data('a', '  input = "x2"') +
      data('b', '  input = "y"\n  lifecycle {\n    replace_triggered_by = [terraform_data.a]\n  }'),
  ),
  two(
    'failing precondition',
    data('a', '  input = "x"'),
    data(
      'a',
      '  input = "y"\n  lifecycle {\n    precondition {\n      condition     = false\n      error_message = "no"\n    }\n  }',
    ),
  ),
  two(
    'failing postcondition',
    data('a', '  input = "x"'),
    data(
      'a',
      '  input = "y"\n  lifecycle {\n    postcondition {\n      condition     = self.output == "x"\n      error_message = "no"\n    }\n  }',
    ),
  ),
  two(
    'check block',
    data('a', '  input = "x"'),
    data('a', '  input = "y"') +
      'check "c" {\n  assert {\n    condition     = terraform_data.a.input == "x"\n    error_message = "changed"\n  }\n}\n',
  ),
  two(
    'provisioner',
    data('a', '  input = "x"'),
    data('a', '  input = "y"\n  provisioner "local-exec" {\n    command = "true"\n  }'),
  ),
  // --- files and modules ----------------------------------------------------------------------
  {
    name: 'auto.tfvars and terraform.tfvars',
    steps: [
      {
        'main.tf':
          'variable "a" {}\nvariable "b" {}\n' + data('a', '  input = "${var.a}/${var.b}"'),
        'terraform.tfvars': 'a = "from-tfvars"\nb = "from-tfvars"\n',
        'b.auto.tfvars': 'b = "from-auto"\n',
      },
      {
        'main.tf':
          'variable "a" {}\nvariable "b" {}\n' + data('a', '  input = "${var.a}/${var.b}"'),
        'terraform.tfvars': 'a = "changed"\nb = "from-tfvars"\n',
        'b.auto.tfvars': 'b = "from-auto"\n',
        'c.auto.tfvars': 'b = "later-file-wins"\n',
      },
    ],
  },
  {
    name: 'auto.tfvars.json',
    steps: [
      {
        'main.tf': 'variable "a" {}\n' + data('a', '  input = var.a'),
        'x.auto.tfvars.json': '{"a": "json"}',
      },
      {
        'main.tf': 'variable "a" {}\n' + data('a', '  input = var.a'),
        'x.auto.tfvars.json': '{"a": "json2"}',
      },
    ],
  },
  {
    name: 'several .tf files',
    steps: [
      { 'a.tf': data('a', '  input = "x"'), 'b.tf': data('b', '  input = "y"') },
      { 'a.tf': data('a', '  input = "x"'), 'b.tf': data('b', '  input = "z"') },
    ],
  },
  {
    name: 'module from a local path',
    steps: [
      {
        'main.tf': 'module "m" {\n  source = "./m"\n}\n',
        'm/main.tf': data('a', '  input = "x"'),
      },
      {
        'main.tf': 'module "m" {\n  source = "./m"\n}\n',
        'm/main.tf': data('a', '  input = "y"'),
      },
    ],
  },
  two(
    'terraform block with required_version',
    'terraform {\n  required_version = ">= 1.0"\n}\n' + data('a', '  input = "x"'),
    'terraform {\n  required_version = ">= 1.0"\n}\n' + data('a', '  input = "y"'),
  ),
  two(
    'required_version no version satisfies',
    required('>= 9.0') + data('a', '  input = "x"'),
    required('>= 9.0') + data('a', '  input = "y"'),
  ),
  two(
    'required_version ~> 1, then a range',
    required('~> 1') + data('a', '  input = "x"'),
    required('>= 1.0, < 2.0') + data('a', '  input = "y"'),
  ),
  two(
    'required_version that is not a constraint',
    data('a', '  input = "x"'),
    required('~> banana') + data('a', '  input = "x"'),
  ),
  two(
    'required_version with a prerelease',
    data('a', '  input = "x"'),
    required('>= 1.0.0-beta1') + data('a', '  input = "x"'),
  ),
  two(
    'terraform block with experiments',
    data('a', '  input = "x"'),
    'terraform {\n  experiments = [module_variable_optional_attrs]\n}\n' +
      data('a', '  input = "x"'),
  ),
  two(
    'count and for_each together',
    data('a', '  input = "x"'),
    data('a', '  count = 1\n  for_each = { k = "v" }\n  input = "x"'),
  ),
  two(
    'depends_on an undeclared resource',
    data('a', '  input = "x"'),
    data('a', '  input = "x"\n  depends_on = [terraform_data.ghost]'),
  ),
  two(
    'a local declared in two files',
    data('a', '  input = local.v') + 'locals {\n  v = "x"\n}\n',
    data('a', '  input = local.v') + 'locals {\n  v = "x"\n}\nlocals {\n  v = "y"\n}\n',
  ),
  two(
    'a variable default that does not convert to its type',
    'variable "n" {\n  type = number\n  default = 3\n}\n' + data('a', '  input = var.n'),
    'variable "n" {\n  type = number\n  default = "three"\n}\n' + data('a', '  input = var.n'),
  ),
  two(
    'a number variable default given as a numeric string',
    'variable "n" {\n  type = number\n  default = "3"\n}\n' + data('a', '  input = var.n'),
    'variable "n" {\n  type = number\n  default = "4"\n}\n' + data('a', '  input = var.n'),
  ),
  two(
    'an output declared twice',
    data('a', '  input = "x"') + 'output "o" {\n  value = 1\n}\n',
    data('a', '  input = "x"') + 'output "o" {\n  value = 1\n}\noutput "o" {\n  value = 2\n}\n',
  ),
  two(
    'a variable declared twice in one file',
    'variable "v" {\n  default = "x"\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  default = "x"\n}\nvariable "v" {\n  default = "y"\n}\n' +
      data('a', '  input = var.v'),
  ),
  two(
    'a whole number past 2^53',
    data('a', '  input = 12345678901234567890'),
    data('a', '  input = 9007199254740993'),
  ),
  two('large negatives', data('a', '  input = -3'), data('a', '  input = -9007199254740993')),
  two(
    'string escapes',
    data('a', '  input = "tab\\there \\"quoted\\" back\\\\slash"'),
    data('a', '  input = "caf\\u00e9 \\U0001F600"'),
  ),
  two(
    'heredoc with interpolation and strip markers',
    'variable "v" {\n  default = "x"\n}\n' + data('a', '  input = <<EOT\nvalue ${var.v}\nEOT'),
    'variable "v" {\n  default = "x"\n}\n' + data('a', '  input = "a ${ var.v ~} b"'),
  ),
  two(
    'comments of three kinds',
    '# one\n// two\n/* three */\n' + data('a', '  input = "x" # trailing'),
    '/* a\n   block */\n' + data('a', '  input = "y" // trailing'),
  ),
  two(
    'an object with a key given twice',
    data('a', '  input = { a = 1 }'),
    data('a', '  input = { a = 1, a = 2 }'),
  ),
  two(
    'quoted and unusual object keys',
    data('a', '  input = { "a b" = 1, "c-d" = 2 }'),
    data('a', '  input = { "a b" = 1, "c.d" = 3 }'),
  ),
  two('empty object and tuple', data('a', '  input = {}'), data('a', '  input = []')),
  two(
    'arithmetic inside a template',
    data('a', '  input = "${10 * 3}-${7 - 10}"'),
    data('a', '  input = "${1 + 2}"'),
  ),
  two(
    'a condition on a value unknown until apply',
    data('a', '  input = "x"') + data('b', '  input = terraform_data.a.output == "x" ? 1 : 2'),
    data('a', '  input = "y"') + data('b', '  input = terraform_data.a.output == "x" ? 1 : 2'),
  ),
  two(
    'an index past the end of a counted resource',
    data('a', '  count = 1\n  input = "x"') +
      'output "o" {\n  value = terraform_data.a[0].input\n}\n',
    data('a', '  count = 0\n  input = "x"') +
      'output "o" {\n  value = terraform_data.a[0].input\n}\n',
  ),
  two(
    'a string of numbers compared with a number',
    data('a', '  input = "1" == 1'),
    data('a', '  input = 1 == 1.0'),
  ),
  two(
    'null and bools inside a template',
    data('a', '  input = "b=${true} n=${1 == 2}"') +
      data('b', '  input = "${ null ~}"') +
      data('c', '  input = "$${null} x"'),
    data('a', '  input = "x${null}"'),
  ),
  two(
    'a number compared with a numeric string',
    data('a', '  input = 1 < 2'),
    data('a', '  input = 1 < "2"'),
  ),
  two(
    'null compared and negated',
    data('a', '  input = null == null'),
    data('a', '  input = !null'),
  ),
  two(
    'a count given as a numeric string',
    data('a', '  count = 1\n  input = count.index'),
    data('a', '  count = "2"\n  input = count.index'),
  ),
  two(
    'each.value as an object',
    data('a', '  for_each = { a = { n = 1 } }\n  input = each.value'),
    data('a', '  for_each = { a = { n = 2 }, b = { n = 3 } }\n  input = each.value.n'),
  ),
  two(
    'an output of a whole resource',
    data('a', '  input = "x"') + 'output "o" {\n  value = terraform_data.a\n}\n',
    data('a', '  input = "y"') + 'output "o" {\n  value = terraform_data.a\n}\n',
  ),
  two(
    'an output whose value is null',
    data('a', '  input = "x"') + 'output "o" {\n  value = null\n}\n',
    data('a', '  input = "x"') + 'output "o" {\n  value = "now"\n}\n',
  ),
  two(
    'an output set to null',
    data('a', '  input = "x"') + 'output "o" {\n  value = "now"\n}\n',
    data('a', '  input = "x"') + 'output "o" {\n  value = null\n}\n',
  ),
  two(
    'an output removed and one renamed',
    data('a', '  input = "x"') + 'output "o" {\n  value = 1\n}\noutput "p" {\n  value = 2\n}\n',
    data('a', '  input = "x"') + 'output "q" {\n  value = 2\n}\n',
  ),
  two(
    'an output whose description alone changes',
    data('a', '  input = "x"') + 'output "o" {\n  value = 1\n  description = "one"\n}\n',
    data('a', '  input = "x"') + 'output "o" {\n  value = 1\n  description = "uno"\n}\n',
  ),
  two(
    'a chain of locals, then a cycle',
    'locals {\n  a = "x"\n  b = "${local.a}y"\n  c = "${local.b}z"\n}\n' +
      data('r', '  input = local.c'),
    'locals {\n  a = local.c\n  b = "${local.a}y"\n  c = "${local.b}z"\n}\n' +
      data('r', '  input = local.c'),
  ),
  two(
    'triggers_replace from another resource unknown until apply',
    data('a', '  input = "x"') + data('b', '  triggers_replace = terraform_data.a.output'),
    data('a', '  input = "y"') + data('b', '  triggers_replace = terraform_data.a.output'),
  ),
  {
    name: 'an untyped variable given by terraform.tfvars',
    steps: [
      {
        'main.tf': 'variable "v" {}\n' + data('a', '  input = var.v'),
        'terraform.tfvars': 'v = 3\n',
      },
      {
        'main.tf': 'variable "v" {}\n' + data('a', '  input = var.v'),
        'terraform.tfvars': 'v = true\n',
      },
    ],
  },
  two(
    'a sensitive output of a plain value',
    data('a', '  input = "x"') + 'output "o" {\n  value = "s"\n  sensitive = true\n}\n',
    data('a', '  input = "x"') + 'output "o" {\n  value = "t"\n  sensitive = true\n}\n',
  ),
  two(
    'count from a typed variable given as a string',
    'variable "n" {\n  type = number\n  default = "2"\n}\n' +
      data('a', '  count = var.n\n  input = count.index'),
    'variable "n" {\n  type = number\n  default = "1"\n}\n' +
      data('a', '  count = var.n\n  input = count.index'),
  ),
  two(
    'for_each keys added and removed',
    data('a', '  for_each = { b = 1, a = 2 }\n  input = "${each.key}=${each.value}"'),
    data('a', '  for_each = { a = 2, c = 3 }\n  input = "${each.key}=${each.value}"'),
  ),
  two(
    'count three to one',
    data('a', '  count = 3\n  input = count.index'),
    data('a', '  count = 1\n  input = count.index'),
  ),
  two(
    'depends_on changed alone',
    data('a', '  input = "x"') +
      data('b', '  input = "y"') +
      data('c', '  input = "z"\n  depends_on = [terraform_data.a]'),
    data('a', '  input = "x"') +
      data('b', '  input = "y"') +
      data('c', '  input = "z"\n  depends_on = [terraform_data.b]'),
  ),
  two(
    'null inside an object and mixed tuples',
    data('a', '  input = { a = null, b = [1, "a", true] }'),
    data('a', '  input = { a = "set", b = [null] }'),
  ),
  two(
    'triggers_replace null and back',
    data('a', '  input = "x"\n  triggers_replace = "t"'),
    data('a', '  input = "x"\n  triggers_replace = null'),
  ),
  two(
    'counted resources reading each other',
    data('b', '  count = 2\n  input = count.index') +
      data('a', '  count = 2\n  input = terraform_data.b[count.index].output'),
    data('b', '  count = 2\n  input = count.index + 10') +
      data('a', '  count = 2\n  input = terraform_data.b[count.index].output'),
  ),
  two(
    'a string variable with a null default',
    'variable "v" {\n  type = string\n  default = null\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  type = string\n  default = "x"\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'string functions on a variable',
    'variable "v" {\n  default = "  MiXed  "\n}\n' +
      data('a', '  input = [upper(var.v), lower(var.v), trimspace(var.v), length(var.v)]'),
    'variable "v" {\n  default = ""\n}\n' +
      data('a', '  input = [upper(var.v), length(var.v), join("-", [var.v, "x"])]'),
  ),
  two(
    'an any-typed and an untyped variable with a null default',
    'variable "v" {\n  type = any\n  default = null\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  default = null\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'a conditional choosing null against a string',
    data('a', '  input = false ? null : "x"'),
    data('a', '  input = true ? null : "x"'),
  ),
  two(
    'an untyped variable holding an object',
    'variable "v" {\n  default = { a = 1, b = "x" }\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  default = { a = 2 }\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'a sensitive variable in a sensitive output',
    'variable "s" {\n  default = "secret"\n  sensitive = true\n}\n' +
      data('a', '  input = "x"') +
      'output "o" {\n  value = var.s\n  sensitive = true\n}\n',
    'variable "s" {\n  default = "other"\n  sensitive = true\n}\n' +
      data('a', '  input = "x"') +
      'output "o" {\n  value = var.s\n  sensitive = true\n}\n',
  ),
  two(
    'count zero and the length of the resource',
    data('a', '  count = 0\n  input = "x"') +
      'output "n" {\n  value = length(terraform_data.a)\n}\n',
    data('a', '  count = 2\n  input = "x"') +
      'output "n" {\n  value = length(terraform_data.a)\n}\n',
  ),
  two(
    'for_each over an empty map, then a variable map',
    data('a', '  for_each = {}\n  input = each.value'),
    'variable "m" {\n  default = { x = "1", y = "2" }\n}\n' +
      data('a', '  for_each = var.m\n  input = each.value'),
  ),
  two(
    'for_each resources reading each other by key',
    data('b', '  for_each = { x = 1 }\n  input = each.value') +
      data('a', '  for_each = { x = 1 }\n  input = terraform_data.b[each.key].output'),
    data('b', '  for_each = { x = 2 }\n  input = each.value') +
      data('a', '  for_each = { x = 1 }\n  input = terraform_data.b[each.key].output'),
  ),
  two(
    'an output of a counted instance attribute',
    data('a', '  count = 2\n  input = count.index') +
      'output "o" {\n  value = terraform_data.a[1].input\n}\n',
    data('a', '  count = 2\n  input = count.index * 2') +
      'output "o" {\n  value = terraform_data.a[1].output\n}\n',
  ),
  two(
    'an empty depends_on, then a counted resource without its key',
    data('a', '  input = "x"\n  depends_on = []'),
    data('a', '  count = 1\n  input = "x"') + data('b', '  input = terraform_data.a.input'),
  ),
  two(
    'a key on a resource without count',
    data('a', '  input = "x"'),
    data('a', '  input = "x"') + 'output "o" {\n  value = terraform_data.a[0].input\n}\n',
  ),
  two('count.index outside count', data('a', '  input = "x"'), data('a', '  input = count.index')),
  two('each.key outside for_each', data('a', '  input = "x"'), data('a', '  input = each.key')),
  two(
    'a for_each resource without its key',
    data('a', '  for_each = { k = 1 }\n  input = each.value'),
    data('a', '  for_each = { k = 1 }\n  input = each.value') +
      'output "o" {\n  value = terraform_data.a.input\n}\n',
  ),
  two(
    'small and large decimals written into strings',
    'variable "v" {\n  type = string\n  default = 0.0000001\n}\nvariable "n" {\n  default = 0.00000015\n}\n' +
      data('a', '  input = [var.v, "x${var.n}", "${var.n}"]'),
    'variable "v" {\n  type = string\n  default = 123456789.5\n}\nvariable "n" {\n  default = -0.0000025\n}\n' +
      data('a', '  input = [var.v, "x${var.n}"]'),
  ),
  two(
    'decimals a double does not hold',
    data('a', '  input = 0.30000000000000000001'),
    data('a', '  input = ["${1.00000000000000000001}", 1e400]'),
  ),
  two(
    'decimals a double holds, and long digits in strings and comments',
    data('a', '  input = [0.1, 1.50, 2.5e-7] # 0.30000000000000000001'),
    data('a', '  input = "0.30000000000000000001 ${1.5e-7}"') +
      '/* 1e400 */\noutput "o" {\n  value = <<EOT\n0.30000000000000000001\nEOT\n}\n',
  ),
  {
    name: 'a configuration file in JSON beside one in HCL',
    steps: [
      { 'main.tf': data('a', '  input = "x"') },
      {
        'main.tf': data('a', '  input = "x"'),
        'more.tf.json': '{"resource": {"terraform_data": {"b": {"input": "json"}}}}',
      },
    ],
  },
  {
    name: 'override files',
    steps: [
      { 'main.tf': data('a', '  input = "x"') },
      { 'main.tf': data('a', '  input = "x"'), 'override.tf': data('a', '  input = "over"') },
    ],
  },
  {
    name: 'an override file named with a suffix',
    steps: [
      { 'main.tf': data('a', '  input = "x"') },
      { 'main.tf': data('a', '  input = "x"'), 'a_override.tf': data('a', '  input = "over"') },
    ],
  },
  {
    name: 'a variables file in JSON with a decimal a double does not hold',
    steps: [
      {
        'main.tf': 'variable "n" {}\n' + data('a', '  input = var.n'),
        'x.auto.tfvars.json': '{"n": 0.5}',
      },
      {
        'main.tf': 'variable "n" {}\n' + data('a', '  input = "n=${var.n}"'),
        'x.auto.tfvars.json': '{"n": 0.30000000000000000001}',
      },
    ],
  },
  {
    name: "hidden files and editors' files beside the configuration",
    steps: [
      { 'main.tf': data('a', '  input = "x"'), '.hidden.tf': data('b', '  input = "h"') },
      {
        'main.tf': data('a', '  input = "x"'),
        '#x.tf#': data('c', '  input = "h"'),
        '.y.tf.json': '{}',
        '.override.tf': data('a', '  input = "o"'),
        'main.tf~': data('d', '  input = "h"'),
      },
    ],
  },
  {
    name: 'a hidden variables file',
    steps: [
      {
        'main.tf': 'variable "v" {}\n' + data('a', '  input = var.v'),
        '.h.auto.tfvars': 'v = "hidden"\n',
      },
      {
        'main.tf': 'variable "v" {}\n' + data('a', '  input = var.v'),
        '.h.auto.tfvars': 'v = "again"\n',
      },
    ],
  },
  {
    name: 'line ends of CRLF, and a byte order mark',
    steps: [
      { 'main.tf': data('a', '  input = "x"').replace(/\n/g, '\r\n') },
      { 'main.tf': '\ufeff' + data('a', '  input = "y"') },
    ],
  },
  {
    name: 'locals, a variable, an output and a resource declared again in another block or file',
    steps: [
      {
        'main.tf':
          'locals {\n  a = "x"\n}\nlocals {\n  a = "y"\n}\n' + data('a', '  input = local.a'),
      },
      {
        'main.tf':
          'variable "v" {\n  default = "x"\n}\n' +
          data('a', '  input = var.v') +
          'output "o" {\n  value = 1\n}\n',
        'b.tf':
          'variable "v" {\n  default = "y"\n}\noutput "o" {\n  value = 2\n}\n' +
          data('a', '  input = "y"'),
      },
    ],
  },
  two(
    'count given as a string',
    data('a', '  count = 1\n  input = "x"'),
    data('a', '  count = "2"\n  input = "x"'),
  ),
  two(
    'negative zero in a template, then as a value',
    data('a', '  input = "n${-0}"'),
    data('a', '  input = -0'),
  ),
  two(
    'depends_on naming a variable',
    'variable "v" {\n  default = 1\n}\n' + data('a', '  input = 1'),
    'variable "v" {\n  default = 1\n}\n' + data('a', '  input = 1\n  depends_on = [var.v]'),
  ),
  two(
    'a resource name that is not an identifier',
    data('a', '  input = 1'),
    data('1a', '  input = 1'),
  ),
  two(
    'a reserved variable name',
    data('a', '  input = 1'),
    'variable "count" {\n  default = 1\n}\n' + data('a', '  input = 1'),
  ),
  two(
    'an output name that is not an identifier',
    data('a', '  input = 1'),
    data('a', '  input = 1') + 'output "1o" {\n  value = 1\n}\n',
  ),
  two(
    'count zero and the empty tuple',
    data('a', '  count = 0\n  input = 1') + 'output "o" {\n  value = terraform_data.a\n}\n',
    data('a', '  count = 0\n  input = 1') + 'output "o" {\n  value = length(terraform_data.a)\n}\n',
  ),
  two(
    'escapes in strings',
    data('a', '  input = "a\\nb\\tc\\\\d"'),
    data('a', '  input = "\\u00e9\\r"'),
  ),
  two(
    'bools and numbers in templates',
    data('a', '  input = "${true}-${1.5}-${10}"'),
    data('a', '  input = "${false}"'),
  ),
  two(
    'references to undeclared locals and variables',
    data('a', '  input = local.nope'),
    data('a', '  input = var.nope'),
  ),
  two(
    'indexing a list and a map',
    'variable "v" {\n  default = ["a", "b"]\n  type = any\n}\n' + data('a', '  input = var.v[1]'),
    'variable "v" {\n  default = {k = "a"}\n  type = any\n}\n' + data('a', '  input = var.v["k"]'),
  ),
  two(
    'the legacy index syntax',
    'variable "v" {\n  default = ["a", "b"]\n  type = any\n}\n' + data('a', '  input = var.v.1'),
    'variable "v" {\n  default = {k = "a"}\n  type = any\n}\n' + data('a', '  input = var.v.k'),
  ),
  two(
    'a variable default that refers to another variable',
    'variable "a" {\n  default = "x"\n}\n' + data('a', '  input = var.a'),
    'variable "a" {\n  default = "x"\n}\nvariable "b" {\n  default = var.a\n}\n' +
      data('a', '  input = var.b'),
  ),
  two(
    'a counted resource read without an index',
    data('a', '  count = 1\n  input = 1'),
    data('a', '  count = 1\n  input = 1') + data('b', '  input = terraform_data.a.input'),
  ),
  two(
    'an unknown top-level block',
    data('a', '  input = 1'),
    data('a', '  input = 1') + 'foo {\n}\n',
  ),
  two(
    'an argument at the top level',
    data('a', '  input = 1'),
    data('a', '  input = 1') + 'x = 1\n',
  ),
  two(
    'an argument terraform_data does not have',
    data('a', '  input = 1'),
    data('a', '  input = 1\n  nope = 2'),
  ),
  two(
    'a number default written as text',
    'variable "v" {\n  type = number\n  default = "1"\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  type = number\n  default = "x"\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'a bool default written as text, a string default written as a bool',
    'variable "v" {\n  type = bool\n  default = "true"\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  type = string\n  default = true\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'depends_on naming an attribute',
    data('a', '  input = 1') + data('b', '  input = 2'),
    data('a', '  input = 1') + data('b', '  input = 2\n  depends_on = [terraform_data.a.input]'),
  ),
  two(
    'a variable block with an unknown argument',
    'variable "v" {\n  default = 1\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  default = 1\n  foo = 2\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'an output block with an unknown argument',
    data('a', '  input = 1') + 'output "o" {\n  value = 1\n}\n',
    data('a', '  input = 1') + 'output "o" {\n  value = 1\n  foo = 2\n}\n',
  ),
  two(
    'a locals block with a label',
    data('a', '  input = 1'),
    'locals "x" {\n  a = 1\n}\n' + data('a', '  input = 1'),
  ),
  two(
    'variable defaults that are literal templates',
    'variable "v" {\n  default = "${1}"\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  default = ["a${"b"}", { k = "${true}" }]\n}\n' +
      data('a', '  input = var.v'),
  ),
  two(
    'a resource block with three labels',
    data('a', '  input = 1'),
    'resource "terraform_data" "a" "b" {\n  input = 1\n}\n',
  ),
  two(
    'a variable block without a label',
    data('a', '  input = 1'),
    'variable {\n  default = 1\n}\n' + data('a', '  input = 1'),
  ),
  two(
    'a resource block with one label',
    data('a', '  input = 1'),
    'resource "terraform_data" {\n  input = 1\n}\n',
  ),
  two(
    'a variable description written as a number',
    'variable "v" {\n  default = 1\n  description = "d"\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  default = 1\n  description = 2\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'a variable sensitive written as text that is no bool',
    'variable "v" {\n  default = 1\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  default = 1\n  sensitive = "yes"\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'a quoted type constraint',
    'variable "v" {\n  default = "x"\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  type = "string"\n  default = "x"\n}\n' + data('a', '  input = var.v'),
  ),
  two('count null', data('a', '  input = 1'), data('a', '  count = null\n  input = 1')),
  two(
    'count written as text, then as a bool',
    data('a', '  count = "1"\n  input = 1'),
    data('a', '  count = true\n  input = 1'),
  ),
  two(
    'for_each over a tuple',
    data('a', '  input = 1'),
    data('a', '  for_each = ["a"]\n  input = 1'),
  ),
  two(
    'for_each over an empty map',
    data('a', '  for_each = {}\n  input = 1'),
    data('a', '  for_each = {}\n  input = 2'),
  ),
  two(
    'locals that refer to each other',
    data('a', '  input = 1'),
    'locals {\n  a = local.b\n  b = local.a\n}\n' + data('a', '  input = local.a'),
  ),
  two(
    'resources that refer to each other',
    data('a', '  input = 1'),
    data('a', '  input = terraform_data.b.input') + data('b', '  input = terraform_data.a.input'),
  ),
  two(
    'an output description that is a list',
    data('a', '  input = 1') + 'output "o" {\n  value = 1\n  description = "d"\n}\n',
    data('a', '  input = 1') + 'output "o" {\n  value = 1\n  description = ["x"]\n}\n',
  ),
  two(
    'an output sensitive written as text, then made not sensitive',
    data('a', '  input = 1') + 'output "o" {\n  value = 1\n  sensitive = "true"\n}\n',
    data('a', '  input = 1') + 'output "o" {\n  value = 1\n  sensitive = false\n}\n',
  ),
  two(
    'triggers_replace null, then set',
    data('a', '  input = 1\n  triggers_replace = null'),
    data('a', '  input = 1\n  triggers_replace = "x"'),
  ),
  two(
    'an output made sensitive',
    data('a', '  input = 1') + 'output "o" {\n  value = 1\n}\n',
    data('a', '  input = 1') + 'output "o" {\n  value = 1\n  sensitive = true\n}\n',
  ),
  two(
    'an output made sensitive with a new value',
    data('a', '  input = 1') + 'output "o" {\n  value = 1\n}\n',
    data('a', '  input = 1') + 'output "o" {\n  value = 2\n  sensitive = true\n}\n',
  ),
  two(
    'an output of a whole resource whose input changes',
    data('a', '  input = 1') + 'output "o" {\n  value = terraform_data.a\n}\n',
    data('a', '  input = 2') + 'output "o" {\n  value = terraform_data.a\n}\n',
  ),
  two(
    'backslashes in heredocs',
    data('a', '  input = <<EOT\na\\nb\\tc\nEOT'),
    data('a', '  input = <<-EOT\n    a\\\\b\n    EOT'),
  ),
  two(
    'comments inside an interpolation',
    'variable "v" {\n  default = "x"\n}\n' + data('a', '  input = "${ /* c */ var.v }"'),
    'variable "v" {\n  default = "x"\n}\n' + data('a', '  input = "${var.v # c\n}"'),
  ),
  two(
    'count.index in a for_each resource',
    data('a', '  input = 1'),
    data('a', '  for_each = {k = 1}\n  input = count.index'),
  ),
  two(
    'each.key in a counted resource',
    data('a', '  input = 1'),
    data('a', '  count = 1\n  input = each.key'),
  ),
  two(
    'an attribute terraform_data does not have',
    data('a', '  input = 1') + data('b', '  input = terraform_data.a.input'),
    data('a', '  input = 1') + data('b', '  input = terraform_data.a.nope'),
  ),
  two(
    'an instance index out of range',
    data('a', '  count = 1\n  input = 1') + data('b', '  input = terraform_data.a[0].input'),
    data('a', '  count = 1\n  input = 1') + data('b', '  input = terraform_data.a[5].input'),
  ),
  two(
    'an instance key on a resource without count',
    data('a', '  input = 1') + data('b', '  input = terraform_data.a.input'),
    data('a', '  input = 1') + data('b', '  input = terraform_data.a[0].input'),
  ),
  two(
    'a reference to an undeclared resource',
    data('a', '  input = 1'),
    data('a', '  input = terraform_data.zz.input'),
  ),
  two(
    'a single interpolation keeps its type',
    data('a', '  input = "${1}"'),
    data('a', '  input = ["${true}", "${null}", "${1.5}"]'),
  ),
  two(
    'strings that Unicode normalization changes',
    data('a', '  input = "e\u0301"'),
    data('a', '  input = "\u212b"'),
  ),
  two(
    'a string variable whose default is a list',
    'variable "v" {\n  type = string\n  default = "x"\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  type = string\n  default = ["x"]\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'a number variable whose default is a bool',
    'variable "v" {\n  type = number\n  default = 1\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  type = number\n  default = true\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'a bool variable whose default is "yes"',
    'variable "v" {\n  type = bool\n  default = false\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  type = bool\n  default = "yes"\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'count 1.0, then 1.5',
    data('a', '  count = 1.0\n  input = 1'),
    data('a', '  count = 1.5\n  input = 1'),
  ),
  two(
    'a negative count',
    data('a', '  count = 1\n  input = 1'),
    data('a', '  count = -1\n  input = 1'),
  ),
  two(
    'for_each over a map holding null',
    data('a', '  for_each = {k = "v"}\n  input = each.value'),
    data('a', '  for_each = {k = null}\n  input = each.value'),
  ),
  two(
    'for_each over keys outside ASCII',
    data('a', '  for_each = {"é" = 1}\n  input = each.key'),
    data('a', '  for_each = {"é" = 1, "e" = 2}\n  input = each.key'),
  ),
  two('for_each null', data('a', '  input = 1'), data('a', '  for_each = null\n  input = 1')),
  two(
    'a local reading an undeclared variable',
    data('a', '  input = 1'),
    'locals {\n  a = var.nope\n}\n' + data('a', '  input = local.a'),
  ),
  two(
    'a string variable whose default is a number, then a bool',
    'variable "v" {\n  type = string\n  default = 1.50\n}\n' + data('a', '  input = var.v'),
    'variable "v" {\n  type = string\n  default = false\n}\n' + data('a', '  input = var.v'),
  ),
  two(
    'percent signs in strings',
    data('a', '  input = "100%"'),
    data('a', '  input = "a %%{b} c"'),
  ),
  two('dollar signs in strings', data('a', '  input = "cost $5"'), data('a', '  input = "$$${1}"')),
  two(
    'an object literal with quoted keys',
    data('a', '  input = 1'),
    data('a', '  input = { "a-b" = 1 }'),
  ),
  two('empty collections', data('a', '  input = []'), data('a', '  input = {}')),
  two(
    'nested tuples',
    data('a', '  input = [[1, "a"], [true, null]]'),
    data('a', '  input = [[1, "a"], [true]]'),
  ),
  two(
    'a variable description null, then not known',
    'variable "v" {\n  default = 1\n  description = null\n}\n' + data('a', '  input = var.v'),
    'variable "w" {\n  default = 1\n}\nvariable "v" {\n  default = 1\n  description = "${var.w}"\n}\n' +
      data('a', '  input = var.v'),
  ),
  two('self outside a provisioner', data('a', '  input = "x"'), data('a', '  input = self.id')),
  two('exponent and negative numbers', data('a', '  input = -3'), data('a', '  input = 1e3')),
  two(
    'bool variable from a string default',
    'variable "b" {\n  type = bool\n  default = "true"\n}\n' + data('a', '  input = var.b'),
    'variable "b" {\n  type = bool\n  default = false\n}\n' + data('a', '  input = var.b'),
  ),
  two(
    'string variable from a number default',
    'variable "s" {\n  type = string\n  default = 5\n}\n' + data('a', '  input = var.s'),
    'variable "s" {\n  type = string\n  default = true\n}\n' + data('a', '  input = var.s'),
  ),
  two(
    'terraform_remote_state data source',
    data('a', '  input = "x"'),
    data('a', '  input = "x"') +
      'data "terraform_remote_state" "r" {\n  backend = "local"\n  config = { path = "nowhere.tfstate" }\n  defaults = { v = 1 }\n}\n',
  ),
];
