import { parseHcl } from '../../../core/hcl.js';
import type { ConfigFiles, Json } from '../types.js';
import {
  EvaluationError,
  numberText,
  parseReference,
  referencesIn,
  templateParts,
} from './expressions.js';
import { ENGINE_VERSION } from './render.js';
import { TERRAFORM_DATA } from './schemas.js';
import { ConstraintError, parseConstraints, satisfies } from './versions.js';

/** A `resource` block: the raw (unevaluated) attribute values as hcl2json gives them. */
export interface ResourceBlock {
  type: string;
  name: string;
  address: string;
  count: Json | undefined;
  forEach: Json | undefined;
  attributes: Record<string, Json>;
  /** Resource addresses (`type.name`) this block refers to or lists in `depends_on`. */
  dependsOn: string[];
  file: string;
}

export interface VariableBlock {
  name: string;
  default: Json | undefined;
  type: string | null;
  sensitive: boolean;
}

export interface OutputBlock {
  name: string;
  value: Json;
  sensitive: boolean;
}

export interface ImportBlock {
  /** The instance address being imported into, e.g. `aws_s3_bucket.b` or `aws_instance.web[0]`. */
  to: string;
  id: Json;
}

/** The root module of a configuration, as far as the builtin driver understands one. */
export interface ConfigModel {
  variables: Record<string, VariableBlock>;
  locals: Record<string, Json>;
  resources: ResourceBlock[];
  outputs: Record<string, OutputBlock>;
  imports: ImportBlock[];
}

/** The configuration cannot be used: the message is the diagnostic terraform users expect. */
export class ConfigurationError extends Error {
  constructor(
    readonly summary: string,
    readonly detail: string,
  ) {
    super(detail ? `${summary}: ${detail}` : summary);
    this.name = 'ConfigurationError';
  }
}

/**
 * A construct the builtin engine does not model exactly as terraform does: the plan is refused,
 * naming it, rather than made differently from terraform's.
 */
export function unsupported(construct: string, where: string): ConfigurationError {
  return new ConfigurationError(
    `Unsupported by the builtin engine: ${construct}`,
    `the builtin engine does not model ${construct}; use the command engine (a terraform binary, chosen with the workspace's execution-engine) for this configuration (${where})`,
  );
}

/** Meta-arguments of a resource block that are not attributes of the object. */
const META = new Set(['count', 'for_each', 'depends_on', 'lifecycle']);
/** Meta-arguments and nested blocks of a resource block that the builtin engine refuses. */
const REFUSED_META: Record<string, string> = {
  provider: 'the provider meta-argument',
  provisioner: 'provisioner blocks',
  connection: 'connection blocks',
  dynamic: 'dynamic blocks',
};
/** Top-level blocks that carry nothing the builtin driver plans (`terraform` is read below). */
const IGNORED = new Set(['provider']);
/** Top-level blocks the builtin engine refuses, with what they are. */
const REFUSED_BLOCKS: Record<string, string> = {
  moved: 'moved blocks',
  removed: 'removed blocks',
  check: 'check blocks',
  module: 'module calls',
  data: 'data sources',
  ephemeral: 'ephemeral resources',
};
/** The arguments of a variable block it models; `sensitive` only for the values it redacts. */
const VARIABLE_ARGUMENTS = new Set(['default', 'type', 'description', 'sensitive']);
/** The type constraints it converts values to as terraform does. */
const VARIABLE_TYPES = new Set(['string', 'number', 'bool', 'any']);
const OUTPUT_ARGUMENTS = new Set(['value', 'description', 'sensitive']);
/** An import block's arguments it models (`for_each`, `provider`, `identity` it does not). */
const IMPORT_ARGUMENTS = new Set(['to', 'id']);

type Blocks = Record<string, Json>;

function asRecord(value: Json | undefined): Record<string, Json> {
  return value && typeof value === 'object' && !Array.isArray(value) ? value : {};
}

function bodies(value: Json | undefined): Record<string, Json>[] {
  return Array.isArray(value) ? value.map(asRecord) : [];
}

/**
 * The parser's diagnostic (`main.tf:1,31-32: Summary; Detail`) laid out as terraform prints it:
 * the summary, the file and line with its source, then the detail.
 */
function diagnostic(error: unknown, text: string): ConfigurationError {
  const raw = (error instanceof Error ? error.message : String(error))
    .replace(/^parse config: \[/, '')
    .replace(/\]$/, '');
  const match = /^(.+?):(\d+),(\d+)-(\d+): ([^;]+)(?:; (.*))?$/s.exec(raw);
  if (!match) return new ConfigurationError(raw, '');
  const [, file = '', line, , , summary, detail] = match;
  const where = sourceLine(file, text, Number(line));
  return new ConfigurationError(summary ?? raw, detail ? `${where}\n\n${detail}` : where);
}

/**
 * Where a diagnostic points, as terraform prints it: the file and line (and the block it is in),
 * then that line of the source.
 */
function sourceLine(file: string, text: string, line: number, block?: string): string {
  const source = text.split('\n')[line - 1] ?? '';
  return `  on ${file} line ${line}${block === undefined ? '' : `, in ${block}`}:\n  ${String(line).padStart(3)}: ${source}`;
}

/**
 * The HCL converter folds a literal interpolation into its template's text, `null` included: it
 * turns `"x${null}"` into the string `"xnull"`, where terraform refuses to put null in a string.
 * Written as `${(null)}`, the interpolation is kept as an expression, which the builtin engine
 * evaluates as terraform does (a template of that interpolation alone is null; anywhere else in a
 * template it is an error). An escaped `$${null}` is left alone.
 */
const keepNullInterpolations = (text: string): string =>
  text.replace(/(?<!\$)\$\{(~?)\s*null\s*(~?)\}/g, '${$1(null)$2}');

/**
 * HCL the builtin engine reads (configuration files, variable files, HCL variable values): parsed
 * with null interpolations kept, and refusing numbers it cannot carry exactly.
 */
export async function parseConfigHcl(file: string, text: string): Promise<Record<string, Json>> {
  const parsed = (await parseHcl(file, keepNullInterpolations(text))) as Record<string, Json>;
  refuseInexactNumbers(parsed, file);
  refuseInexactLiterals(text, file);
  return parsed;
}

/** A decimal's digits without leading or trailing zeros, and the power of ten of its last digit. */
function decimalValue(text: string): string {
  const m = /^(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (m === null) return text;
  const [, whole = '', fraction = '', exponent = '0'] = m;
  let digits = `${whole}${fraction}`.replace(/^0+/, '');
  let power = Number(exponent) - fraction.length;
  if (digits === '') return '0';
  while (digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    power++;
  }
  return `${digits}e${power}`;
}

/** The double a decimal text (`0.5`, `-1e3`, `.5`) holds, refused when it is not that decimal. */
export function refuseInexactDecimal(text: string, where: string): number {
  const value = Number(text);
  refuseInexactNumbers(value, where);
  const digits = text.replace(/^[+-]/, '');
  if (!Number.isFinite(value) || decimalValue(digits) !== decimalValue(numberText(Math.abs(value))))
    throw unsupported(
      `the number ${text}, which a double does not hold exactly (terraform keeps numbers exactly)`,
      where,
    );
  return value;
}

/**
 * Refuses a number literal whose value a double does not keep: terraform reads a literal exactly
 * (`0.30000000000000000001`, `1e400`), the builtin engine reads it as a double, which would plan
 * and store another number. The HCL converter has already turned literals into doubles, so they
 * are found in the source: outside comments and string text, inside `${…}` too. In JSON (a
 * `.tfvars.json` file), strings hold no interpolation.
 */
export function refuseInexactLiterals(text: string, where: string, json = false): void {
  // What encloses the current position: code, or a quoted string or heredoc whose `${` reopens code.
  const stack: ('code' | 'string' | 'heredoc')[] = ['code'];
  const braces: number[] = [0];
  let heredocEnd: RegExp | undefined;
  for (let i = 0; i < text.length;) {
    const mode = stack[stack.length - 1]!;
    const rest = text.slice(i, i + 3);
    if (mode === 'string' || mode === 'heredoc') {
      if (mode === 'string' && text[i] === '\\') i += 2;
      else if (mode === 'string' && text[i] === '"') {
        stack.pop();
        i++;
      } else if (mode === 'heredoc' && text[i - 1] === '\n' && heredocEnd?.test(text.slice(i))) {
        stack.pop();
        i = text.indexOf('\n', i) < 0 ? text.length : text.indexOf('\n', i);
      } else if (!json && /^[$%]\{/.test(rest) && text[i - 1] !== '$') {
        stack.push('code');
        braces.push(0);
        i += 2;
      } else i++;
      continue;
    }
    const c = text[i]!;
    if (c === '#' || rest.startsWith('//')) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end;
    } else if (rest.startsWith('/*')) {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
    } else if (c === '"') {
      stack.push('string');
      i++;
    } else if (rest.startsWith('<<')) {
      const m = /^<<-?([A-Za-z_][\w-]*)\r?\n/.exec(text.slice(i));
      if (m === null) {
        i += 2;
        continue;
      }
      heredocEnd = new RegExp(`^[ \\t]*${m[1]!}[ \\t]*(\\r?\\n|$)`);
      stack.push('heredoc');
      i += m[0].length;
    } else if (c === '{') {
      braces[braces.length - 1]!++;
      i++;
    } else if (c === '}' && stack.length > 1 && braces[braces.length - 1] === 0) {
      stack.pop();
      braces.pop();
      i++;
    } else if (c === '}') {
      braces[braces.length - 1]!--;
      i++;
    } else if (/\d/.test(c) && !/[\w.]/.test(text[i - 1] ?? '')) {
      const literal = /^\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i))![0];
      refuseInexactDecimal(literal, where);
      i += literal.length;
    } else i++;
  }
}

/**
 * Refuses a number the builtin engine cannot carry exactly. Terraform keeps a number as written
 * (arbitrary precision); here it is a double, exact for whole numbers up to 2^53 only, so a larger
 * one (an account number written as a number, say) would be planned and stored changed.
 */
export function refuseInexactNumbers(value: unknown, where: string): void {
  if (typeof value === 'number') {
    if (Number.isInteger(value) && !Number.isSafeInteger(value))
      throw unsupported('whole numbers past 2^53 (terraform keeps them exactly)', where);
  } else if (Array.isArray(value)) {
    for (const item of value) refuseInexactNumbers(item, where);
  } else if (value !== null && typeof value === 'object') {
    for (const item of Object.values(value)) refuseInexactNumbers(item, where);
  }
}

/**
 * Files terraform's configuration loader passes over, as editors' files: hidden (`.x.tf`), vim
 * backups (`x.tf~`) and emacs autosaves (`#x.tf#`). Variable files are not among them: terraform
 * reads a hidden `.x.auto.tfvars`.
 */
const ignoredByTerraform = (name: string): boolean =>
  name.startsWith('.') || name.endsWith('~') || (name.startsWith('#') && name.endsWith('#'));

/** The root module's files terraform loads: not in a subdirectory, not ignored. */
const rootModulePaths = (files: ConfigFiles): string[] =>
  [...files.keys()].filter((path) => !path.includes('/') && !ignoredByTerraform(path));

/** Root-module `.tf` files in name order (bytewise, as Go sorts a directory), as terraform loads them. */
function rootModuleFiles(files: ConfigFiles): [string, string][] {
  return rootModulePaths(files)
    .filter((path) => path.endsWith('.tf'))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((path) => [path, files.get(path) ?? '']);
}

/** Parses every root-module `.tf` file with the HCL parser and collects the blocks Keel plans. */
export async function loadConfiguration(files: ConfigFiles): Promise<ConfigModel> {
  const model: ConfigModel = { variables: {}, locals: {}, resources: [], outputs: {}, imports: [] };
  for (const path of rootModulePaths(files)) {
    if (/(^|_)override\.tf(\.json)?$/.test(path))
      throw unsupported(
        'override files (override.tf, *_override.tf), which terraform merges',
        path,
      );
    if (path.endsWith('.tf.json'))
      throw unsupported('configuration files in JSON (*.tf.json)', path);
  }
  const tfFiles = rootModuleFiles(files);
  if (tfFiles.length === 0) {
    throw new ConfigurationError(
      'No configuration files',
      'the configuration contains no .tf files in its root directory',
    );
  }
  for (const [file, text] of tfFiles) {
    let blocks: Blocks;
    try {
      blocks = await parseConfigHcl(file, text);
    } catch (error) {
      if (error instanceof ConfigurationError) throw error;
      throw diagnostic(error, text);
    }
    collect(model, blocks, file, text);
  }
  refuseSensitiveFlows(model);
  for (const target of model.imports) {
    parseReference(target.to);
    // Terraform imports a terraform_data object with no input and then plans an update to the
    // configuration; the builtin engine's import adopts the configuration as it is.
    if (target.to.startsWith(`${TERRAFORM_DATA}.`))
      throw unsupported('importing a terraform_data resource', `import to ${target.to}`);
  }
  return model;
}

/**
 * Terraform carries a sensitive variable's mark into every value made from it: the attributes of
 * a resource (`after_sensitive`, the state's `sensitive_attributes`) and outputs, which must then
 * be sensitive themselves. The builtin engine does not track marks through resources, so it
 * refuses a sensitive variable flowing into a `terraform_data` resource, and refuses, as
 * terraform does, an output not marked sensitive that shows one.
 */
function refuseSensitiveFlows(model: ConfigModel): void {
  const marked = new Set(
    Object.values(model.variables)
      .filter((v) => v.sensitive)
      .map((v) => `var.${v.name}`),
  );
  if (marked.size === 0) return;
  const touches = drawingOn(model, marked);
  const block = resourceDrawingOn(model, touches);
  if (block !== undefined)
    throw unsupported(
      'sensitive variables in resource arguments',
      `${block.address}, ${block.file}`,
    );
  for (const output of Object.values(model.outputs))
    if (!output.sensitive && touches(output.value))
      throw new ConfigurationError(
        'Output refers to sensitive values',
        `output "${output.name}": to reduce the risk of accidentally exporting sensitive data that was intended to be only internal, Terraform requires that any root module output containing sensitive data be explicitly marked as sensitive, to confirm your intent.`,
      );
}

/**
 * Whether a value draws on one of `roots` (`var.x`), directly or through locals made from them
 * (`roots` grows with those locals, to a fixed point).
 */
function drawingOn(model: ConfigModel, roots: Set<string>): (value: Json) => boolean {
  const touches = (value: Json): boolean =>
    referencesIn(value).some(
      (r) => typeof r.steps[0] === 'string' && roots.has(`${r.root}.${r.steps[0]}`),
    );
  for (let grew = true; grew;) {
    grew = false;
    for (const [name, value] of Object.entries(model.locals)) {
      if (!roots.has(`local.${name}`) && touches(value)) {
        roots.add(`local.${name}`);
        grew = true;
      }
    }
  }
  return touches;
}

/** The first `terraform_data` resource whose arguments or count draw on what `touches` tells. */
function resourceDrawingOn(
  model: ConfigModel,
  touches: (value: Json) => boolean,
): ResourceBlock | undefined {
  return model.resources.find(
    (block) =>
      block.type === TERRAFORM_DATA && (touches(block.attributes) || touches(block.count ?? null)),
  );
}

/**
 * Terraform keeps the type of a null that comes from a variable with a type constraint (a
 * `terraform_data` argument records `{"value": null, "type": "string"}`); the builtin engine's
 * null has none. Such a null reaching a `terraform_data` is refused, naming the variable.
 */
export function refuseTypedNulls(model: ConfigModel, values: Record<string, Json>): void {
  const nulls = Object.values(model.variables).filter(
    (v) => v.type !== null && v.type !== 'any' && values[v.name] === null,
  );
  for (const v of nulls) {
    const block = resourceDrawingOn(model, drawingOn(model, new Set([`var.${v.name}`])));
    if (block !== undefined)
      throw unsupported(
        `a null value of a variable with a type constraint (var.${v.name}: terraform keeps its type ${v.type})`,
        `${block.address}, ${block.file}`,
      );
  }
}

/**
 * A `terraform` block: its `required_version` is checked against the version the builtin engine
 * plays (`ENGINE_VERSION`), as terraform checks its own, and `experiments` are refused, as a
 * release of terraform refuses them. What it says of providers, a backend or the cloud block
 * concerns nothing the builtin engine runs.
 */
function terraformSettings(body: Record<string, Json>, file: string, text: string): void {
  const where = (key: string) => whereArgument(file, text, 'terraform', key);
  if (body.experiments !== undefined)
    throw new ConfigurationError(
      'Module uses experimental features',
      `${where('experiments')}\n\nExperimental features are not available in a release of terraform, nor in the builtin engine.`,
    );
  const required = body.required_version;
  if (required === undefined) return;
  if (typeof required === 'string' && /\$\{/.test(required))
    throw new ConfigurationError(
      'Variables not allowed',
      `${where('required_version')}\n\nVariables may not be used here.`,
    );
  if (typeof required !== 'string' && typeof required !== 'number')
    throw new ConfigurationError(
      'Invalid version constraint',
      `${where('required_version')}\n\nA string value is required for required_version.`,
    );
  let constraints;
  try {
    constraints = parseConstraints(String(required));
  } catch (error) {
    if (!(error instanceof ConstraintError)) throw error;
    throw error.kind === 'syntax'
      ? new ConfigurationError(
          'Invalid version constraint',
          `${where('required_version')}\n\nThis string does not use correct version constraint syntax.`,
        )
      : new ConfigurationError(
          'Invalid required_version constraint',
          `${where('required_version')}\n\nPrerelease version constraints are not supported: ${error.text}. Remove the prerelease information from the constraint.`,
        );
  }
  if (!satisfies(ENGINE_VERSION, constraints))
    throw new ConfigurationError(
      'Unsupported Terraform Core version',
      `${where('required_version')}\n\nThis configuration does not support Terraform version ${ENGINE_VERSION} (the version the builtin engine plans as). Choose another version constraint, or run the configuration with the command engine and a terraform binary it supports.`,
    );
}

/** Where a diagnostic about `block` points: the first line `test` takes, or the file alone. */
function whereLine(file: string, text: string, block: string, test: (line: string) => boolean) {
  const index = text.split('\n').findIndex(test);
  return index === -1 ? `  on ${file}, in ${block}` : sourceLine(file, text, index + 1, block);
}

/** Where a diagnostic about an argument (`name = …`) of `block` points. */
const whereArgument = (file: string, text: string, block: string, name: string) =>
  whereLine(file, text, block, (l) => new RegExp(`^\\s*${name}\\s*=`).test(l));

/** An HCL identifier, as terraform requires of block names: a letter or `_`, then letters, digits, `_`, `-`. */
const IDENTIFIER = /^[\p{ID_Start}_][\p{ID_Continue}-]*$/u;
/** Variable names terraform reserves for their meaning in module blocks. */
const RESERVED_VARIABLES = new Set([
  'count',
  'depends_on',
  'for_each',
  'lifecycle',
  'locals',
  'provider',
  'providers',
  'source',
  'version',
]);

/**
 * Refuses a block label that is not an identifier (or a reserved variable name), with
 * terraform's diagnostic: `labels` are the block's labels as written, `invalid` the one checked.
 */
function checkLabel(
  summary: string,
  kind: string,
  labels: string[],
  invalid: string,
  where: { file: string; text: string },
): void {
  const reserved = kind === 'variable' && RESERVED_VARIABLES.has(invalid);
  if (IDENTIFIER.test(invalid) && !reserved) return;
  const block = `${kind} ${labels.map((l) => JSON.stringify(l)).join(' ')}`;
  const at = whereLine(where.file, where.text, block, (l) => l.trimStart().startsWith(block));
  throw new ConfigurationError(
    summary,
    `${at}\n\n${
      reserved
        ? `The variable name ${JSON.stringify(invalid)} is reserved due to its special meaning inside module blocks.`
        : 'A name must start with a letter or underscore and may contain only letters, digits, underscores, and dashes.'
    }`,
  );
}

/**
 * A block's argument that terraform decodes before anything is evaluated (a variable's or an
 * output's `description` and `sensitive`), converted as terraform converts it: a bool from
 * `true`/`false` or the text `"true"`, `"false"`, `"1"`, `"0"`; a string from a string, number
 * or bool. Absent, it is undefined.
 */
function staticArgument(
  kind: 'bool' | 'string',
  body: Record<string, Json>,
  name: string,
  block: string,
  where: { file: string; text: string },
): boolean | string | undefined {
  if (!(name in body)) return undefined;
  const value = body[name] ?? null;
  const unsuitable = (reason: string) =>
    new ConfigurationError(
      'Unsuitable value type',
      `${whereArgument(where.file, where.text, block, name)}\n\nUnsuitable value: ${reason}`,
    );
  if (value === null) throw unsuitable('null value is not allowed');
  if (typeof value === 'string' && !isLiteral(value)) throw unsuitable('value must be known');
  if (kind === 'bool') {
    if (typeof value === 'boolean') return value;
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    throw unsuitable('a bool is required');
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return numberText(value);
  if (typeof value === 'boolean') return String(value);
  throw unsuitable('string required');
}

/** The labels each kind of block takes, as terraform names them. */
const LABELS: Record<string, string[]> = {
  resource: ['type', 'name'],
  variable: ['name'],
  output: ['name'],
  locals: [],
  terraform: [],
};

/**
 * Refuses a block with more or fewer labels than its kind takes, with terraform's diagnostic. The
 * HCL converter nests a block's bodies under one object per label, so the labels a block was
 * given are the object keys above its bodies.
 */
function checkLabelCount(kind: string, content: Json, file: string, text: string): void {
  const names = LABELS[kind];
  if (names === undefined) return;
  const walk = (value: Json, labels: string[]): void => {
    if (Array.isArray(value) || labels.length > names.length) {
      if (labels.length === names.length) return;
      const block = [kind, ...labels.map((l) => JSON.stringify(l))].join(' ');
      const at = whereLine(file, text, block, (l) => l.trimStart().startsWith(`${block} {`));
      const list = names.length ? ` (${names.join(', ')})` : '';
      throw labels.length < names.length
        ? new ConfigurationError(
            `Missing name for ${kind}`,
            `${at}\n\nAll ${kind} blocks must have ${names.length} labels${list}.`,
          )
        : new ConfigurationError(
            `Extraneous label for ${kind}`,
            `${at}\n\n${names.length ? `Only ${names.length} labels${list} are expected` : 'No labels are expected'} for ${kind} blocks.`,
          );
    }
    for (const [key, inner] of Object.entries(asRecord(value))) walk(inner, [...labels, key]);
  };
  walk(content, []);
}

function collect(model: ConfigModel, blocks: Blocks, file: string, text: string): void {
  const at = { file, text };
  for (const [kind, content] of Object.entries(blocks)) checkLabelCount(kind, content, file, text);
  for (const [kind, content] of Object.entries(blocks)) {
    if (IGNORED.has(kind)) continue;
    const refused = REFUSED_BLOCKS[kind];
    if (refused !== undefined) throw unsupported(refused, file);
    switch (kind) {
      case 'terraform':
        for (const body of bodies(content)) terraformSettings(body, file, text);
        break;
      case 'resource':
        for (const [type, named] of Object.entries(asRecord(content))) {
          for (const [name, list] of Object.entries(asRecord(named))) {
            checkLabel('Invalid resource type name', 'resource', [type, name], type, at);
            checkLabel('Invalid resource name', 'resource', [type, name], name, at);
            for (const body of bodies(list))
              model.resources.push(resourceBlock(model, type, name, body, file, text));
          }
        }
        break;
      case 'variable':
        for (const [name, list] of Object.entries(asRecord(content))) {
          checkLabel('Invalid variable name', 'variable', [name], name, at);
          const body = bodies(list)[0] ?? {};
          if (model.variables[name] || bodies(list).length > 1)
            throw new ConfigurationError(
              'Duplicate variable declaration',
              `variable "${name}" is declared twice (${file})`,
            );
          for (const key of Object.keys(body))
            if (!VARIABLE_ARGUMENTS.has(key))
              throw unsupported(`the ${key} argument of a variable`, `variable "${name}", ${file}`);
          const block = `variable "${name}"`;
          if (body.default !== undefined && !literalValue(body.default)) {
            const call = /[A-Za-z_][\w:-]*\s*\(/.test(JSON.stringify(body.default));
            throw new ConfigurationError(
              call ? 'Function calls not allowed' : 'Variables not allowed',
              `${whereArgument(file, text, block, 'default')}\n\n${call ? 'Functions may not be called here.' : 'Variables may not be used here.'}`,
            );
          }
          if (typeof body.type === 'string' && !body.type.startsWith('${'))
            throw new ConfigurationError(
              'Invalid quoted type constraints',
              `${whereArgument(file, text, block, 'type')}\n\nTerraform 0.11 and earlier required type constraints to be given in quotes, but that form is now deprecated and will be removed in a future version of Terraform. Remove the quotes around ${JSON.stringify(body.type)}.`,
            );
          const type =
            typeof body.type === 'string' ? body.type.replace(/^\$\{(.*)\}$/, '$1') : null;
          staticArgument('string', body, 'description', block, at);
          if (type !== null && !VARIABLE_TYPES.has(type))
            throw unsupported(`the type constraint ${type}`, `variable "${name}", ${file}`);
          model.variables[name] = {
            name,
            default: body.default,
            type,
            sensitive: staticArgument('bool', body, 'sensitive', block, at) === true,
          };
        }
        break;
      case 'locals':
        for (const body of bodies(content)) {
          for (const [name, value] of Object.entries(body)) {
            if (name in model.locals)
              throw new ConfigurationError(
                'Duplicate local value definition',
                `local.${name} is defined twice (${file})`,
              );
            model.locals[name] = value;
          }
        }
        break;
      case 'output':
        for (const [name, list] of Object.entries(asRecord(content))) {
          checkLabel('Invalid output name', 'output', [name], name, at);
          // Two blocks of one name in one file come as a list of two: the second is a duplicate.
          if (bodies(list).length > 1)
            throw new ConfigurationError(
              'Duplicate output definition',
              `output "${name}" is defined twice (${file})`,
            );
          const body = bodies(list)[0] ?? {};
          for (const key of Object.keys(body))
            if (!OUTPUT_ARGUMENTS.has(key))
              throw unsupported(`the ${key} argument of an output`, `output "${name}", ${file}`);
          if (model.outputs[name])
            throw new ConfigurationError(
              'Duplicate output definition',
              `output "${name}" is defined twice (${file})`,
            );
          if (!('value' in body))
            throw new ConfigurationError(
              'Missing required argument',
              `output "${name}" has no "value" (${file})`,
            );
          staticArgument('string', body, 'description', `output "${name}"`, at);
          model.outputs[name] = {
            name,
            value: body.value ?? null,
            sensitive: staticArgument('bool', body, 'sensitive', `output "${name}"`, at) === true,
          };
        }
        break;
      case 'import':
        for (const body of bodies(content)) {
          for (const key of Object.keys(body))
            if (!IMPORT_ARGUMENTS.has(key))
              throw unsupported(`the ${key} argument of an import block`, file);
          const to = typeof body.to === 'string' ? body.to.replace(/^\$\{(.*)\}$/, '$1') : '';
          if (!to || body.id === undefined)
            throw new ConfigurationError(
              'Invalid import block',
              `an import block needs "to" and "id" (${file})`,
            );
          model.imports.push({ to, id: body.id });
        }
        break;
      default:
        throw new ConfigurationError(
          `Unsupported block type "${kind}"`,
          `blocks of type "${kind}" are not expected here (${file})`,
        );
    }
  }
}

function resourceBlock(
  model: ConfigModel,
  type: string,
  name: string,
  body: Record<string, Json>,
  file: string,
  text: string,
): ResourceBlock {
  const address = `${type}.${name}`;
  if (model.resources.some((r) => r.address === address)) {
    throw new ConfigurationError(
      'Duplicate resource configuration',
      `a ${type} resource named "${name}" was already declared (${file})`,
    );
  }
  for (const [key, what] of Object.entries(REFUSED_META))
    if (key in body) throw unsupported(what, `${address}, ${file}`);
  // The parser gives a nested block and a list of objects the same form: `terraform_data` has
  // no blocks, so a name written as a block (`input { … }`) is refused as terraform refuses it.
  if (type === TERRAFORM_DATA)
    for (const [key, value] of Object.entries(body))
      if (
        !META.has(key) &&
        Array.isArray(value) &&
        value.every((v) => v !== null && typeof v === 'object' && !Array.isArray(v)) &&
        new RegExp(`(^|\\n)\\s*${key}\\s*\\{`).test(text)
      )
        throw new ConfigurationError(
          'Unsupported block type',
          `Blocks of type "${key}" are not expected here. (${address}, ${file})`,
        );
  // An empty lifecycle block changes nothing; any argument in it changes how terraform plans.
  for (const lifecycle of bodies(body.lifecycle))
    for (const key of Object.keys(lifecycle))
      throw unsupported(`lifecycle ${key}`, `${address}, ${file}`);
  const attributes: Record<string, Json> = {};
  for (const [key, value] of Object.entries(body)) if (!META.has(key)) attributes[key] = value;
  const dependsOn = new Set<string>();
  const explicit = Array.isArray(body.depends_on) ? body.depends_on : [];
  for (const item of explicit) {
    // A resource in depends_on is named whole (an instance key at most), never by an attribute.
    const m = /^\$\{\s*([A-Za-z_][\w-]*)\.[A-Za-z_][\w-]*(.*?)\s*\}$/.exec(
      typeof item === 'string' ? item : '',
    );
    if (m && !['var', 'local', 'count', 'each'].includes(m[1]!) && !/^(\[[^\]]*\])?$/.test(m[2]!))
      throw new ConfigurationError(
        'Invalid depends_on reference',
        `${whereArgument(file, text, address, 'depends_on')}\n\nReferences in depends_on must be to a whole object (resource, etc), not to an attribute of an object.`,
      );
  }
  try {
    for (const ref of [
      ...referencesIn(attributes),
      ...referencesIn(body.count ?? null),
      ...referencesIn(body.for_each ?? null),
      ...referencesIn(explicit),
    ]) {
      if (
        ref.root !== 'var' &&
        ref.root !== 'local' &&
        ref.root !== 'count' &&
        ref.root !== 'each' &&
        typeof ref.steps[0] === 'string'
      ) {
        dependsOn.add(`${ref.root}.${ref.steps[0]}`);
      }
    }
  } catch (error) {
    if (error instanceof EvaluationError)
      throw new ConfigurationError(error.summary, `${error.detail} (${address}, ${file})`);
    throw error;
  }
  if ('count' in body && 'for_each' in body)
    throw new ConfigurationError(
      'Invalid combination of "count" and "for_each"',
      `${address}: the "count" and "for_each" meta-arguments are mutually-exclusive, only one should be used (${file})`,
    );
  return {
    type,
    name,
    address,
    count: body.count,
    forEach: body.for_each,
    attributes,
    dependsOn: [...dependsOn],
    file,
  };
}

/** True when a string holds no interpolation, i.e. it is a literal. */
export function isLiteral(value: string): boolean {
  return templateParts(value).every((part) => 'text' in part);
}

/** True when a value holds no interpolation anywhere: what terraform takes where it allows no expression. */
export function literalValue(value: Json): boolean {
  if (typeof value === 'string') return isLiteral(value);
  if (Array.isArray(value)) return value.every(literalValue);
  if (value && typeof value === 'object') return Object.values(value).every(literalValue);
  return true;
}
