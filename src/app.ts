import { join } from 'node:path';
import type { RequestListener } from 'node:http';
import Koa from 'koa';
import type { Middleware } from 'koa';
import type { Clock } from './core/clock.js';
import { systemClock } from './core/clock.js';
import { CommandHandler } from './core/command-handler.js';
import type { Db } from './core/database.js';
import { Checkpointer } from './core/checkpointer.js';
import { openDatabase } from './core/database.js';
import { EventStore } from './core/event-store.js';
import { systemMetadata } from './core/events.js';
import type { Ids } from './core/ids.js';
import { randomIds } from './core/ids.js';
import type { Logger } from './core/logger.js';
import { createLogger } from './core/logger.js';
import { Projections } from './core/projections.js';
import { Reactors } from './core/reactors.js';
import { ChainKey } from './core/chain.js';
import { openCheckedChain, writeAnchor } from './core/anchors.js';
import { SharedLog } from './core/shared-log.js';
import { Scheduler, scheduleProjection } from './core/schedule.js';
import { Sealer, loadSealKey } from './core/seal.js';
import type { Config } from './config.js';
import type { ContextModule, Core, SecretsEngine } from './context.js';
import { createRunsRateLimits, runsSurface } from './http/runs-surface.js';
import { createIdentityContext } from './runs/identity/index.js';
import { createTerraformCli } from './runs/cli/index.js';
import { createRunsContext, type Resource, type RunRow, type RunsContext } from './runs/index.js';
import { createExecutorContext, type ExecutorContext } from './runs/executor/index.js';
import { fileLiveLogs, memoryLiveLogs } from './runs/executor/logs.js';
import { createSysContext } from './secrets/sys/index.js';
import type { LeaseProvider } from './secrets/sys/index.js';
import { createAwsContext } from './secrets/aws/index.js';
import { createPkiContext } from './secrets/pki/index.js';
import type { AwsContextOptions } from './secrets/aws/index.js';
import { secretsSurface } from './secrets/surface.js';
import { machines } from '../machines/index.js';
import { checkFolds } from './core/machine-decider.js';
import type { StreamKind } from './ui/index.js';
import { createUi, streamKinds } from './ui/index.js';
import type { CloudService } from './cloud/index.js';
import { createCloud } from './cloud/index.js';
import { requestId } from './http/request-id.js';

export interface AppDeps {
  clock?: Clock;
  ids?: Ids;
  logger?: Logger;
  /** The 32-byte seal key; by default `config.sealKey` (KEEL_SEAL_KEY) or `<data>/keyring`. */
  sealKey?: Buffer;
  /** Where the event log lives; by default `<data>/keel.sqlite`. `:memory:` for tests. */
  databasePath?: string;
  /**
   * Whether each append wakes the reactors (default true). Tests that step through reactor moves
   * one at a time turn it off and call `settle()` themselves.
   */
  wakeReactorsOnAppend?: boolean;
  /**
   * Checkpoint the write-ahead log on a worker thread instead of inside commits (ADR 0006). The
   * daemon turns it on; tests leave it off (default false) to keep one thread per app.
   */
  backgroundCheckpoints?: boolean;
  /** More contexts to compose with the built-in ones (tests and embedding). */
  extraContexts?: (core: Core) => ContextModule[];
  /** Which machine folds which streams on the `/ui` page; by default every machine in `machines/`. */
  streamKinds?: readonly StreamKind[];
  /**
   * Whether the executor runs plans and applies (default true). Tests that send the executor's
   * commands themselves, to observe each step, turn it off.
   */
  executor?: boolean;
  /** How the cloud credentials engine reaches IAM/STS (tests point it at an embedded cloud). */
  aws?: AwsContextOptions;
}

/** What first start writes to `<data>/bootstrap.json` (mode 0600). */
export interface Bootstrap {
  address: string;
  runs: { user_token: string };
  secrets: { root_token: string };
  /** The embedded cloud's administrator key and endpoints (what the credentials engine talks to). */
  cloud: {
    access_key_id: string;
    secret_access_key: string;
    iam_endpoint: string;
    sts_endpoint: string;
    region: string;
  };
}

export interface App {
  readonly core: Core;
  readonly projections: Projections;
  readonly reactors: Reactors;
  readonly scheduler: Scheduler;
  readonly callback: RequestListener;
  readonly contexts: readonly ContextModule[];
  /** The runs context: its read models and the commands the executor sends. */
  readonly runs: RunsContext;
  /** The executor: drivers, live logs, state versions and workspace variables. */
  readonly executor: ExecutorContext;
  /** The embedded IAM/STS service (its own store; not part of the event log). */
  readonly cloud: CloudService;
  /** The certificate authority engine's in-process interface (benchmarks, tools). */
  readonly pki: ReturnType<typeof createPkiContext>;
  /** Mint tokens outside HTTP (`keel token`, for a lost bootstrap.json). */
  readonly tokens: {
    runsUserToken(username: string, description: string): string;
    secretsToken(policies: string[], ttlSeconds: number): string;
  };
  /** On an empty log: create the admin user, the root token and the default mounts. */
  bootstrap(): Bootstrap | null;
  /**
   * Start polling reactors and the schedule (the daemon; tests drive `settle` instead). With
   * several workers, only the process holding the leadership lease runs them.
   */
  start(): void;
  /** Whether this process runs the reactors and timers (always, with one process). */
  leading(): boolean;
  /** Run reactors and due timers until nothing moves (tests, after moving the fake clock). */
  settle(): Promise<void>;
  close(): Promise<void>;
}

/** The composition root: every dependency is built here and passed down as an argument. */
export function createApp(config: Config, deps: AppDeps = {}): App {
  const clock = deps.clock ?? systemClock;
  const ids = deps.ids ?? randomIds;
  const logger = deps.logger ?? createLogger({ level: config.logLevel });
  const db: Db = openDatabase(
    deps.databasePath ?? join(config.dataDir, 'keel.sqlite'),
    config.sync,
  );
  if (config.checkFolds) checkFolds(true);
  const masterKey = deps.sealKey ?? loadSealKey(config.dataDir, config.sealKey ?? undefined);
  const chain = (() => {
    try {
      const headFile =
        deps.databasePath === undefined ? join(config.dataDir, 'audit', 'head.json') : null;
      return openCheckedChain(db, new ChainKey(masterKey), headFile, clock.now());
    } catch (err) {
      db.close();
      throw err;
    }
  })();
  const checkpointer =
    deps.backgroundCheckpoints === true
      ? Checkpointer.start(db, {
          onError: (err) =>
            logger.error({ err }, 'the checkpoint worker failed; checkpoints are inline again'),
        })
      : undefined;
  // Several processes on one file (ADR 0080): the `--workers` primary checkpoints for them all.
  if (config.workers > 1 && !db.memory && checkpointer === undefined) {
    Checkpointer.leaveCheckpoints(db);
  }
  const sealer = new Sealer(masterKey);

  // The store calls the projections inline; they are registered right after the contexts exist.
  let inline: (e: Parameters<Projections['apply']>[0]) => void = () => undefined;
  const store = new EventStore(db, clock, chain, (e) => inline(e));
  const handler = new CommandHandler(store, clock);
  const core: Core = { db, store, handler, sealer, clock, ids, logger, config };

  const limits = createRunsRateLimits(clock, config.rateLimit);
  const identity = createIdentityContext(core);
  const liveLogs =
    deps.databasePath === ':memory:'
      ? memoryLiveLogs()
      : fileLiveLogs(join(config.dataDir, 'logs'));
  let prePlan: (run: RunRow) => boolean = () => false;
  let taskStages: (runId: string) => Resource[] = () => [];
  const runs = createRunsContext(core, {
    runListLimit: limits.runListLimit,
    liveLog: (id) => liveLogs.read(id),
    // Bound below: the executor exists only after the runs context it drives.
    prePlan: (run) => prePlan(run),
    taskStages: (runId) => taskStages(runId),
  });
  const engines = new Map<string, SecretsEngine>();
  const cloud = createCloud({
    dbPath: deps.databasePath === ':memory:' ? ':memory:' : join(config.dataDir, 'cloud.sqlite'),
    sealer,
    clock,
    ids,
    logger: logger.child({ component: 'cloud' }),
  });
  // The credentials engine talks to the embedded cloud unless config/root (or the test) says otherwise.
  const aws = createAwsContext(core, {
    ...(deps.aws ?? {
      provider: {
        iamEndpoint: `${config.publicAddress}/cloud/iam`,
        stsEndpoint: `${config.publicAddress}/cloud/sts`,
        credentials: () => cloud.bootstrapRoot(),
      },
    }),
    // Bound lazily: the sys context is built after this one.
    mountTtls: (accessor) => sys.queries.ttlsOf(accessor),
  });
  const leaseProviders = (): ReadonlyMap<string, LeaseProvider> =>
    new Map(
      sys.queries
        .mounts()
        .filter((m) => m.type === 'aws')
        .map((m) => [m.path, aws.leaseProvider]),
    );
  const sys = createSysContext(core, {
    engines: () => engines,
    leaseProviders,
  });
  const executor = createExecutorContext(core, { runs, liveLogs });
  if (deps.executor !== false) {
    prePlan = (run) => executor.prePlan(run);
    taskStages = (runId) => executor.taskStagesOf(runId);
  }
  const pki = createPkiContext(core, (accessor) => sys.queries.ttlsOf(accessor));
  const contexts: ContextModule[] = [
    identity.module,
    // Before the runs context: its routes (policy checks, task stages of a run) take precedence.
    ...(deps.executor === false ? [] : [executor.module]),
    runs.module,
    sys.module,
    aws.module,
    pki,
    ...(deps.extraContexts?.(core) ?? []),
  ];
  for (const c of contexts) if (c.engine !== undefined) engines.set(c.engine.type, c.engine);

  const projections = new Projections(db, [
    scheduleProjection,
    ...contexts.flatMap((c) => c.projections),
  ]);
  const { rebuilt } = projections.open((after, limit) => store.readAll(after, limit));
  if (rebuilt.length > 0) logger.info({ rebuilt }, 'read models rebuilt from the log');
  inline = projections.apply;

  const reactors = new Reactors(
    db,
    store,
    logger,
    contexts.flatMap((c) => c.reactors ?? []),
  );
  const scheduler = new Scheduler(
    db,
    clock,
    logger,
    contexts.flatMap((c) => c.timers ?? []),
  );
  const shared =
    config.workers > 1
      ? new SharedLog(db, clock, logger, reactors, config.pollIntervalMs)
      : undefined;
  const leading = () => shared?.leading ?? true;
  if (deps.wakeReactorsOnAppend !== false) {
    store.onAppended(
      shared === undefined
        ? (events) => reactors.notify(events)
        : (events) => {
            // Reactors run in the leading process only (ADR 0080).
            if (shared.leading) reactors.notify(events);
          },
    );
  }

  let contextsStarted = false;
  const startContexts = () => {
    if (contextsStarted) return;
    contextsStarted = true;
    for (const c of contexts) c.start?.();
  };

  const ui = createUi(core, deps.streamKinds ?? streamKinds(machines));
  ui.registerRoutes(sys.routes);

  const koa = new Koa({ proxy: false });
  if (shared !== undefined) {
    // Before anything is read: rows remembered before another process's commit are forgotten.
    koa.use((_ctx, next) => {
      shared.check();
      return next();
    });
  }
  koa.use(requestId());
  // The cloud reads its own bodies and answers in AWS's dialect; it passes other paths on.
  koa.use(cloud.middleware());
  // Service discovery, `/app/…` addresses and `terraform login` for the terraform CLI.
  koa.use(createTerraformCli(core, identity, runs.model));
  koa.use(
    prefixed(
      '/api/v2',
      runsSurface(
        {
          clock,
          logger,
          bodyLimitBytes: config.bodyLimitBytes,
          rateLimit: config.rateLimit,
          principal: identity.principal,
          routers: contexts.flatMap((c) => (c.runsRoutes === undefined ? [] : [c.runsRoutes])),
          publicRouters: contexts.flatMap((c) =>
            c.runsPublicRoutes === undefined ? [] : [c.runsPublicRoutes],
          ),
        },
        limits,
      ),
    ),
  );
  koa.use(
    prefixed(
      '/v1',
      secretsSurface({
        core,
        queries: sys.queries,
        sys: sys.routes,
        engines,
        standby: () => !leading(),
      }),
    ),
  );
  koa.use(prefixed('/ui', ui.page));
  // Browsers ask for /favicon.ico at the root; the page's icon answers it.
  koa.use(async (ctx, next) => {
    if (ctx.path === '/favicon.ico') ctx.redirect('/ui/favicon.svg');
    else await next();
  });
  koa.use(async (ctx) => {
    ctx.status = 404;
    ctx.body = { errors: [`no route for ${ctx.method} ${ctx.path}`] };
  });

  const handle = koa.callback();
  const timers: NodeJS.Timeout[] = [];
  // The head is anchored on start, every anchorIntervalMs while serving, and on close.
  let anchoredAt = Number.NEGATIVE_INFINITY;
  const anchor = () => {
    anchoredAt = clock.now().getTime();
    try {
      writeAnchor(db, chain, clock.now());
    } catch (err) {
      logger.error({ err }, 'could not anchor the audit chain head');
    }
  };
  const app: App = {
    core,
    projections,
    reactors,
    scheduler,
    contexts,
    runs,
    executor,
    cloud,
    pki,
    tokens: {
      runsUserToken(username, description) {
        const user = identity.queries.userByName(username);
        if (user === undefined) throw new Error(`no user named ${JSON.stringify(username)}`);
        return identity.commands.createToken(
          {
            kind: 'user',
            ownerId: user.id,
            ownerName: user.username,
            organization: null,
            description,
            expiredAt: null,
            createdBy: null,
          },
          systemMetadata('keel token'),
        ).token;
      },
      secretsToken(policies, ttlSeconds) {
        return sys.commands.createToken(
          { policies, displayName: 'token-cli', ttlSeconds, parentAccessor: null, meta: {} },
          systemMetadata('keel token'),
        ).token;
      },
    },
    callback: (req, res) => {
      void handle(req, res);
    },
    bootstrap() {
      if (store.lastPosition() > 0) return null;
      const meta = systemMetadata('bootstrap');
      const admin = identity.commands.createUser(
        { username: 'admin', email: 'admin@keel.local', admin: true },
        meta,
      );
      const userToken = identity.commands.createToken(
        {
          kind: 'user',
          ownerId: admin.id,
          ownerName: admin.username,
          organization: null,
          description: 'bootstrap',
          expiredAt: null,
          createdBy: null,
        },
        meta,
      );
      const root = sys.commands.createToken(
        { policies: ['root'], displayName: 'root', ttlSeconds: 0, parentAccessor: null, meta: {} },
        meta,
      );
      for (const type of ['aws', 'pki']) {
        if (!engines.has(type)) continue;
        sys.commands.enableMount(
          {
            path: `${type}/`,
            type,
            description: `${type} secrets engine`,
            config: { default_lease_ttl: 0, max_lease_ttl: 0 },
          },
          sys.queries.mounts().map((m) => m.path),
          meta,
        );
      }
      const rootKey = cloud.bootstrapRoot();
      return {
        address: config.publicAddress,
        runs: { user_token: userToken.token },
        secrets: { root_token: root.token },
        cloud: {
          access_key_id: rootKey.accessKeyId,
          secret_access_key: rootKey.secretAccessKey,
          iam_endpoint: `${config.publicAddress}/cloud/iam`,
          sts_endpoint: `${config.publicAddress}/cloud/sts`,
          region: 'us-east-1',
        },
      };
    },
    leading,
    start() {
      const poll = () => {
        if (shared !== undefined && !shared.lead()) return;
        startContexts();
        reactors.notify();
        void scheduler
          .tick()
          .catch((err: unknown) => logger.error({ err }, 'schedule tick failed'));
      };
      poll();
      anchor();
      timers.push(
        setInterval(() => {
          poll();
          if (clock.now().getTime() - anchoredAt >= config.anchorIntervalMs) anchor();
        }, config.pollIntervalMs),
      );
      if (shared !== undefined) timers.push(shared.watchTimer());
      for (const t of timers) t.unref();
    },
    async settle() {
      startContexts();
      for (let i = 0; i < 100; i++) {
        await reactors.settle();
        const before = store.lastPosition();
        // Background work (running phases) appends when it ends; settle until the log is quiet.
        await Promise.all(
          contexts.map((c) => (c.idle === undefined ? Promise.resolve() : c.idle())),
        );
        if ((await scheduler.tick()) === 0 && store.lastPosition() === before) {
          await reactors.settle();
          return;
        }
      }
      throw new Error('the schedule kept firing after 100 rounds');
    },
    async close() {
      for (const t of timers) clearInterval(t);
      shared?.release();
      ui.close();
      for (const c of contexts) c.stop?.();
      await reactors.stop();
      anchor();
      cloud.close();
      await checkpointer?.stop();
      db.close();
    },
  };
  return app;
}

function prefixed(prefix: string, middleware: Middleware): Middleware {
  return async (ctx, next) => {
    if (ctx.path === prefix || ctx.path.startsWith(`${prefix}/`)) {
      await middleware(ctx, next);
      return;
    }
    await next();
  };
}
