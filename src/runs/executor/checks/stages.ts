import type { Core } from '../../../context.js';
import { systemMetadata } from '../../../core/events.js';
import type { StoredEvent } from '../../../core/events.js';
import type { Reactor } from '../../../core/reactors.js';
import type { RunsContext, RunRow } from '../../index.js';
import { estimateCost } from '../cost.js';
import type { PriceTable } from '../cost.js';
import { checkPolicies } from '../policy.js';
import { appendOnly } from '../port.js';
import { policyCheckIdOf } from '../../run/presenters.js';
import type { PlanJson } from '../types.js';
import type { CheckEvent } from './events.js';
import type { CheckQueries } from './projection.js';
import type { TaskStages } from '../run-tasks/stage.js';

/** `ce-…` / `polchk-…`: a run's cost estimate and policy check ids follow the run id. */
export const costEstimateIdOf = (runId: string): string =>
  `ce-${runId.slice(runId.indexOf('-') + 1)}`;

/**
 * Whether a finished plan goes through the checks stage: only plans with changes are estimated
 * and checked; cost estimation when the organization enables it, policy checks when policy sets
 * apply to the workspace.
 */
export function hasChecks(
  checks: CheckQueries,
  tasks: TaskStages,
  run: RunRow,
  hasChanges: boolean,
): boolean {
  return (
    hasChanges &&
    (checks.costEstimationEnabled(run.organization) ||
      checks.setsFor(run.organization, run.workspaceId).length > 0 ||
      tasks.pending(run, 'post_plan'))
  );
}

/**
 * Whether a run whose plan-stage step (cost estimate, policy check, override) has just ended goes
 * on to no other stage, so the same command completes the plan stage. The CLI reads the run as soon
 * as the step's resource is final and stops, without asking to apply, when it is not confirmable:
 * the run must never be seen between the step and the plan stage's completion.
 */
export function endsPlanStage(
  checks: CheckQueries,
  tasks: TaskStages,
  run: RunRow,
  after: 'estimate' | 'check',
): boolean {
  const checkFollows =
    after === 'estimate' &&
    checks.setsFor(run.organization, run.workspaceId).length > 0 &&
    checks.policyChecksOfRun(run.id).length === 0;
  return !checkFollows && !tasks.pending(run, 'post_plan');
}

const STAGE_EVENTS = [
  'RunPlanFinished',
  'RunCostEstimated',
  'RunPolicyChecked',
  'RunPolicyOverridden',
  'RunPostPlanCompleted',
] as const;

/**
 * Moves a planned run through cost estimation and policy checks, one step per event, then
 * completes the plan stage (the run machine then finishes, pauses, or auto-applies it).
 */
export function stagesReactor(
  core: Core,
  runs: RunsContext,
  checks: CheckQueries,
  prices: () => PriceTable,
  tasks: TaskStages,
): Reactor {
  const metadata = systemMetadata('executor');
  const record = (stream: string, event: CheckEvent) =>
    core.handler.handleSync(stream, appendOnly, () => [event], metadata);
  const planOf = (run: RunRow): PlanJson =>
    runs.model.runs.log(run.id, 'plan')?.jsonOutput as PlanJson;

  // Each step starts with the status it moves out of, so a step that failed half-way (or was cut
  // short by a restart) is finished by the next event rather than left hanging.
  const estimate = async (run: RunRow) => {
    if (run.status !== 'cost_estimating') await runs.executor.costEstimateStarted(run.id);
    const table = prices();
    const id = costEstimateIdOf(run.id);
    await core.handler.atomically(() => {
      record(id, {
        type: 'CostEstimateRecorded',
        data: { id, runId: run.id, estimate: estimateCost(table, planOf(run)) },
      });
      runs.executorSync.costEstimated(run.id);
      if (endsPlanStage(checks, tasks, run, 'estimate'))
        runs.executorSync.planStageCompleted(run.id);
    });
  };

  const check = async (run: RunRow) => {
    if (run.status !== 'policy_checking') await runs.executor.policyCheckStarted(run.id);
    const sets = checks.setsFor(run.organization, run.workspaceId).map(({ set, policies }) => ({
      name: set.name,
      policies: policies.map((p) => ({
        name: p.name,
        query: p.query,
        enforcement: p.enforcement,
        ...(p.description ? { description: p.description } : {}),
      })),
    }));
    const { status, result } = await checkPolicies(sets, planOf(run));
    const id = policyCheckIdOf(run.id);
    await core.handler.atomically(() => {
      record(id, { type: 'PolicyCheckRecorded', data: { id, runId: run.id, status, result } });
      if (status === 'hard_failed') {
        runs.executorSync.errored(run.id, {
          phase: null,
          message: `${result['hard-failed']} hard-mandatory policy failed; see policy check ${id}`,
        });
      } else {
        runs.executorSync.policyChecked(run.id, status);
        if (status === 'passed' && endsPlanStage(checks, tasks, run, 'check'))
          runs.executorSync.planStageCompleted(run.id);
      }
    });
  };

  return {
    name: 'runs-executor-checks',
    types: STAGE_EVENTS,
    async react(event: StoredEvent) {
      const run = runs.model.runs.get(event.stream);
      if (run === null || run.pausedForConfirmation) return;
      const wantsEstimate =
        checks.costEstimationEnabled(run.organization) && checks.costEstimateOfRun(run.id) === null;
      const wantsCheck =
        checks.setsFor(run.organization, run.workspaceId).length > 0 &&
        checks.policyChecksOfRun(run.id).length === 0;
      // A step left half-done (an error, a restart) is finished from the status it left behind.
      if (run.status === 'cost_estimating') return estimate(run);
      if (run.status === 'policy_checking') return check(run);
      // Between planning and confirmation: estimate, check, run post-plan tasks, then complete.
      const next = async (): Promise<void> => {
        if (tasks.pending(run, 'post_plan')) await tasks.start(run, 'post_plan');
        else await runs.executor.planStageCompleted(run.id);
      };
      if (run.status === 'planned') {
        if (wantsEstimate) return estimate(run);
        if (wantsCheck) return check(run);
        await next();
      } else if (run.status === 'cost_estimated') {
        if (wantsCheck) return check(run);
        await next();
      } else if (run.status === 'policy_checked') {
        await next();
      } else if (run.status === 'post_plan_completed') {
        await runs.executor.planStageCompleted(run.id);
      }
    },
  };
}
