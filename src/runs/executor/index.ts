import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Router from '@koa/router';
import type { ContextModule, Core } from '../../context.js';
import type { StoredEvent } from '../../core/events.js';
import type { Reactor } from '../../core/reactors.js';
import type { RunRow, RunsContext } from '../index.js';
import { RUNS_TABLE } from '../run/projection.js';
import { enginesOf, processScratch, sharesLog } from '../../config.js';
import { executionEngineOf } from '../workspaces/presenters.js';
import { builtinDriver } from './builtin/index.js';
import { listenerTrust } from '../../http/listener-tls.js';
import { vaultBackedAws, withVaultBackedAws } from './vault-aws.js';
import { CheckQueries, checksProjection } from './checks/projection.js';
import { checkRoutes, presentCostEstimate } from './checks/routes.js';
import { hasChecks, stagesReactor } from './checks/stages.js';
import { loadPriceTable } from './cost.js';
import { RunTaskQueries, runTasksProjection } from './run-tasks/projection.js';
import { presentStage, runTaskRoutes, taskCallbackRoutes } from './run-tasks/routes.js';
import type { Resource } from '../jsonapi.js';
import { TaskStages } from './run-tasks/stage.js';
import type { PriceTable } from './cost.js';
import { commandDriver } from './command/index.js';
import type { Driver } from './driver.js';
import type { LiveLogs } from './logs.js';
import { fileLiveLogs, memoryLiveLogs } from './logs.js';
import { phaseRunOf, runsPort } from './port.js';
import { ExecutorQueries, executorProjection } from './projection.js';
import { Executor, type Phase } from './service.js';
import { PhaseClaims } from './claims.js';
import { holderName, leaseTtlMs } from '../../core/shared-log.js';
import { variableRoutes } from './variables.js';
import { failClosed } from '../run/fail-closed.js';
import { phaseEnvironment } from './run-env.js';
import { runTokenRoutes } from './run-token.js';

export interface ExecutorContextOptions {
  runs: RunsContext;
  /** How many phases run at once. */
  concurrency?: number;
  /** Live logs; by default files under `<data>/logs` (memory for an in-memory daemon). */
  liveLogs?: LiveLogs;
  /** How long a plan or apply may run (`PHASE_TIMEOUT_MS` by default). */
  phaseTimeoutMs?: number;
}

export interface ExecutorContext {
  readonly module: ContextModule;
  readonly executor: Executor;
  readonly queries: ExecutorQueries;
  readonly checks: CheckQueries;
  readonly liveLogs: LiveLogs;
  /**
   * Starts a run's pre-plan tasks, if its workspace has any that have not run, inside the queue's
   * `atomically` function: answers with what sends the tasks their payloads once that is durable,
   * or null when it has none.
   */
  prePlan(run: RunRow): (() => void) | null;
  /** A run's task stages as `task-stages` resources (`include=task_stages` on a run). */
  taskStagesOf(runId: string): Resource[];
  /** A run's cost estimate as a `cost-estimates` resource, once it has one. */
  costEstimateOf(runId: string): Resource | null;
}

const EXECUTOR_EVENTS = [
  'RunPlanQueued',
  'RunApplyQueued',
  'RunCancelRequested',
  'RunForceCanceled',
] as const;

/**
 * The executor context: it picks up `plan_queued` and `apply_queued` runs, runs their phases with
 * the configured driver, streams logs, records outcomes and state versions, and serves workspace
 * variables and state versions.
 */
export function createExecutorContext(
  core: Core,
  options: ExecutorContextOptions,
): ExecutorContext {
  const { runs } = options;
  const queries = new ExecutorQueries(core.db);
  // An in-memory daemon (tests) has no data directory: live logs in memory, scratch directories
  // in the system's temporary one.
  const inMemory = core.config.dataDir === ':memory:';
  const liveLogs =
    options.liveLogs ??
    (inMemory ? memoryLiveLogs() : fileLiveLogs(join(core.config.dataDir, 'logs')));
  const builtin = builtinDriver({
    newId: (type) => core.ids.id(type.split('_').slice(1).join('-') || type),
    newLineage: () => core.ids.uuid(),
  });
  const engines = enginesOf(core.config);
  const commands = new Map<string, Driver>();
  const baseEnv = Object.fromEntries(
    ['PATH', 'HOME', 'TMPDIR', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY']
      .filter((k) => process.env[k] !== undefined)
      .map((k) => [k, process.env[k] ?? '']),
  );
  /** A workspace's driver: `builtin`, or the command driver over the engine it names. */
  const driverFor = (workspaceId: string): Driver => {
    const ws = runs.model.workspaces.get(workspaceId);
    if (ws === null) throw new Error(`workspace ${workspaceId} not found`);
    const name = executionEngineOf(ws, core.config);
    if (name === 'builtin') return builtin;
    const binary = engines[name];
    // The operator removed the engine after the workspace chose it: the run errors, saying so.
    if (binary === undefined)
      throw new Error(`execution engine ${name} is not configured on this daemon`);
    let driver = commands.get(name);
    if (driver === undefined) {
      const scratchRoot = inMemory ? tmpdir() : processScratch(core.config.dataDir);
      driver = commandDriver({ binary, scratchRoot, baseEnv });
      commands.set(name, driver);
    }
    return driver;
  };
  const checks = new CheckQueries(core.db);
  const taskQueries = new RunTaskQueries(core.db);
  const taskStages = new TaskStages(core, runs, taskQueries);
  let prices: PriceTable | null = null;
  const priceTable = () => (prices ??= loadPriceTable(core.config.dataDir));
  // Vault-backed AWS credentials (vault-aws.ts): obtained as a phase starts, revoked as it ends.
  const vault = vaultBackedAws(core, runs.model, runs.oidc, listenerTrust(core.config));
  const port = withVaultBackedAws(
    runsPort(
      core,
      runs,
      queries,
      (runId) => {
        const run = runs.model.runs.get(runId);
        const ws = run === null ? null : runs.model.workspaces.get(run.workspaceId);
        if (run === null || ws === null) return { driver: 'builtin', engine: 'builtin' };
        return {
          driver: driverFor(run.workspaceId).name,
          engine: executionEngineOf(ws, core.config),
        };
      },
      (runId, hasChanges) => {
        const run = runs.model.runs.get(runId);
        return run !== null && hasChecks(checks, taskStages, run, hasChanges);
      },
    ),
    vault,
    (workspaceId) => driverFor(workspaceId).name,
  );
  // Several processes on one log (ADR 0080): each phase runs where its claim is held (ADR 0082).
  const claims = sharesLog(core.config)
    ? new PhaseClaims(core.db, core.clock, {
        holder: holderName(),
        ttlMs: leaseTtlMs(core.config.pollIntervalMs),
      })
    : null;
  const executor = new Executor({
    port,
    logs: liveLogs,
    driverFor,
    concurrency: options.concurrency ?? 4,
    environmentFor: (run, phase, lifetimeMs) =>
      phaseEnvironment(core, runs.model, run, phase, lifetimeMs),
    ...(options.phaseTimeoutMs === undefined ? {} : { phaseTimeoutMs: options.phaseTimeoutMs }),
    onFault: (runId, err) =>
      core.logger.error({ err, runId }, 'run phase failed inside the executor'),
    ...(claims === null
      ? {}
      : {
          owns: (runId: string, phase: Phase) => {
            const held = claims.holds(runId, phase);
            if (!held) core.logger.warn({ runId, phase }, 'another process took this phase over');
            return held;
          },
        }),
  });
  const background = (work: Promise<void>, runId: string) => {
    void work.catch((err: unknown) =>
      core.logger.error({ err, runId }, 'recording a phase outcome failed'),
    );
  };
  /**
   * Start a phase of a run in `planning` or `applying` (after the command that moved it there, or
   * taking it over): under its claim when the log is shared, given up when the outcome is recorded.
   */
  const runPhase = (run: RunRow, phase: Phase, work: () => Promise<void>) => {
    background(
      work().finally(() => claims?.release(run.id, phase)),
      run.id,
    );
  };
  /**
   * Runs whose phase this process is starting: the command that moves them into it is committed
   * (a read sees `planning` or `applying`) but the phase is not running yet. Not interrupted.
   */
  const starting = new Set<string>();
  /** The command that moves the run into its phase, under the phase's claim when shared. */
  const claimed = async (
    run: RunRow,
    phase: Phase,
    started: () => Promise<void>,
  ): Promise<boolean> => {
    if (claims !== null && !claims.take(run.id, phase)) return false;
    starting.add(run.id);
    try {
      await started();
      return true;
    } catch (err) {
      starting.delete(run.id);
      claims?.release(run.id, phase);
      throw err;
    }
  };

  /**
   * Starts the phase a run is queued for, under its claim when the log is shared; nothing if this
   * process is already starting one for it. (The run's previous phase may still be finishing here:
   * an apply is queued while the plan's credentials are being revoked.)
   */
  const startQueued = async (run: RunRow, phase: Phase): Promise<void> => {
    if (starting.has(run.id)) return;
    const moved =
      phase === 'plan'
        ? () => runs.executor.planStarted(run.id)
        : () => runs.executor.applyStarted(run.id);
    if (!(await claimed(run, phase, moved))) return;
    runPhase(run, phase, () =>
      phase === 'plan'
        ? executor.plan(phaseRunOf(run, runs.model))
        : executor.apply(phaseRunOf(run, runs.model)),
    );
    starting.delete(run.id);
  };

  const reactor: Reactor = {
    name: 'runs-executor',
    types: EXECUTOR_EVENTS,
    async react(event: StoredEvent) {
      const run = runs.model.runs.get(event.stream);
      if (run === null) return;
      switch (event.type) {
        case 'RunPlanQueued':
          if (run.status !== 'plan_queued') return;
          await startQueued(run, 'plan');
          return;
        case 'RunApplyQueued':
          if (run.status !== 'apply_queued') return;
          await startQueued(run, 'apply');
          return;
        case 'RunCancelRequested':
          // A phase no longer here (it ended, or the daemon restarted) cannot be interrupted.
          if (
            !executor.cancel(run.id) &&
            (run.status === 'planning' || run.status === 'applying')
          ) {
            await runs.executor.canceled(
              run.id,
              'Interrupt received.\nThe phase was no longer running; the run is canceled.\n',
            );
          }
          return;
        case 'RunForceCanceled':
          executor.forceCancel(run.id);
          return;
        default:
          return;
      }
    },
  };

  /** Runs queued for a phase or in one, whose phase is neither starting nor running here. */
  const notRunningHere = (statuses: readonly string[]) =>
    core.db
      .prepare<[], { id: string }>(
        `SELECT id FROM ${RUNS_TABLE} WHERE status IN (${statuses.map((st) => `'${st}'`).join(', ')}) ORDER BY seq`,
      )
      .all()
      .flatMap(({ id }) => {
        const run = runs.model.runs.get(id);
        return run !== null &&
          statuses.includes(run.status) &&
          !executor.has(id) &&
          !starting.has(id)
          ? [run]
          : [];
      });
  const phaseOf = (status: string): Phase =>
    status === 'planning' || status === 'plan_queued' ? 'plan' : 'apply';
  /** Runs in `planning` or `applying` whose phase is not running here. */
  const interrupted = () =>
    notRunningHere(['planning', 'applying']).map((run) => ({ run, phase: phaseOf(run.status) }));
  /** Plans started again, applies errored (see `Executor.recover`): each under its claim. */
  const recover = (lost: readonly { run: RunRow; phase: Phase }[]) => {
    if (lost.length > 0)
      core.logger.warn(
        { runs: lost.map((l) => l.run.id) },
        'resuming phases interrupted by a restart',
      );
    for (const { run, phase } of lost) {
      runPhase(run, phase, () => executor.recover([{ run: phaseRunOf(run, runs.model), phase }]));
    }
  };

  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    // Alone on the log, every phase left running belongs to this directory's last process.
    if (claims === null) recover(interrupted());
  };
  /**
   * Every poll while this process leads a shared log, from one read of the runs table: start the
   * runs queued for a phase that no process started (the reaction to their queuing passed them
   * over: it read the run before another process's commit, or met the claim still held while
   * leadership moved), each under its claim, so none waits in a queue forever; and take over the
   * phases whose claim ran out (the process running them died or froze).
   */
  const lead = () => {
    if (claims === null) return;
    const here = notRunningHere(['plan_queued', 'apply_queued', 'planning', 'applying']);
    const queued = (run: RunRow) => run.status === 'plan_queued' || run.status === 'apply_queued';
    for (const run of here.filter(queued)) {
      startQueued(run, phaseOf(run.status)).catch((err: unknown) =>
        core.logger.warn(
          { err, runId: run.id },
          'starting a queued run failed; tried again next poll',
        ),
      );
    }
    recover(
      here
        .filter((run) => !queued(run))
        .map((run) => ({ run, phase: phaseOf(run.status) }))
        .filter(({ run, phase }) => {
          if (!claims.take(run.id, phase)) return false;
          // Recorded meanwhile by the process that held it: nothing to take over.
          const now = runs.model.runs.get(run.id);
          if (now?.status === run.status) return true;
          claims.release(run.id, phase);
          return false;
        }),
    );
  };

  const routes = new Router();
  variableRoutes(routes, core, runs.model, queries);
  checkRoutes(routes, core, runs, checks, taskStages);
  runTaskRoutes(routes, core, runs, taskQueries);
  const publicRoutes = new Router();
  taskCallbackRoutes(publicRoutes, core, taskQueries, taskStages);
  // A run's token for Keel reads what remote-state sharing allows, and nothing else.
  runTokenRoutes(publicRoutes, core, runs.model);

  return {
    executor,
    queries,
    checks,
    liveLogs,
    taskStagesOf: (runId) =>
      taskQueries.stagesOfRun(runId).map((stage) => {
        const { included: _results, ...resource } = presentStage(stage);
        return resource;
      }),
    costEstimateOf(runId) {
      const estimate = checks.costEstimateOfRun(runId);
      return estimate === null ? null : presentCostEstimate(estimate);
    },
    prePlan(run) {
      if (!taskStages.pending(run, 'pre_plan')) return null;
      return taskStages.begin(run, 'pre_plan');
    },
    module: {
      name: 'executor',
      projections: [executorProjection, checksProjection, runTasksProjection],
      // A step that fails errors its run (and stops a phase still running for it), never wedges it.
      reactors: [reactor, stagesReactor(core, runs, checks, priceTable, taskStages)].map((r) =>
        failClosed(runs.model, r, {
          runOf: (event) => event.stream,
          onFailed: (runId) => executor.forceCancel(runId),
        }),
      ),
      timers: [taskStages.timer()],
      runsPublicRoutes: publicRoutes,
      runsRoutes: routes,
      start,
      lead,
      stop: () => {
        executor.abandon();
        claims?.releaseAll();
      },
      idle: async () => {
        await executor.idle();
        await taskStages.idle();
      },
    },
  };
}
