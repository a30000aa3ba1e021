import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { ContextModule, Core } from '../context.js';
import { systemMetadata } from '../core/events.js';
import { idStreams } from '../core/streams.js';
import { configurationVersionProjection } from './configuration-versions/projection.js';
import {
  archivistUploadRoutes,
  configurationVersionRoutes,
} from './configuration-versions/routes.js';
import type { Resource } from './jsonapi.js';
import { RunsModel } from './model.js';
import { organizationProjection } from './organizations/projection.js';
import { organizationRoutes } from './organizations/routes.js';
import { membershipRoutes } from './organizations/memberships.js';
import { projectProjection } from './projects/projection.js';
import { projectRoutes } from './projects/routes.js';
import { RunTriggerQueries, runTriggerProjection } from './run-triggers/projection.js';
import { runTriggerReactor, runTriggerRoutes } from './run-triggers/routes.js';
import { notificationReactor, notificationRetryTimer } from './notifications/deliver.js';
import { OidcIssuer, oidcKeyProjection } from './oidc/keys.js';
import { NotificationQueries, notificationProjection } from './notifications/projection.js';
import { notificationRoutes } from './notifications/routes.js';
import { teamProjectProjection } from './team-projects/projection.js';
import { teamProjectRoutes } from './team-projects/routes.js';
import { varsetProjection } from './varsets/projection.js';
import { varsetRoutes } from './varsets/routes.js';
import { executorCommands, runDecider, type Decide } from './run/commands.js';
import { commentRoutes } from './run/comments.js';
import { archivistLogRoutes, phaseRoutes } from './run/logs.js';
import { runHistoryProjection } from './run/history.js';
import { runProjection } from './run/projection.js';
import { failClosed } from './run/fail-closed.js';
import { queueReactor, reconcileWorkspace, runHoldingUp } from './run/queue.js';
import { organizationQueueRoutes } from './run/org-queue.js';
import { runRoutes, type RunRecords } from './run/routes.js';
import { stateVersionProjection } from './state-versions/projection.js';
import { recordStateVersion, recordStateVersionSync } from './state-versions/record.js';
import { stateVersionRoutes } from './state-versions/routes.js';
import { stateArchivistRoutes, stateUploadRoutes } from './state-versions/upload.js';
import { workspaceProjection } from './workspaces/projection.js';
import { workspaceRoutes } from './workspaces/routes.js';
import { workspaceTagRoutes } from './workspaces/tags.js';

export { RunsModel } from './model.js';
export { executorCommands } from './run/commands.js';
import type { RunRow } from './run/projection.js';
export type { RunRow } from './run/projection.js';
export type { Resource } from './jsonapi.js';

/** Paths of the two run lists, which have their own rate limit (30 per minute). */
export const RUN_LIST_PATHS: readonly RegExp[] = [
  /^\/api\/v2\/workspaces\/[^/]+\/runs\/?$/,
  /^\/api\/v2\/organizations\/[^/]+\/runs\/?$/,
];

/** Paths under `/api/v2` that carry their own secret and take no token: uploads and log reads. */
export const PUBLIC_PATHS: readonly RegExp[] = [/^\/api\/v2\/archivist\//];

type ExecutorCommands = typeof executorCommands;

/**
 * What the executor (and the queue) call to move a run: each command is checked by the run
 * machine and recorded with the executor as the actor; the promise settles once it is durable.
 * The arguments are those of `executorCommands`, which names and documents them.
 */
export type RunExecutor = {
  [K in keyof ExecutorCommands]: (...args: Parameters<ExecutorCommands[K]>) => Promise<void>;
};

/**
 * The same commands, decided and appended at once: only inside `core.handler.atomically`, where
 * they commit together with the other commands of that function.
 */
export type RunExecutorSync = {
  [K in keyof ExecutorCommands]: (...args: Parameters<ExecutorCommands[K]>) => void;
};

export interface RunsContext {
  readonly module: ContextModule;
  readonly model: RunsModel;
  readonly executor: RunExecutor;
  /** The executor's commands for use inside `core.handler.atomically` only. */
  readonly executorSync: RunExecutorSync;
  /** Routes without a token (upload and log addresses); mounted under `/api/v2` before authentication and body parsing. */
  readonly publicRoutes: Router;
  /** Record a workspace's new state (the executor, after an apply). */
  recordStateVersion(input: StateVersionInput): Promise<{ id: string; serial: number }>;
  /** The same, inside `core.handler.atomically` only. */
  recordStateVersionSync(input: StateVersionInput): { id: string; serial: number };
  /** Bring one workspace's queue to its next step now (the reactor does this after every event). */
  reconcile(workspaceId: string): Promise<void>;
  /** Keel as the OIDC issuer of workload identity tokens. */
  readonly oidc: OidcIssuer;
}

export interface StateVersionInput {
  workspaceId: string;
  runId: string | null;
  state: string;
  engineVersion?: string | null;
}

export interface RunsContextOptions {
  /** The run-list rate limiter from the HTTP kernel; none in tests. */
  runListLimit?: Middleware;
  /** The text a phase has logged so far while it runs (the executor's live logs). */
  liveLog?: (phaseId: string) => string | null;
  /** A run's task stages as resources, for `include=task_stages` (the executor records them). */
  taskStages?: (runId: string) => Resource[];
  /** A run's cost estimate as a resource once it has one (the executor records them). */
  costEstimate?: (runId: string) => Resource | null;
  /**
   * Starts a run's pre-plan tasks instead of queuing its plan (the executor). Called inside the
   * queue's `atomically` function: it records the stage's commands and answers with what to do
   * once they are durable (send the tasks their payloads), or null when the run has no such tasks.
   */
  prePlan?: (run: RunRow) => (() => void) | null;
}

/** The runs context's registry. */
export function createRunsContext(core: Core, options: RunsContextOptions = {}): RunsContext {
  const model = new RunsModel(core);
  const runListLimit: Middleware =
    options.runListLimit ??
    (async (_ctx, next) => {
      await next();
    });

  const routes = new Router();
  organizationRoutes(routes, model);
  membershipRoutes(routes, model);
  projectRoutes(routes, model);
  teamProjectRoutes(routes, model);
  varsetRoutes(routes, model);
  const triggers = new RunTriggerQueries(core.db);
  runTriggerRoutes(routes, model, triggers);
  const notifications = new NotificationQueries(core.db);
  notificationRoutes(routes, model, notifications);
  workspaceRoutes(routes, model);
  workspaceTagRoutes(routes, model);
  configurationVersionRoutes(routes, model);
  const records: RunRecords = {
    taskStages: (runId) => options.taskStages?.(runId) ?? [],
    costEstimate: (runId) => options.costEstimate?.(runId) ?? null,
  };
  organizationQueueRoutes(routes, model, records);
  runRoutes(routes, model, runListLimit, records);
  phaseRoutes(routes, model);
  commentRoutes(routes, model);
  stateVersionRoutes(routes, model);
  stateUploadRoutes(routes, model);

  const publicRoutes = new Router();
  archivistUploadRoutes(publicRoutes, model);
  archivistLogRoutes(publicRoutes, model, options.liveLog);
  stateArchivistRoutes(publicRoutes, model);

  const metadata = systemMetadata('executor');
  const decisionOf = (name: string, runId: string, rest: unknown[]) =>
    (executorCommands[name as keyof ExecutorCommands] as (id: string, ...a: unknown[]) => Decide)(
      runId,
      ...rest,
    );
  const executor = Object.fromEntries(
    Object.keys(executorCommands).map((name) => [
      name,
      async (runId: string, ...rest: unknown[]) => {
        await core.handler.handle(runId, runDecider, decisionOf(name, runId, rest), metadata);
      },
    ]),
  ) as RunExecutor;
  const executorSync = Object.fromEntries(
    Object.keys(executorCommands).map((name) => [
      name,
      (runId: string, ...rest: unknown[]) => {
        core.handler.handleSync(runId, runDecider, decisionOf(name, runId, rest), metadata);
      },
    ]),
  ) as RunExecutorSync;

  const oidc = new OidcIssuer(core);
  return {
    model,
    executor,
    executorSync,
    publicRoutes,
    oidc,
    reconcile: (workspaceId) => reconcileWorkspace(model, workspaceId, options.prePlan),
    recordStateVersion: (input) => recordStateVersion(model, input),
    recordStateVersionSync: (input) => recordStateVersionSync(model, input),
    module: {
      name: 'runs',
      // a run's or configuration version's stream is its id
      streams: { run: idStreams('run'), 'configuration-version': idStreams('cv') },
      // Order matters: the workspaces read model looks up rows of the two before it.
      projections: [
        configurationVersionProjection,
        runProjection,
        runHistoryProjection,
        stateVersionProjection,
        organizationProjection,
        projectProjection,
        teamProjectProjection,
        varsetProjection,
        runTriggerProjection,
        notificationProjection(core.config.notificationRetryMs),
        oidcKeyProjection,
        workspaceProjection,
      ],
      reactors: [
        failClosed(model, queueReactor(model, options.prePlan), {
          runOf: (event) => runHoldingUp(model, event),
        }),
        // A step of these that keeps failing is dead-lettered; it errors no run: a delivery or a
        // follower's run never holds up the run that caused it.
        failClosed(model, runTriggerReactor(model, triggers, core.logger), { runOf: () => null }),
        failClosed(model, notificationReactor(model, notifications), { runOf: () => null }),
      ],
      // A failed webhook delivery is tried again once its backoff is over.
      timers: [notificationRetryTimer(model, notifications)],
      runsRoutes: routes,
      runsPublicRoutes: publicRoutes,
    },
  };
}
