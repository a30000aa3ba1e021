import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { readConfiguration, writeConfiguration } from '../archive.js';
import type {
  ApplyRequest,
  ApplyResult,
  Driver,
  Execution,
  PlanRequest,
  PlanResult,
} from '../driver.js';
import type {
  ApplyCounts,
  LogSink,
  PlanCounts,
  PlanJson,
  RunFlags,
  RunVariable,
  StateV4,
  WorkspaceVariable,
} from '../types.js';
import { checkJsonAsIs, parseJson } from '../../../core/json.js';
import { planJsonSchema, stateV4Schema } from '../schemas.js';
import { runProcess } from './process.js';
import type { ProcessExit, RunningProcess } from './process.js';

export interface CommandDriverOptions {
  /** Path of a terraform-compatible binary. */
  binary: string;
  /** Directory under which each phase gets its own scratch directory. */
  scratchRoot: string;
  /** Environment every invocation inherits (PATH, HOME, proxies); workspace env variables add to it. */
  baseEnv: Record<string, string>;
}

/** The apply phase needs the plan file the plan phase wrote: it travels as this artifact. */
interface CommandArtifact {
  kind: 'keel-command-plan';
  version: 1;
  planFile: string;
}

const PLAN_FILE = 'plan.tfplan';
/** The CA bundle terraform trusts in a phase (system roots and Keel's listener CA). */
const TRUST_FILE = '.keel-trust.pem';

/**
 * The lines `terraform init` prints about the local backend Keel runs it on (BACKEND_OVERRIDE):
 * the run's log does not show them, as the reference's logs show no trace of its own override.
 */
const BACKEND_LINES = [
  /^Successfully configured the backend "local"! Terraform will automatically$/,
  /^use this backend unless the backend configuration changes\.$/,
];

/** A log that drops the local backend's lines (both, in order, as init prints them). */
export function withoutBackendLines(log: LogSink): LogSink {
  let next = 0;
  return (line) => {
    const pattern = BACKEND_LINES[next];
    if (pattern?.test(line)) {
      next += 1;
      return;
    }
    next = 0;
    log(line);
  };
}

/**
 * The uploaded configuration still holds the `cloud` or `backend` block that pointed the CLI at
 * Keel; the run itself works on local state that Keel feeds and reads back. Terraform lets a
 * backend in an override file take precedence over a `cloud` or `backend` block, so this file
 * makes every run use the local backend, whatever the configuration says.
 */
export const BACKEND_OVERRIDE = {
  name: 'zzz_keel_backend_override.tf.json',
  text: `${JSON.stringify({ terraform: { backend: { local: {} } } }, null, 2)}\n`,
};

/** The CLI arguments of `plan` for a run's flags. */
export function planArguments(flags: RunFlags, runVariables: readonly RunVariable[]): string[] {
  const args = ['plan', '-input=false', '-no-color', `-out=${PLAN_FILE}`];
  if (flags.isDestroy) args.push('-destroy');
  if (flags.refreshOnly) args.push('-refresh-only');
  if (!flags.refresh) args.push('-refresh=false');
  for (const address of flags.replaceAddrs) args.push(`-replace=${address}`);
  for (const address of flags.targetAddrs) args.push(`-target=${address}`);
  for (const variable of runVariables)
    args.push('-var', `${variable.key}=${cliValue(variable.value)}`);
  return args;
}

/**
 * Run variables are HCL literals; on the command line terraform takes a string variable's value
 * raw, so a quoted string literal loses its quotes and everything else is passed as written.
 */
function cliValue(literal: string): string {
  const trimmed = literal.trim();
  if (/^"(?:[^"\\$]|\\.)*"$/.test(trimmed)) {
    const text = parseJson(z.string(), trimmed);
    // Not a JSON string after all: the literal as written.
    return text.ok ? text.value : trimmed;
  }
  return trimmed;
}

/** A plain string as an HCL string literal: quoted, with template sequences escaped. */
const hclString = (value: string): string =>
  JSON.stringify(value).replace(/([$%])\{/g, (_match, sign: string) => `${sign}${sign}{`);

/** Workspace terraform variables as an auto-loaded tfvars file (HCL values stay literal). */
export function tfvars(variables: readonly WorkspaceVariable[]): string {
  return variables
    .filter((v) => v.category === 'terraform')
    .map((v) => `${v.key} = ${v.hcl ? v.value : hclString(v.value)}\n`)
    .join('');
}

/** Counts of a plan JSON the way the plan resource reports them. */
export function countsOf(plan: PlanJson): PlanCounts {
  const counts = { additions: 0, changes: 0, destructions: 0, imports: 0 };
  for (const change of plan.resource_changes ?? []) {
    const actions = change.change.actions;
    if (actions.includes('create')) counts.additions += 1;
    if (actions.includes('update')) counts.changes += 1;
    if (actions.includes('delete')) counts.destructions += 1;
    if (change.change.importing) counts.imports += 1;
  }
  const outputs = Object.values(plan.output_changes ?? {}).some(
    (o) => !o.actions.includes('no-op'),
  );
  // Terraform's own verdict covers what the counts do not: a move, a `removed` that forgets, a
  // refresh-only plan that found drift.
  return {
    ...counts,
    hasChanges:
      counts.additions + counts.changes + counts.destructions + counts.imports > 0 ||
      outputs ||
      plan.applyable === true,
  };
}

/** One phase's life: a scratch directory, a sequence of commands, and the stop signals. */
class Phase {
  #current: RunningProcess | null = null;
  #stop: 'interrupt' | 'kill' | null = null;

  constructor(
    private readonly options: CommandDriverOptions,
    private readonly dir: string,
    private readonly env: Record<string, string>,
    private readonly log: LogSink,
  ) {}

  get stopped(): 'interrupt' | 'kill' | null {
    return this.#stop;
  }

  async run(args: string[], captureStdout = false): Promise<ProcessExit> {
    if (this.#stop) return { code: 1, signal: null, stdout: '' };
    const process = runProcess(this.options.binary, args, {
      cwd: this.dir,
      env: this.env,
      log: args[0] === 'init' ? withoutBackendLines(this.log) : this.log,
      captureStdout,
    });
    this.#current = process;
    const exit = await process.exit;
    this.#current = null;
    return exit;
  }

  stop(how: 'interrupt' | 'kill'): void {
    if (this.#stop === 'kill' || this.#stop === how) return;
    this.#stop = how;
    this.#current?.signal(how === 'kill' ? 'SIGKILL' : 'SIGINT');
  }
}

async function prepare(
  options: CommandDriverOptions,
  request: PlanRequest,
): Promise<{ dir: string; env: Record<string, string> }> {
  await mkdir(options.scratchRoot, { recursive: true, mode: 0o700 });
  const dir = await mkdtemp(join(options.scratchRoot, 'keel-run-'));
  await writeConfiguration(await readConfiguration(request.configuration), dir);
  await writeFile(join(dir, BACKEND_OVERRIDE.name), BACKEND_OVERRIDE.text);
  if (request.state) await writeFile(join(dir, 'terraform.tfstate'), JSON.stringify(request.state));
  const vars = tfvars(request.workspaceVariables);
  if (vars) await writeFile(join(dir, 'zzz-keel-workspace.auto.tfvars'), vars);
  const env: Record<string, string> = {
    ...options.baseEnv,
    ...request.environment?.variables,
    TF_IN_AUTOMATION: '1',
    TF_INPUT: '0',
  };
  const trust = request.environment?.trust ?? null;
  if (trust !== null) {
    await writeFile(join(dir, TRUST_FILE), trust);
    env.SSL_CERT_FILE = join(dir, TRUST_FILE);
  }
  for (const variable of request.workspaceVariables)
    if (variable.category === 'env') env[variable.key] = variable.value;
  // The run asked for terraform's trace (`debugging-mode`), whatever the workspace sets.
  if (request.flags.debuggingMode) env.TF_LOG = 'TRACE';
  return { dir, env };
}

const failed = (step: string, exit: ProcessExit) =>
  `terraform ${step} exited with ${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`}`;

/** Starts a phase body, exposing interrupt and kill; the scratch directory goes away afterwards. */
function phase<R>(
  options: CommandDriverOptions,
  request: PlanRequest,
  body: (phase: Phase, dir: string) => Promise<R>,
  canceled: (phase: Phase, dir: string) => Promise<R>,
): Execution<R> {
  let current: Phase | null = null;
  let pending: 'interrupt' | 'kill' | null = null;
  const result = (async () => {
    const { dir, env } = await prepare(options, request);
    try {
      current = new Phase(options, dir, env, request.log);
      if (pending) current.stop(pending);
      const outcome = await body(current, dir);
      return current.stopped ? await canceled(current, dir) : outcome;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  })();
  const stop = (how: 'interrupt' | 'kill') => {
    if (current) current.stop(how);
    else if (pending !== 'kill') pending = how;
  };
  return { result, interrupt: () => stop('interrupt'), kill: () => stop('kill') };
}

/** The state terraform left, if any; one it left unreadable is told in the run's log. */
async function readState(dir: string, log: LogSink): Promise<StateV4 | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, 'terraform.tfstate'), 'utf8');
  } catch {
    return undefined; // no state written (nothing applied yet): the caller reports what it needs
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    log(`Error: terraform.tfstate is not valid JSON: ${(err as Error).message}`);
    return undefined;
  }
  const state = checkJsonAsIs(stateV4Schema, raw);
  if (state.ok) return state.value;
  log(`Error: terraform.tfstate is not a terraform state (format 4): ${state.error}`);
  return undefined;
}

/**
 * Runs a terraform-compatible binary: `init`, `plan -out`, `show -json` for the plan phase and
 * `init`, `apply <plan file>` for the apply phase, each in a fresh scratch directory holding the
 * configuration and the current state. Output is streamed line by line into the phase's log.
 */
export function commandDriver(options: CommandDriverOptions): Driver {
  return {
    name: 'command',
    plan(request: PlanRequest): Execution<PlanResult> {
      return phase<PlanResult>(
        options,
        request,
        async (p, dir) => {
          const init = await p.run(['init', '-input=false', '-no-color']);
          if (init.code !== 0) return { status: 'errored', message: failed('init', init) };
          const plan = await p.run(planArguments(request.flags, request.runVariables));
          if (plan.code !== 0) return { status: 'errored', message: failed('plan', plan) };
          const show = await p.run(['show', '-json', PLAN_FILE], true);
          if (show.code !== 0) return { status: 'errored', message: failed('show', show) };
          let raw: unknown;
          try {
            raw = JSON.parse(show.stdout);
          } catch {
            request.log('Error: the plan JSON printed by "show -json" is not valid JSON');
            return { status: 'errored', message: 'unreadable plan JSON' };
          }
          const checked = checkJsonAsIs(planJsonSchema, raw);
          if (!checked.ok) {
            request.log(
              `Error: the plan JSON printed by "show -json" is not a plan: ${checked.error}`,
            );
            return { status: 'errored', message: 'unreadable plan JSON' };
          }
          const json = checked.value;
          const artifact: CommandArtifact = {
            kind: 'keel-command-plan',
            version: 1,
            planFile: (await readFile(join(dir, PLAN_FILE))).toString('base64'),
          };
          return {
            status: 'finished',
            plan: json,
            counts: countsOf(json),
            artifact: Buffer.from(JSON.stringify(artifact)),
          };
        },
        async () => ({ status: 'canceled' }),
      );
    },
    apply(request: ApplyRequest): Execution<ApplyResult> {
      const lines: string[] = [];
      const log: LogSink = (line) => {
        lines.push(line);
        request.log(line);
      };
      return phase<ApplyResult>(
        options,
        { ...request, log },
        async (p, dir) => {
          const artifact = JSON.parse(request.artifact.toString('utf8')) as CommandArtifact;
          if (artifact.kind !== 'keel-command-plan') {
            request.log('Error: the plan was not produced by the command driver');
            return { status: 'errored', message: 'plan from another driver' };
          }
          await writeFile(join(dir, PLAN_FILE), Buffer.from(artifact.planFile, 'base64'));
          const init = await p.run(['init', '-input=false', '-no-color']);
          if (init.code !== 0) return { status: 'errored', message: failed('init', init) };
          const apply = await p.run(['apply', '-input=false', '-no-color', PLAN_FILE]);
          const state = await readState(dir, request.log);
          const changed =
            state && JSON.stringify(state) !== JSON.stringify(request.state) ? state : undefined;
          if (apply.code !== 0)
            return {
              status: 'errored',
              message: failed('apply', apply),
              ...(changed ? { state: changed } : {}),
            };
          if (!state) return { status: 'errored', message: 'apply wrote no terraform.tfstate' };
          return { status: 'finished', state, counts: applyCountsFrom(lines) };
        },
        async (_p, dir) => {
          const state = await readState(dir, request.log);
          const changed =
            state && JSON.stringify(state) !== JSON.stringify(request.state) ? state : undefined;
          return { status: 'canceled', ...(changed ? { state: changed } : {}) };
        },
      );
    },
  };
}

/**
 * Apply counts from the CLI's summary line (`Apply complete! Resources: 1 added, 0 changed,
 * 0 destroyed.`, `Destroy complete! Resources: 2 destroyed.`), as the CLI prints no JSON for them.
 */
export function applyCountsFrom(lines: readonly string[]): ApplyCounts {
  const counts: ApplyCounts = { additions: 0, changes: 0, destructions: 0, imports: 0 };
  const summary = [...lines]
    .reverse()
    .find((l) => /^(Apply|Destroy) complete! Resources: /.test(l));
  if (!summary) return counts;
  const read = (word: string) => Number(new RegExp(`(\\d+) ${word}`).exec(summary)?.[1] ?? 0);
  return {
    additions: read('added'),
    changes: read('changed'),
    destructions: read('destroyed'),
    imports: read('imported'),
  };
}
