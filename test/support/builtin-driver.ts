import { builtinDriver } from '../../src/runs/executor/builtin/index.js';
import type { ApplyResult, PlanResult } from '../../src/runs/executor/driver.js';
import { defaultFlags } from '../../src/runs/executor/types.js';
import type {
  RunFlags,
  RunVariable,
  StateV4,
  WorkspaceVariable,
} from '../../src/runs/executor/types.js';
import { tarball } from './configuration.js';

/** Driving the builtin driver directly, as the unit tests do. */

/** Predictable computed values: `<type suffix>-<n>` ids and one lineage. */
export function identity() {
  let n = 0;
  return {
    newId: (type: string) => `${type.split('_')[1] ?? type}-${++n}`,
    newLineage: () => 'lineage-1',
  };
}

export interface Run {
  files: Record<string, string>;
  state?: StateV4 | null;
  flags?: Partial<RunFlags>;
  vars?: RunVariable[];
  workspace?: WorkspaceVariable[];
}

/** A builtin plan of `run`, with its log. */
export async function plan(run: Run) {
  const log: string[] = [];
  const driver = builtinDriver(identity());
  const request = {
    configuration: tarball(run.files),
    workspaceVariables: run.workspace ?? [],
    runVariables: run.vars ?? [],
    state: run.state ?? null,
    flags: { ...defaultFlags, ...run.flags },
    log: (line: string) => log.push(line),
  };
  const result: PlanResult = await driver.plan(request).result;
  return { result, log, text: log.join('\n'), request, driver };
}

/** A builtin plan and its apply; throws with the log when either does not finish. */
export async function planAndApply(run: Run) {
  const planned = await plan(run);
  if (planned.result.status !== 'finished') throw new Error(planned.text);
  const log: string[] = [];
  const applied: ApplyResult = await planned.driver.apply({
    ...planned.request,
    artifact: planned.result.artifact,
    log: (l) => log.push(l),
  }).result;
  if (applied.status !== 'finished') throw new Error(log.join('\n'));
  return {
    plan: planned.result,
    planLog: planned.text,
    state: applied.state,
    counts: applied.counts,
    applyLog: log.join('\n'),
  };
}
