import type { Core } from '../../context.js';
import type { Decider } from '../../core/command-handler.js';
import { systemMetadata } from '../../core/events.js';
import type { NewEvent } from '../../core/events.js';
import type { RunsContext, RunRow } from '../index.js';
import type { RunsModel } from '../model.js';
import { applyIdOf, planIdOf } from '../run/presenters.js';
import { identityTokens } from '../oidc/claims.js';
import { assembleVariables, withoutPriorityOverrides } from '../varsets/assemble.js';
import { planArtifactStream, type ExecutorEvent } from './events.js';
import type { ExecutorQueries } from './projection.js';
import type { ExecutorPort, PhaseRun } from './service.js';
import type { StateV4 } from './types.js';

/** Streams the executor only appends to (artifacts, state versions) need no state to decide. */
export const appendOnly: Decider<null, NewEvent> = { initialState: () => null, evolve: () => null };

/**
 * The run's facts that matter to a phase; its run variables less those a priority variable set
 * overrides (the reference's precedence, `varsets/assemble.ts`).
 */
export function phaseRunOf(run: RunRow, model: RunsModel): PhaseRun {
  const ws = model.workspaces.get(run.workspaceId);
  const sets =
    ws === null
      ? []
      : model.varsets.forWorkspace(ws).map(({ set }) => ({
          priority: set.priority,
          variables: model.varsets.variables(set.id),
        }));
  const a = run.attrs;
  return {
    id: run.id,
    workspaceId: run.workspaceId,
    configurationVersionId: a.configurationVersionId,
    flags: {
      refresh: a.refresh,
      refreshOnly: a.refreshOnly,
      isDestroy: a.isDestroy,
      replaceAddrs: a.replaceAddrs ?? [],
      targetAddrs: a.targetAddrs ?? [],
      allowEmptyApply: a.allowEmptyApply,
      allowConfigGeneration: a.allowConfigGeneration,
      debuggingMode: a.debuggingMode,
    },
    variables: withoutPriorityOverrides(sets, a.variables),
  };
}

/**
 * The executor's view of the runs context: inputs from the read models, outcomes as
 * run commands, each recorded in one command (`atomically`) with the executor's own events.
 */
export function runsPort(
  core: Core,
  runs: RunsContext,
  queries: ExecutorQueries,
  /** The driver and execution engine the run's workspace uses now. */
  engineOf: (runId: string) => { driver: 'builtin' | 'command'; engine: string },
  moreStages: (runId: string, hasChanges: boolean) => boolean,
): ExecutorPort {
  const metadata = systemMetadata('executor');
  const states = runs.model.states;
  const record = (stream: string, event: ExecutorEvent) =>
    core.handler.handleSync(stream, appendOnly, () => [event], metadata);
  const recordState = (runId: string, state: StateV4) => {
    const run = runs.model.runs.get(runId);
    if (!run) return;
    runs.recordStateVersionSync({
      workspaceId: run.workspaceId,
      runId,
      state: JSON.stringify(state),
      engineVersion: state.terraform_version,
    });
  };
  const inFlight = (runId: string) => {
    const status = runs.model.runs.get(runId)?.status;
    return status === 'planning' || status === 'applying';
  };
  return {
    configuration(cvId) {
      const archive = runs.model.cvs.archive(cvId);
      if (archive === null)
        throw new Error(`configuration version ${cvId} has no uploaded configuration`);
      return archive;
    },
    currentState: (workspaceId) => {
      const current = states.current(workspaceId);
      if (current === null) return null;
      const document = runs.model.states.document(current.id);
      return document === null ? null : (JSON.parse(core.sealer.open(document)) as StateV4);
    },
    // Workspace variables and the variable sets that reach the workspace, by precedence, and the
    // workload identity tokens they ask for.
    workspaceVariables: async (workspaceId, phase) => {
      const own = queries.variables(workspaceId).map((v) => ({
        key: v.key,
        value: core.sealer.open(v.value),
        category: v.category,
        hcl: v.hcl,
        sensitive: v.sensitive,
      }));
      const ws = runs.model.workspaces.get(workspaceId);
      const sets = ws === null ? [] : runs.model.varsets.applied(ws, (v) => core.sealer.open(v));
      const variables = assembleVariables(own, sets, []).workspace;
      return phase === undefined
        ? variables
        : [...variables, ...(await identityTokens(runs.model, runs.oidc, variables, phase))];
    },
    planArtifact(runId) {
      const planned = queries.artifact(runId);
      if (planned === null) return null;
      // A plan is only understood by the engine that made it (a saved plan may wait while the
      // workspace switches engines).
      const now = engineOf(runId).engine;
      if (planned.engine !== null && planned.engine !== now)
        throw new Error(
          `the plan was made by execution engine ${planned.engine} and the workspace now uses ${now}; start a new run`,
        );
      return Buffer.from(core.sealer.open(planned.artifact), 'base64');
    },
    phaseId: (runId, phase) => (phase === 'plan' ? planIdOf(runId) : applyIdOf(runId)),
    async planFinished(runId, result) {
      await core.handler.atomically(() => {
        record(planArtifactStream(runId), {
          type: 'PlanArtifactRecorded',
          data: {
            runId,
            ...engineOf(runId),
            artifact: core.sealer.seal(result.artifact.toString('base64')),
          },
        });
        runs.executorSync.planFinished(runId, {
          hasChanges: result.counts.hasChanges,
          counts: {
            additions: result.counts.additions,
            changes: result.counts.changes,
            destructions: result.counts.destructions,
            imports: result.counts.imports,
          },
          log: core.sealer.seal(result.log),
          jsonOutput: core.sealer.sealJson(result.plan),
          jsonOutputRedacted: result.redacted,
          moreStages: moreStages(runId, result.counts.hasChanges),
        });
      });
    },
    async applyFinished(runId, result) {
      await core.handler.atomically(() => {
        recordState(runId, result.state);
        runs.executorSync.applyFinished(runId, {
          counts: result.counts,
          log: core.sealer.seal(result.log),
        });
      });
    },
    async phaseErrored(runId, phase, failure) {
      await core.handler.atomically(() => {
        if (failure.state) recordState(runId, failure.state);
        if (inFlight(runId))
          runs.executorSync.errored(runId, {
            phase,
            message: failure.message,
            log: core.sealer.seal(failure.log),
          });
      });
    },
    async phaseCanceled(runId, _phase, outcome) {
      await core.handler.atomically(() => {
        if (outcome.state) recordState(runId, outcome.state);
        // A force-cancel has already ended the run; the killed phase only leaves its state behind.
        if (inFlight(runId)) runs.executorSync.canceled(runId, core.sealer.seal(outcome.log));
      });
    },
  };
}
