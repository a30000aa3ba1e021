import { join } from 'node:path';
import type { Config } from '../config.js';
import type { ContextModule, Core, SecretsEngine } from '../context.js';
import { listenerTrust } from '../http/listener-tls.js';
import { createRunsRateLimits } from '../http/runs-surface.js';
import { createIdentityContext } from '../runs/identity/index.js';
import { createRunsContext, type Resource, type RunRow, type RunsContext } from '../runs/index.js';
import { createExecutorContext, type ExecutorContext } from '../runs/executor/index.js';
import { fileLiveLogs, memoryLiveLogs } from '../runs/executor/logs.js';
import { createSysContext, type LeaseProvider } from '../secrets/sys/index.js';
import { createAwsContext, type AwsContextOptions } from '../secrets/aws/index.js';
import { createPkiContext } from '../secrets/pki/index.js';
import { createCloud, type CloudService } from '../cloud/index.js';
import type { AuditScope } from '../ui/index.js';
import { AUDIT_PATHS } from '../ui/audit-routes.js';
import { rescoped } from '../secrets/route.js';
import type { SysScope } from '../secrets/sys/routes.js';

/** What the contexts are built with besides the core (a subset of `AppDeps`). */
export interface ContextDeps {
  databasePath?: string;
  executor?: boolean;
  aws?: AwsContextOptions;
  extraContexts?: (core: Core) => ContextModule[];
}

/** Every bounded context, built and bound to one another. */
export interface Contexts {
  readonly identity: ReturnType<typeof createIdentityContext>;
  readonly runs: RunsContext;
  readonly executor: ExecutorContext;
  readonly sys: ReturnType<typeof createSysContext>;
  readonly pki: ReturnType<typeof createPkiContext>;
  readonly cloud: CloudService;
  /** The mountable secrets engines, by type. */
  readonly engines: ReadonlyMap<string, SecretsEngine>;
  readonly limits: ReturnType<typeof createRunsRateLimits>;
  /** Every module, in the order its routes take precedence. */
  readonly modules: readonly ContextModule[];
}

/**
 * Builds the contexts. Some need each other both ways (the runs context and the executor that
 * drives it; the credentials engine and the sys context's mount settings): those links are bound
 * lazily, after both exist. So is `audit`, the scope the system backend serves the audit page's
 * `sys/audit/…` paths with: the page is made after the contexts, from their streams.
 */
export function buildContexts(
  core: Core,
  config: Config,
  deps: ContextDeps,
  links: { audit: () => AuditScope },
): Contexts {
  const { sealer, clock, ids, logger } = core;
  const limits = createRunsRateLimits(clock, config.rateLimit);
  const identity = createIdentityContext(core);
  const liveLogs =
    deps.databasePath === ':memory:'
      ? memoryLiveLogs()
      : fileLiveLogs(join(config.dataDir, 'logs'));
  let prePlan: (run: RunRow) => (() => void) | null = () => null;
  let taskStages: (runId: string) => Resource[] = () => [];
  let costEstimate: (runId: string) => Resource | null = () => null;
  const runs = createRunsContext(core, {
    runListLimit: limits.runListLimit,
    liveLog: (id) => liveLogs.read(id),
    // Bound below: the executor exists only after the runs context it drives.
    prePlan: (run) => prePlan(run),
    taskStages: (runId) => taskStages(runId),
    costEstimate: (runId) => costEstimate(runId),
  });
  const engines = new Map<string, SecretsEngine>();
  const cloud = createCloud({
    location:
      config.store.kind === 'postgres'
        ? config.store
        : {
            kind: 'sqlite',
            path:
              deps.databasePath === ':memory:' ? ':memory:' : join(config.dataDir, 'cloud.sqlite'),
          },
    sealer,
    clock,
    ids,
    logger: logger.child({ component: 'cloud' }),
  });
  // The credentials engine talks to the embedded cloud unless config/root (or the test) says
  // otherwise, trusting Keel's own listener certificates when it calls Keel's own address.
  const trust = listenerTrust(config);
  const aws = createAwsContext(core, {
    ...(deps.aws ?? {
      provider: {
        iamEndpoint: `${config.publicAddress}/cloud/iam`,
        stsEndpoint: `${config.publicAddress}/cloud/sts`,
        credentials: () => cloud.bootstrapRoot(),
        ...(trust === null ? {} : { listener: trust }),
      },
    }),
    // Bound lazily: the sys context is built after this one.
    mountTtls: (accessor) => sys.queries.ttlsOf(accessor),
  });
  // Bound lazily too: the certificate authority's context is built after the sys context.
  const leaseProviders = (): ReadonlyMap<string, LeaseProvider> =>
    new Map(
      sys.queries.mounts().flatMap((m): [string, LeaseProvider][] => {
        if (m.type === 'aws') return [[m.path, aws.leaseProvider]];
        if (m.type === 'pki') return [[m.path, pki.leases]];
        return [];
      }),
    );
  const sys = createSysContext(core, {
    engines: () => engines,
    leaseProviders,
    // The audit page's read-only paths, served by the system backend with the page's scope.
    more: rescoped(AUDIT_PATHS, (_scope: SysScope) => links.audit()),
  });
  const executor = createExecutorContext(core, { runs, liveLogs });
  if (deps.executor !== false) {
    prePlan = (run) => executor.prePlan(run);
    taskStages = (runId) => executor.taskStagesOf(runId);
    costEstimate = (runId) => executor.costEstimateOf(runId);
  }
  const pki = createPkiContext(
    core,
    (accessor) => sys.queries.ttlsOf(accessor),
    (accessor) => sys.queries.mounted(accessor),
  );
  const modules: ContextModule[] = [
    identity.module,
    // Before the runs context: its routes (policy checks, task stages of a run) take precedence.
    ...(deps.executor === false ? [] : [executor.module]),
    runs.module,
    sys.module,
    aws.module,
    pki,
    ...(deps.extraContexts?.(core) ?? []),
  ];
  for (const c of modules) if (c.engine !== undefined) engines.set(c.engine.type, c.engine);
  return { identity, runs, executor, sys, pki, cloud, engines, limits, modules };
}
