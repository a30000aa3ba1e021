import { parseJson } from '../../../core/json.js';
import { tfvarsJsonSchema } from '../schemas.js';
import type { ConfigFiles, Json, RunVariable, WorkspaceVariable } from '../types.js';
import {
  ConfigurationError,
  literalValue,
  parseConfigHcl,
  refuseInexactDecimal,
  refuseInexactLiterals,
  refuseInexactNumbers,
} from './config.js';
import type { VariableBlock } from './config.js';
import { numberText } from './expressions.js';

/** Parses one HCL literal (`"text"`, `3`, `true`, `["a"]`, `{ a = 1 }`) into its JSON value. */
export async function parseHclLiteral(key: string, literal: string): Promise<Json> {
  let parsed: Record<string, Json>;
  try {
    parsed = await parseConfigHcl(`<value for var.${key}>`, `value = ${literal}\n`);
  } catch (error) {
    if (error instanceof ConfigurationError) throw error;
    const text = error instanceof Error ? error.message : String(error);
    throw new ConfigurationError(
      'Invalid value for variable',
      `var.${key}: ${text.replace(/^parse config: \[|\]$/g, '')}`,
    );
  }
  const value = parsed.value ?? null;
  if (!literalValue(value)) {
    throw new ConfigurationError(
      'Variables not allowed',
      `the value of var.${key} must be a literal, got ${literal}`,
    );
  }
  return value;
}

/** A number as terraform reads one from a string: decimal, an optional sign and exponent. */
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** Converts a value to the declared primitive type where terraform would do so. */
function convert(name: string, type: string | null, value: Json): Json {
  const invalid = (wanted: string) =>
    new ConfigurationError(
      'Invalid value for input variable',
      `var.${name}: ${wanted} is required`,
    );
  if (type === 'number') {
    if (typeof value === 'number') return value;
    // Terraform reads a decimal number and nothing else: no spaces, no 0x, no Infinity (which
    // JavaScript's Number would take).
    if (typeof value === 'string' && DECIMAL.test(value))
      return refuseInexactDecimal(value, `the value of var.${name}`);
    throw invalid('a number');
  }
  if (type === 'bool') {
    if (typeof value === 'boolean') return value;
    // Terraform's conversion also takes "1" and "0".
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    throw invalid('a bool');
  }
  if (type === 'string') {
    if (typeof value === 'number') return numberText(value);
    if (typeof value === 'boolean') return String(value);
    if (typeof value !== 'string') throw invalid('a string');
    return value;
  }
  return value;
}

/**
 * The variable definition files terraform loads by itself from the root module, in its order:
 * `terraform.tfvars`, `terraform.tfvars.json`, then `*.auto.tfvars` and `*.auto.tfvars.json` in
 * lexical order; a later file's value wins. Their values must be literals, as in terraform.
 */
export async function fileVariables(files: ConfigFiles): Promise<Map<string, Json>> {
  const root = [...files.keys()].filter((path) => !path.includes('/'));
  const auto = root
    .filter((path) => path.endsWith('.auto.tfvars') || path.endsWith('.auto.tfvars.json'))
    .sort();
  const order = [
    ...['terraform.tfvars', 'terraform.tfvars.json'].filter((p) => root.includes(p)),
    ...auto,
  ];
  const values = new Map<string, Json>();
  for (const path of order) {
    const text = files.get(path) ?? '';
    let parsed: Record<string, Json>;
    if (path.endsWith('.json')) {
      const doc = parseJson(tfvarsJsonSchema, text);
      if (!doc.ok)
        throw new ConfigurationError('Invalid variable definitions file', `${path}: ${doc.error}`);
      parsed = doc.value;
      refuseInexactNumbers(parsed, path);
      refuseInexactLiterals(text, path, true);
    } else {
      try {
        parsed = await parseConfigHcl(path, text);
      } catch (error) {
        if (error instanceof ConfigurationError) throw error;
        throw new ConfigurationError(
          'Invalid variable definitions file',
          `${path}: ${(error instanceof Error ? error.message : String(error)).replace(/^parse config: \[|\]$/g, '')}`,
        );
      }
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new ConfigurationError('Invalid variable definitions file', `${path}: not an object`);
    for (const [key, value] of Object.entries(parsed)) {
      if (!path.endsWith('.json') && !literalValue(value))
        throw new ConfigurationError(
          'Variables not allowed',
          `${path}: the value of ${key} must be a literal`,
        );
      values.set(key, value);
    }
  }
  return values;
}

/** The resolved input variables of a run, plus warnings for values nothing declares. */
export interface ResolvedVariables {
  values: Record<string, Json>;
  warnings: string[];
}

/**
 * Resolves every declared variable: run variables override workspace terraform variables, which
 * override the configuration's variable files (see {@link fileVariables}), which override the
 * workspace's `TF_VAR_<name>` environment variables, which override `default`; a variable with
 * none of these is an error, as in terraform.
 */
export async function resolveVariables(
  declared: Record<string, VariableBlock>,
  workspace: readonly WorkspaceVariable[],
  run: readonly RunVariable[],
  files: ReadonlyMap<string, Json> = new Map(),
): Promise<ResolvedVariables> {
  const given = new Map<string, Json>();
  for (const variable of workspace) {
    if (variable.category !== 'env') continue;
    // Arguments terraform takes from the environment would change what it plans.
    if (/^TF_CLI_ARGS(_.*)?$/.test(variable.key) && variable.value.trim() !== '')
      throw new ConfigurationError(
        `Unsupported by the builtin engine: the environment variable ${variable.key}`,
        `the builtin engine does not model the environment variable ${variable.key}, which terraform reads as command-line arguments; use the command engine (a terraform binary, chosen with the workspace's execution-engine) for this configuration`,
      );
    // TF_VAR_<name>: under the variable files, for a declared name only (terraform ignores the
    // others); text for an untyped or primitive variable, HCL for one typed `any`.
    const name = variable.key.startsWith('TF_VAR_') ? variable.key.slice(7) : '';
    const block = declared[name];
    if (block === undefined) continue;
    given.set(
      name,
      block.type === 'any' ? await parseHclLiteral(name, variable.value) : variable.value,
    );
  }
  for (const [name, value] of files) given.set(name, value);
  for (const variable of workspace) {
    if (variable.category !== 'terraform') continue;
    given.set(
      variable.key,
      variable.hcl ? await parseHclLiteral(variable.key, variable.value) : variable.value,
    );
  }
  for (const variable of run) {
    // A run variable is terraform's `-var`, which refuses a name the configuration does not
    // declare (a value in a variables file only warns).
    if (!(variable.key in declared))
      throw new ConfigurationError(
        'Value for undeclared variable',
        `A variable named "${variable.key}" was given as a run variable (terraform's -var), but the root module does not declare a variable of that name. To use this value, add a "variable" block to the configuration.`,
      );
    given.set(variable.key, await parseHclLiteral(variable.key, variable.value));
  }
  const warnings = [...given.keys()]
    .filter((key) => !(key in declared))
    .map(
      (key) =>
        `Value for undeclared variable: the configuration does not declare a variable named "${key}"; its value is ignored.`,
    );
  const values: Record<string, Json> = {};
  for (const block of Object.values(declared)) {
    const value = given.has(block.name) ? given.get(block.name) : block.default;
    if (value === undefined) {
      throw new ConfigurationError(
        'No value for required variable',
        `The root module input variable "${block.name}" is not set, and has no default value. Use a workspace or run variable to provide a value.`,
      );
    }
    values[block.name] = value === null ? null : convert(block.name, block.type, value);
  }
  return { values, warnings };
}
