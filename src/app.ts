import type { RequestListener } from 'node:http';
import type { Clock } from './core/clock.js';
import { systemClock } from './core/clock.js';
import type { Ids } from './core/ids.js';
import { randomIds } from './core/ids.js';
import type { Logger } from './core/logger.js';
import { createLogger } from './core/logger.js';
import { Projections } from './core/projections.js';
import { Reactors } from './core/reactors.js';
import type { LogEntry } from './core/event-store.js';
import { writeAnchor } from './core/anchors.js';
import { checkAtStartUp, type StartUpCheck } from './core/read-model-check.js';
import { logChanges, logHeard, logVersion } from './core/log-watch.js';
import { SharedLog } from './core/shared-log.js';
import { StatisticsAsTheLogGrows } from './core/statistics.js';
import { PostgresDatabase } from './core/store/postgres.js';
import { Scheduler, scheduleProjection } from './core/schedule.js';
import { sharesLog, type Config } from './config.js';
import type { ContextModule, Core } from './context.js';
import type { RunsContext } from './runs/index.js';
import type { ExecutorContext } from './runs/executor/index.js';
import type { Durability } from './core/group-commit.js';
import type { createPkiContext } from './secrets/pki/index.js';
import type { AwsContextOptions } from './secrets/aws/index.js';
import { machines } from '../machines/index.js';
import type { StreamKind } from './ui/index.js';
import { createUi, streamKinds } from './ui/index.js';
import type { CloudService } from './cloud/index.js';
import { openLog } from './wiring/log.js';
import { buildContexts } from './wiring/contexts.js';
import { httpHandler } from './wiring/http.js';
import { bootstrap, tokenMint, type Bootstrap, type TokenMint } from './wiring/bootstrap.js';

export type { Bootstrap } from './wiring/bootstrap.js';

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
  /**
   * Whether the read models authorization and issuance trust are rebuilt from the verified log
   * and compared before anything reads them (default true; ADR 0094). `keel replay`, which
   * rebuilds every read model anyway, turns it off.
   */
  checkReadModels?: boolean;
  /** How a batch of commands reaches the disk (tests only; see `LogDeps`). */
  durability?: Durability;
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
  readonly tokens: TokenMint;
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

/**
 * The composition root: every dependency is built here and passed down as an argument. The log
 * is opened in `wiring/log.ts`, the contexts built in `wiring/contexts.ts`, the HTTP surfaces
 * ordered in `wiring/http.ts`; this function joins them and runs the app's lifecycle.
 */
export function createApp(config: Config, deps: AppDeps = {}): App {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? createLogger({ level: config.logLevel });
  const opened = openLog(config, { ...deps, clock, ids: deps.ids ?? randomIds, logger });
  const { core, chain, checkpointer, sqlite } = opened;
  const { db, store } = core;
  // The audit page (`ui`, below) is made from the contexts' streams; the system backend serves
  // its `sys/audit/…` paths, which are asked for only once the HTTP handler exists.
  const contexts = buildContexts(core, config, deps, { audit: () => ui.audit });
  const { runs, executor, cloud, pki, modules } = contexts;

  const projections = new Projections(db, [
    scheduleProjection,
    ...modules.flatMap((c) => c.projections),
  ]);
  const { rebuilt } = projections.open((after, limit) => store.readAll(after, limit));
  if (rebuilt.length > 0) logger.info({ rebuilt }, 'read models rebuilt from the log');
  let readModels: StartUpCheck | undefined;
  if (deps.checkReadModels !== false) {
    const started = performance.now();
    try {
      readModels = checkAtStartUp(db, sqlite, !sharesLog(config), chain, projections.list);
    } catch (err) {
      void checkpointer?.stop();
      db.close();
      throw err;
    }
    const { how, events, rows } = readModels;
    logger.info(
      { how, events, rows, ms: Math.round(performance.now() - started) },
      'guarded read models match the event log',
    );
  }
  opened.project(projections.apply);

  const reactors = new Reactors(
    db,
    store,
    logger,
    modules.flatMap((c) => c.reactors ?? []),
  );
  const scheduler = new Scheduler(
    db,
    clock,
    logger,
    modules.flatMap((c) => c.timers ?? []),
    // A disabled mount's timers (rotations, CRL rebuilds, tidies) never fire again.
    (accessor) => contexts.sys.queries.mounted(accessor),
  );
  // Other processes may append: workers on one file, or any node on a PostgreSQL store.
  const shared = sharesLog(config)
    ? new SharedLog(
        db,
        logVersion(db, sqlite),
        clock,
        logger,
        reactors,
        config.pollIntervalMs,
        logHeard(db),
        logChanges(db),
      )
    : undefined;
  // Until `start`, the caller drives the reactors (`settle`: tests, tools), as with one process.
  let started = false;
  const leading = () => !started || (shared?.leading ?? true);
  if (deps.wakeReactorsOnAppend !== false) {
    if (shared === undefined) store.onAppended((events) => reactors.notify(events));
    else {
      // Reactors run in the leading process only (ADR 0080). What other processes appended is
      // told as this one's batch begins, so its own appends that follow are told without a gap.
      const tell = (appended: readonly LogEntry[]) => {
        if (leading()) reactors.notify(appended);
      };
      store.onAppended(tell);
      store.onForeignAppended(tell);
    }
  }

  let contextsStarted = false;
  const startContexts = () => {
    if (contextsStarted) return;
    contextsStarted = true;
    for (const c of modules) c.start?.();
  };

  const ui = createUi(
    core,
    deps.streamKinds ??
      streamKinds(
        machines,
        Object.fromEntries(modules.flatMap((c) => Object.entries(c.streams ?? {}))),
      ),
  );
  const handle = httpHandler(core, config, contexts, { ui, shared, leading });

  const timers: NodeJS.Timeout[] = [];
  // The leader gathers PostgreSQL's planner statistics as the log grows (ADR 0113).
  const statistics =
    db instanceof PostgresDatabase
      ? new StatisticsAsTheLogGrows(() => db.analyze(), logger)
      : undefined;
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
    contexts: modules,
    runs,
    executor,
    cloud,
    pki,
    tokens: tokenMint(contexts),
    callback: (req, res) => {
      void handle(req, res);
    },
    bootstrap: () => (store.lastPosition() > 0 ? null : bootstrap(config, contexts)),
    leading,
    start() {
      started = true;
      const poll = () => {
        if (shared !== undefined && !shared.lead()) return;
        startContexts();
        for (const c of modules) {
          try {
            c.lead?.();
          } catch (err) {
            // The store out of reach (a database failing over), say: asked again next poll.
            logger.error({ err, context: c.name }, 'leading work failed; tried again next poll');
          }
        }
        reactors.notify();
        void scheduler
          .tick()
          .catch((err: unknown) => logger.error({ err }, 'schedule tick failed'));
        statistics?.check(() => store.lastPosition());
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
        await core.handler.drained();
        await reactors.settle();
        const before = store.lastPosition();
        // Background work (running phases) appends when it ends; settle until the log is quiet.
        await Promise.all(
          modules.map((c) => (c.idle === undefined ? Promise.resolve() : c.idle())),
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
      for (const c of modules) c.stop?.();
      await reactors.stop();
      await core.handler.close();
      anchor();
      try {
        readModels?.seal();
      } catch (err) {
        // Only the next start's shortcut is lost: it rebuilds and compares instead.
        logger.error({ err }, 'could not seal the guarded read models');
      }
      cloud.close();
      await checkpointer?.stop();
      await statistics?.settled();
      db.close();
    },
  };
  return app;
}
