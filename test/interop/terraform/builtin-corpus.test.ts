import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { Json, PlanJson, StateV4 } from '../../../src/runs/executor/types.js';
import {
  ConstraintError,
  parseConstraints,
  satisfies,
} from '../../../src/runs/executor/builtin/versions.js';
import { plan as builtinPlan } from '../../support/builtin-driver.js';
import { requireTerraform } from '../../support/terraform.js';
import { CORPUS, type CorpusCase } from './corpus.js';

/**
 * The differential corpus of the builtin engine (issue 25): each configuration is planned and
 * applied in two steps by the real terraform (the oracle: local state, no backend, `terraform_data`
 * only, so no provider is downloaded) and by the builtin engine in process. For every step the
 * builtin engine either refuses (the run errors, naming the construct and the command engine) or
 * gives the same plan summary, the same resource and output changes and the same final state.
 * Where terraform itself fails a step, the builtin engine must fail it too.
 */

const run = promisify(execFile);

/** What one step gave: an error, or the comparable parts of its plan and the state after it. */
type Outcome =
  | { kind: 'errored'; text: string }
  | { kind: 'applied'; plan: Comparable; state: Comparable; planJson: PlanJson; next: StateV4 };

interface Comparable {
  [key: string]: Json;
}

/** Each object's id in the states of a step, by the address of the object. */
function idsOf(...states: (StateV4 | null)[]): Map<string, string> {
  const ids = new Map<string, string>();
  for (const state of states)
    for (const r of state?.resources ?? [])
      for (const i of r.instances) {
        const id = i.attributes.id;
        const key = i.index_key === undefined ? '' : JSON.stringify([i.index_key]);
        if (typeof id === 'string') ids.set(id, `<id of ${r.type}.${r.name}${key}>`);
      }
  return ids;
}

/** Ids are random (terraform's are UUIDs): a value names them by their object's address. */
let ids = new Map<string, string>();
function named(value: Json): Json {
  if (typeof value === 'string') return ids.get(value) ?? value;
  if (Array.isArray(value)) return value.map(named);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, named(v)]));
  return value;
}

/** A value without the attribute whose value is random (`id`), other ids named. */
function withoutId(value: Json | undefined): Json {
  if (value === undefined) return null;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const { id: _id, ...rest } = value;
    return named(rest);
  }
  return named(value);
}

/** The parts of a plan the corpus compares. */
function comparablePlan(plan: PlanJson): Comparable {
  const changes = plan.resource_changes ?? [];
  const count = (action: string) =>
    changes.filter((c) => (c.change.actions as string[]).includes(action)).length;
  return {
    summary: { add: count('create'), change: count('update'), destroy: count('delete') },
    resources: changes
      .map((c) => ({
        address: c.address,
        actions: c.change.actions,
        ...(c.action_reason === undefined ? {} : { reason: c.action_reason }),
        before: withoutId(c.change.before),
        after: withoutId(c.change.after),
        after_unknown: withoutId(c.change.after_unknown),
        before_sensitive: c.change.before_sensitive ?? null,
        after_sensitive: c.change.after_sensitive ?? null,
      }))
      .sort((a, b) => a.address.localeCompare(b.address)),
    outputs: Object.fromEntries(
      Object.entries(plan.output_changes ?? {})
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, c]) => [
          name,
          {
            actions: c.actions,
            after: named(c.after ?? null),
            after_unknown: c.after_unknown ?? null,
            after_sensitive: c.after_sensitive,
          },
        ]),
    ),
  };
}

/** The parts of a state the corpus compares: every instance's attributes (but `id`) and outputs. */
function comparableState(state: StateV4): Comparable {
  return {
    resources: state.resources
      .flatMap((r) =>
        r.instances.map((i) => ({
          address: `${r.type}.${r.name}${i.index_key === undefined ? '' : JSON.stringify([i.index_key])}`,
          mode: r.mode,
          attributes: withoutId(i.attributes),
          sensitive: i.sensitive_attributes ?? [],
        })),
      )
      .sort((a, b) => a.address.localeCompare(b.address)),
    outputs: Object.fromEntries(
      Object.entries(state.outputs)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, o]) => [
          name,
          { value: named(o.value), type: o.type ?? null, sensitive: o.sensitive === true },
        ]),
    ),
  };
}

const scratch = mkdtempSync(join(tmpdir(), 'keel-corpus-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const TF_ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: scratch,
  CHECKPOINT_DISABLE: '1',
  TF_IN_AUTOMATION: '1',
  TF_CLI_CONFIG_FILE: join(scratch, 'terraformrc'),
};

/** Runs the real terraform in `dir`; a non-zero exit is an `errored` outcome, not a throw. */
async function terraform(dir: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const { stdout } = await run(requireTerraform(), args, {
      cwd: dir,
      env: TF_ENV,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { ok: true, out: stdout };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    return { ok: false, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** The step's files, alone in `dir` but for what `init` made (`.terraform`, the lock file). */
function writeFiles(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  for (const entry of readdirSync(dir))
    if (!entry.startsWith('.terraform')) rmSync(join(dir, entry), { recursive: true, force: true });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

/** Both steps of a case with the real terraform, state kept between them in a local file. */
async function oracle(c: CorpusCase): Promise<Outcome[]> {
  const dir = join(scratch, c.name);
  const stateFile = join(scratch, `${c.name}.tfstate`);
  writeFileSync(TF_ENV.TF_CLI_CONFIG_FILE, '');
  const outcomes: Outcome[] = [];
  let prior: StateV4 | null = null;
  for (const [step, files] of c.steps.entries()) {
    writeFiles(dir, files);
    // Once per case, or again when a step names modules (init installs them).
    const modules = Object.values(files).some((text) => /^\s*module\s+"/m.test(text));
    const init =
      step === 0 || modules
        ? await terraform(dir, ['init', '-backend=false', '-input=false', '-no-color'])
        : { ok: true, out: '' };
    if (!init.ok) {
      outcomes.push({ kind: 'errored', text: init.out });
      break;
    }
    const state = ['-state', stateFile];
    const planned = await terraform(dir, [
      'plan',
      '-input=false',
      '-no-color',
      '-out=plan.tfplan',
      ...state,
    ]);
    if (!planned.ok) {
      outcomes.push({ kind: 'errored', text: planned.out });
      break;
    }
    const shown = await terraform(dir, ['show', '-json', 'plan.tfplan']);
    const planJson = JSON.parse(shown.out) as PlanJson;
    const applied = await terraform(dir, [
      'apply',
      '-input=false',
      '-no-color',
      ...state,
      'plan.tfplan',
    ]);
    if (!applied.ok) {
      outcomes.push({ kind: 'errored', text: applied.out });
      break;
    }
    const next = JSON.parse(readFileSync(stateFile, 'utf8')) as StateV4;
    ids = idsOf(prior, next);
    prior = next;
    outcomes.push({
      kind: 'applied',
      plan: comparablePlan(planJson),
      state: comparableState(next),
      planJson,
      next,
    });
  }
  return outcomes;
}

/** Both steps of a case with the builtin engine, in process. */
const throughJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

async function builtin(c: CorpusCase): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let state: StateV4 | null = null;
  for (const files of c.steps) {
    const planned = await builtinPlan({ files, state });
    if (planned.result.status !== 'finished') {
      outcomes.push({ kind: 'errored', text: planned.text });
      break;
    }
    const log: string[] = [];
    const applied = await planned.driver.apply({
      ...planned.request,
      artifact: planned.result.artifact,
      log: (l) => log.push(l),
    }).result;
    if (applied.status !== 'finished') {
      outcomes.push({ kind: 'errored', text: log.join('\n') });
      break;
    }
    ids = idsOf(state, applied.state);
    state = applied.state;
    outcomes.push({
      kind: 'applied',
      // As a client reads them: through JSON, where terraform's -0 is also 0.
      plan: comparablePlan(throughJson(planned.result.plan)),
      state: comparableState(throughJson(applied.state)),
      planJson: planned.result.plan,
      next: applied.state,
    });
  }
  return outcomes;
}

/** How the builtin engine fared on a case against terraform. */
type Verdict = 'refused' | 'equal' | 'differing';

const tally: Record<Verdict, string[]> = { refused: [], equal: [], differing: [] };

/** A refusal names what is not modelled and points at the command engine. */
const REFUSAL = /the builtin engine does not model .+; use the command engine/s;

describe('differential corpus: the builtin engine against terraform 1.11', () => {
  it.each(CORPUS.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    // One after the other: the comparables of each are made with that side's ids.
    const theirs = await oracle(c);
    const ours = await builtin(c);
    let verdict: Verdict = 'equal';
    for (let i = 0; i < c.steps.length; i++) {
      const t = theirs[i];
      const b = ours[i];
      if (t === undefined && b === undefined) break;
      if (b?.kind === 'errored') {
        if (t?.kind === 'errored') break; // both refuse the step: terraform's own error
        expect(b.text, `${c.name} step ${i + 1}: a refusal names the construct`).toMatch(REFUSAL);
        verdict = 'refused';
        break;
      }
      expect(
        t?.kind,
        `${c.name} step ${i + 1}: terraform failed, builtin did not\n${t?.kind === 'errored' ? t.text : ''}`,
      ).toBe('applied');
      if (t?.kind !== 'applied' || b?.kind !== 'applied') break;
      try {
        expect(b.plan, `${c.name} step ${i + 1}: plan`).toEqual(t.plan);
        expect(b.state, `${c.name} step ${i + 1}: state`).toEqual(t.state);
      } catch (error) {
        tally.differing.push(c.name);
        throw error;
      }
    }
    tally[verdict].push(c.name);
  });

  it(`counts: ${CORPUS.length} configurations`, () => {
    const counts = Object.fromEntries(Object.entries(tally).map(([k, v]) => [k, v.length]));

    console.log(
      `builtin corpus: ${CORPUS.length} configurations, ${JSON.stringify(counts)}; refused: ${tally.refused.join(', ')}`,
    );
    expect(CORPUS.length).toBeGreaterThanOrEqual(40);
    // Each case runs in a directory of its name: two of one name would share a state.
    expect(new Set(CORPUS.map((c) => c.name)).size).toBe(CORPUS.length);
    expect(tally.differing).toEqual([]);
    expect(tally.refused.length + tally.equal.length).toBe(CORPUS.length);
  });
});

/**
 * `required_version` as terraform 1.11 reads it, for the builtin engine's reader: each constraint
 * checked by the real binary (`terraform validate`, which checks the core version first) and by
 * the reader at the binary's own version.
 */
const CONSTRAINTS = [
  '>= 1.0',
  '~> 1',
  '~> 2',
  '~> 0.1',
  '~>1.10',
  '~>1.11.3',
  '~> 1.11.5',
  '~>1.12',
  '~> 1.11.4.0',
  '1.11.4.0',
  '=1.11',
  '=1.11.4',
  '!=1.11.4',
  'v1.11.4',
  '1.11.4+abc',
  ' >= 1.11 ',
  '>=1.11,<1.12',
  '>= 1.0, < 1.11',
  '> 1.11.4',
  '<= 1.11.4',
  '< 1.11.4',
  '~> banana',
  '',
  '=> 1.0',
  '1.x',
  '~> 1.11.0-beta1',
  '> 1.11.4-rc1',
];

describe('required_version: the builtin engine reads constraints as terraform does', () => {
  it.each(CONSTRAINTS.map((c) => [JSON.stringify(c), c] as const))('%s', async (_name, c) => {
    const dir = join(scratch, 'required-version');
    writeFiles(dir, { 'main.tf': `terraform {\n  required_version = ${JSON.stringify(c)}\n}\n` });
    const version = await terraform(dir, ['version', '-json']);
    const own = (JSON.parse(version.out) as { terraform_version: string }).terraform_version;
    const { ok, out } = await terraform(dir, ['validate', '-no-color']);
    const theirs = ok
      ? 'satisfied'
      : /Invalid required_version constraint/.test(out)
        ? 'prerelease'
        : /Invalid version constraint/.test(out)
          ? 'syntax'
          : /Unsupported Terraform Core version/.test(out)
            ? 'unsatisfied'
            : out;
    let ours: string;
    try {
      ours = satisfies(own, parseConstraints(c)) ? 'satisfied' : 'unsatisfied';
    } catch (error) {
      if (!(error instanceof ConstraintError)) throw error;
      ours = error.kind;
    }
    expect(ours, `terraform ${own}: ${out}`).toBe(theirs);
  });
});

/**
 * A number variable given as text (a workspace variable that is not HCL, a `TF_VAR_` value): the
 * builtin engine reads the text as terraform does, each judged by the real binary's plan.
 */
const NUMBER_TEXTS = [
  '3',
  '-2',
  '+3',
  '03',
  '.5',
  '1.',
  '1e2',
  ' 3',
  '3 ',
  '0x10',
  '1_000',
  'Infinity',
  '',
  'abc',
  '0.30000000000000000001',
  '1e400',
];

/** The same for a bool variable. */
const BOOL_TEXTS = ['true', 'false', '1', '0', 'True', 'TRUE', ' true', 'yes'];

describe('a number or bool variable given as text: read by the builtin engine as terraform reads it', () => {
  const cases = [
    ...NUMBER_TEXTS.map((v) => ['number', v] as const),
    ...BOOL_TEXTS.map((v) => ['bool', v] as const),
  ];
  it.each(cases.map(([type, v]) => [`${type} ${JSON.stringify(v)}`, type, v] as const))(
    '%s',
    async (_name, type, text) => {
      const main = `variable "v" {\n  type = ${type}\n}\n${'resource "terraform_data" "a" {\n  input = var.v\n}\n'}`;
      const dir = join(scratch, `${type}-text`);
      writeFiles(dir, { 'main.tf': main });
      await terraform(dir, ['init', '-backend=false', '-input=false', '-no-color']);
      const planned = await run(
        requireTerraform(),
        ['plan', '-input=false', '-no-color', '-out=p'],
        {
          cwd: dir,
          env: { ...TF_ENV, TF_VAR_v: text },
        },
      ).then(
        async () => {
          const shown = await terraform(dir, ['show', '-json', 'p']);
          const plan = JSON.parse(shown.out) as PlanJson;
          return { input: (plan.resource_changes?.[0]?.change.after as { input?: Json }).input };
        },
        () => 'refused' as const,
      );
      const ours = await builtinPlan({
        files: { 'main.tf': main },
        workspace: [{ key: 'v', value: text, category: 'terraform', hcl: false, sensitive: false }],
      });
      const builtin =
        ours.result.status === 'finished'
          ? {
              input: (ours.result.plan.resource_changes?.[0]?.change.after as { input?: Json })
                .input,
            }
          : 'refused';
      // A number a double does not hold is refused, naming it, where terraform plans it exactly.
      if (builtin === 'refused' && /a double does not hold exactly/.test(ours.text)) {
        expect(planned).not.toBe('refused');
        return;
      }
      expect(builtin, ours.text).toEqual(planned);
    },
  );
});

/**
 * Environment variables terraform reads (a workspace's `env` variables): `TF_VAR_<name>` under
 * the variable files, as text for an untyped or primitive variable and as HCL for `any`. Each
 * judged by the real binary's plan with the same environment.
 */
describe('a workspace environment variable TF_VAR_<name>: read by the builtin engine as terraform reads it', () => {
  const cases: [string, string, Record<string, string>, Record<string, string>][] = [
    [
      'untyped, with a default',
      'variable "v" {\n  default = "d"\n}\n',
      { TF_VAR_v: 'from-env' },
      {},
    ],
    [
      'untyped, text that looks like HCL',
      'variable "v" {\n  default = "d"\n}\n',
      { TF_VAR_v: '[1, 2]' },
      {},
    ],
    ['a number', 'variable "v" {\n  type = number\n}\n', { TF_VAR_v: '5' }, {}],
    ['type any, read as HCL', 'variable "v" {\n  type = any\n}\n', { TF_VAR_v: '[1, 2]' }, {}],
    [
      'under terraform.tfvars',
      'variable "v" {\n  default = "d"\n}\n',
      { TF_VAR_v: 'env' },
      { 'terraform.tfvars': 'v = "file"\n' },
    ],
    ['for a name not declared', 'variable "v" {\n  default = "d"\n}\n', { TF_VAR_w: 'env' }, {}],
  ];
  it.each(cases)('%s', async (name, variables, env, extra) => {
    const files = {
      'main.tf': `${variables}resource "terraform_data" "a" {\n  input = var.v\n}\n`,
      ...extra,
    };
    const dir = join(scratch, `env-${name.replace(/\W+/g, '-')}`);
    writeFiles(dir, files);
    await terraform(dir, ['init', '-backend=false', '-input=false', '-no-color']);
    await run(requireTerraform(), ['plan', '-input=false', '-no-color', '-out=p'], {
      cwd: dir,
      env: { ...TF_ENV, ...env },
    });
    const shown = await terraform(dir, ['show', '-json', 'p']);
    const planned = (
      (JSON.parse(shown.out) as PlanJson).resource_changes?.[0]?.change.after as { input?: Json }
    ).input;
    const ours = await builtinPlan({
      files,
      workspace: Object.entries(env).map(([key, value]) => ({
        key,
        value,
        category: 'env' as const,
        hcl: false,
        sensitive: false,
      })),
    });
    expect(ours.result.status, ours.text).toBe('finished');
    if (ours.result.status !== 'finished') return;
    const input = (ours.result.plan.resource_changes?.[0]?.change.after as { input?: Json }).input;
    expect(input).toEqual(planned);
  });

  it('TF_CLI_ARGS and TF_CLI_ARGS_plan, which terraform reads as arguments, are refused by name', async () => {
    for (const key of ['TF_CLI_ARGS', 'TF_CLI_ARGS_plan']) {
      const ours = await builtinPlan({
        files: { 'main.tf': 'resource "terraform_data" "a" {\n  input = 1\n}\n' },
        workspace: [
          { key, value: '-refresh=false', category: 'env', hcl: false, sensitive: false },
        ],
      });
      expect(ours.result.status).toBe('errored');
      expect(ours.text).toContain(
        `the builtin engine does not model the environment variable ${key}`,
      );
    }
  });
});
