import type { ApplyResult, Driver, Execution, PhaseEnvironment, PlanResult } from './driver.js';
import type { LiveLogs } from './logs.js';
import { ExecutionPool, PhaseStopped } from './pool.js';
import { redactPlan } from './redact.js';
import { STEP_ATTEMPTS } from '../run/fail-closed.js';
import type {
  ApplyCounts,
  Json,
  PlanCounts,
  PlanJson,
  RunFlags,
  RunVariable,
  StateV4,
  WorkspaceVariable,
} from './types.js';

/** What the executor needs to know about a run to execute one of its phases. */
export interface PhaseRun {
  id: string;
  workspaceId: string;
  configurationVersionId: string;
  flags: RunFlags;
  variables: readonly RunVariable[];
}

export type Phase = 'plan' | 'apply';

/** What a phase's preparation may use: the phase's log, and the signal its cancel aborts. */
export interface PhaseIo {
  stopped: AbortSignal;
  log(line: string): void;
}

/**
 * The runs context as the executor sees it: where inputs come from and where outcomes go. Each
 * outcome method sends one command, so a phase's result is recorded atomically; it settles once
 * the outcome is durable.
 */
export interface ExecutorPort {
  configuration(configurationVersionId: string): Buffer;
  currentState(workspaceId: string): StateV4 | null;
  /**
   * Workspace variables with sensitive values unsealed, for the phase only (with the phase: the
   * workload identity tokens and credentials they ask for too, whose gathering may write to the
   * phase's log and is cut short by its cancel: `io`).
   */
  workspaceVariables(
    workspaceId: string,
    phase?: { runId: string; phase: Phase },
    io?: PhaseIo,
  ): Promise<WorkspaceVariable[]>;
  planArtifact(runId: string): Buffer | null;
  /** The id under which the phase's log is served (`plan-…`, `apply-…`). */
  phaseId(runId: string, phase: Phase): string;
  planFinished(
    runId: string,
    result: {
      plan: PlanJson;
      /** The plan JSON with sensitive values redacted (see `redactPlan`). */
      redacted: Json;
      counts: PlanCounts;
      artifact: Buffer;
      log: string;
    },
  ): Promise<void>;
  applyFinished(
    runId: string,
    result: { state: StateV4; counts: ApplyCounts; log: string },
  ): Promise<void>;
  /** The phase failed; an apply may still have changed state, which must be kept. */
  phaseErrored(
    runId: string,
    phase: Phase,
    failure: { message: string; log: string; state?: StateV4 },
  ): Promise<void>;
  /** The phase stopped after an interrupt or kill. */
  phaseCanceled(
    runId: string,
    phase: Phase,
    outcome: { log: string; state?: StateV4 },
  ): Promise<void>;
}

/** Options of an executor. */
export interface ExecutorOptions {
  port: ExecutorPort;
  logs: LiveLogs;
  /** The driver for a workspace (the builtin one unless the workspace or daemon names a binary). */
  driverFor(workspaceId: string): Driver;
  concurrency: number;
  /**
   * How long a plan or apply may run before it is killed and its run errored (as the reference's
   * plan and apply timeouts); {@link PHASE_TIMEOUT_MS} by default.
   */
  phaseTimeoutMs?: number;
  /**
   * What a phase's commands get besides their inputs (run-env.ts: TFC_* variables, the run's token
   * for Keel, Keel's CA), asked as the phase starts; nothing when absent.
   */
  environmentFor?(run: PhaseRun, phase: Phase, lifetimeMs: number): PhaseEnvironment;
  /** Faults (not run failures) are reported here; the run is errored with the message. */
  onFault?(runId: string, error: unknown): void;
  /**
   * Whether this process may still record the phase's outcome (its claim, when several processes
   * share the log): asked when the phase ends; a phase another process took over records nothing.
   */
  owns?(runId: string, phase: Phase): boolean;
}

/**
 * Log lines never carry a sensitive variable's value, whatever the driver prints: each
 * occurrence becomes `(sensitive value)`. Very short values are left alone (they would mask
 * unrelated text and reveal little).
 */
export function redactor(secrets: readonly string[]): (line: string) => string {
  const values = [...new Set(secrets.filter((s) => s.length >= 4))].sort(
    (a, b) => b.length - a.length,
  );
  if (values.length === 0) return (line) => line;
  // A quoted value (as plans print strings) loses its quotes too, as terraform shows it.
  const mask = (text: string, secret: string) =>
    text
      .split(JSON.stringify(secret))
      .join('(sensitive value)')
      .split(secret)
      .join('(sensitive value)');
  return (line) => values.reduce(mask, line);
}

/** A phase that runs longer is killed and its run errored: two hours, the reference's default. */
export const PHASE_TIMEOUT_MS = 2 * 60 * 60 * 1000;

/** A phase that ran out of time: recorded as an error, not as the cancel its kill looks like. */
class PhaseTimedOut extends Error {
  constructor(
    phase: Phase,
    ms: number,
    readonly state?: StateV4,
  ) {
    super(
      `the ${phase} did not finish within ${ms % 60_000 === 0 ? `${ms / 60_000} minutes` : `${ms} ms`} and was stopped`,
    );
  }
}

/** Lines the executor adds to a phase's log around the driver's own output. */
export const RECOVERY_LINES = {
  plan: 'Keel restarted while this plan was running; the plan is started again from the beginning.',
  apply:
    'Keel restarted while this apply was running; it cannot tell which changes were made, so the run is errored. Check the real infrastructure and the workspace state before running again.',
} as const;

/**
 * The three lines an apply log starts with. The terraform CLI drops the first three lines of an
 * apply log (the reference's version, platform and initialization lines, already shown with the
 * plan), so the driver's own output must come after them.
 */
export const applyHeader = (engine: string): string[] => [
  `Keel ${engine} engine`,
  `on ${process.platform}_${process.arch === 'x64' ? 'amd64' : process.arch}`,
  'Initializing plugins and modules...',
];

/**
 * Runs plan and apply phases through a driver, with bounded concurrency. Output lines stream into
 * the live log as they are produced; the outcome, with the whole log, is recorded through the port.
 */
export class Executor {
  readonly #options: ExecutorOptions;
  readonly #pool: ExecutionPool;
  /** Phases from start to recorded outcome (the pool only knows the driver part). */
  readonly #inFlight = new Set<Promise<void>>();
  /**
   * `runId:phase` from start until the outcome is durable: a second delivery of the event that
   * starts a phase (delivery is at least once) is ignored, also while the first one's outcome is
   * still being recorded.
   */
  readonly #active = new Set<string>();
  #abandoned = false;

  constructor(options: ExecutorOptions) {
    this.#options = options;
    this.#pool = new ExecutionPool(options.concurrency);
  }

  /** Whether a phase of this run is running, waiting or recording its outcome here. */
  has(runId: string): boolean {
    return (
      this.#pool.has(runId) ||
      this.#active.has(`${runId}:plan`) ||
      this.#active.has(`${runId}:apply`)
    );
  }

  /** Starts the plan of a run in `planning`; resolves when the outcome is recorded. */
  plan(run: PhaseRun, preface: readonly string[] = []): Promise<void> {
    return this.#track(this.#execute(run, 'plan', preface));
  }

  /** Starts the apply of a run in `applying`; resolves when the outcome is recorded. */
  apply(run: PhaseRun): Promise<void> {
    return this.#track(this.#execute(run, 'apply', []));
  }

  /** A cancel: the running phase is interrupted (SIGINT for the command driver). */
  cancel(runId: string): boolean {
    return this.#pool.interrupt(runId);
  }

  /** A force-cancel: the running phase is killed (SIGKILL for the command driver). */
  forceCancel(runId: string): boolean {
    return this.#pool.kill(runId);
  }

  /**
   * After a restart, phases that were running are gone. A plan has no side effects, so it is
   * started again; an apply may have half-happened, so its run is errored with a clear line.
   */
  async recover(lost: readonly { run: PhaseRun; phase: Phase }[]): Promise<void> {
    const { port, logs } = this.#options;
    await Promise.all(
      lost.map(async ({ run, phase }) => {
        if (this.has(run.id)) return;
        if (phase === 'plan') return this.plan(run, ['', RECOVERY_LINES.plan, '']);
        const id = port.phaseId(run.id, 'apply');
        logs.append(id, '');
        logs.append(id, RECOVERY_LINES.apply);
        await port.phaseErrored(run.id, 'apply', {
          message: RECOVERY_LINES.apply,
          log: logs.read(id) ?? '',
        });
        logs.discard(id);
      }),
    );
  }

  /**
   * The daemon is stopping: every phase is killed and nothing more is recorded, exactly as if the
   * process had died. The next start resumes or errors those runs (see {@link recover}).
   */
  abandon(): void {
    this.#abandoned = true;
    this.#pool.killAll();
  }

  /** Resolves once no phase is running, waiting, or recording its outcome (tests and shutdown). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  #track(work: Promise<void>): Promise<void> {
    this.#inFlight.add(work);
    void work.finally(() => this.#inFlight.delete(work)).catch(() => undefined);
    return work;
  }

  async #execute(run: PhaseRun, phase: Phase, preface: readonly string[]): Promise<void> {
    if (this.#abandoned) return;
    const key = `${run.id}:${phase}`;
    if (this.#active.has(key)) return;
    this.#active.add(key);
    try {
      await this.#executeOnce(run, phase, preface);
    } finally {
      this.#active.delete(key);
    }
  }

  async #executeOnce(run: PhaseRun, phase: Phase, preface: readonly string[]): Promise<void> {
    const { port, logs } = this.#options;
    const id = port.phaseId(run.id, phase);
    for (const line of preface) logs.append(id, line);
    const text = () => logs.read(id) ?? '';
    try {
      const driver = this.#options.driverFor(run.workspaceId);
      let secrets: string[] = [];
      // Gathered once the phase holds its slot in the pool: the run is known to the pool (cancel,
      // `has`) from the moment the phase is started, though reading its inputs may wait.
      const prepare = async (stopped: AbortSignal) => {
        const workspaceVariables = await port.workspaceVariables(
          run.workspaceId,
          { runId: run.id, phase },
          { stopped, log: (line) => logs.append(id, line) },
        );
        // The token's own bound is a backstop (it ends with the phase): twice the phase's time
        // allows for the wait for a slot before the phase's clock starts.
        const environment = this.#options.environmentFor?.(
          run,
          phase,
          2 * (this.#options.phaseTimeoutMs ?? PHASE_TIMEOUT_MS),
        );
        secrets = [
          ...workspaceVariables.filter((v) => v.sensitive).map((v) => v.value),
          ...(environment?.secrets ?? []),
        ];
        const scrub = redactor(secrets);
        const request = {
          ...(environment === undefined ? {} : { environment }),
          configuration: port.configuration(run.configurationVersionId),
          workspaceVariables,
          runVariables: run.variables,
          state: port.currentState(run.workspaceId),
          flags: run.flags,
          log: (line: string) => logs.append(id, scrub(line)),
        };
        return request;
      };
      if (phase === 'plan') {
        const result: PlanResult = await this.#timed(run.id, phase, async (stopped) =>
          driver.plan(await prepare(stopped)),
        );
        if (this.#lost(run.id, phase)) return;
        await this.#recordPlan(run.id, result, text(), secrets);
      } else {
        for (const line of applyHeader(driver.name)) logs.append(id, line);
        const artifact = port.planArtifact(run.id);
        if (!artifact) throw new Error(`run ${run.id} has no plan to apply`);
        const result: ApplyResult = await this.#timed(run.id, phase, async (stopped) =>
          driver.apply({ ...(await prepare(stopped)), artifact }),
        );
        if (this.#lost(run.id, phase)) return;
        await this.#recordApply(run.id, result, text());
      }
      logs.discard(id);
    } catch (error) {
      if (this.#lost(run.id, phase)) return;
      this.#options.onFault?.(run.id, error);
      logs.append(id, '');
      logs.append(id, `Error: ${phase} failed inside Keel: ${(error as Error).message}`);
      const state = error instanceof PhaseTimedOut ? error.state : undefined;
      // Tried again when recording fails too (a conflict with a concurrent write clears): a run
      // left in planning or applying would hold its workspace for good.
      for (let attempt = 1; attempt <= STEP_ATTEMPTS; attempt++) {
        try {
          await port.phaseErrored(run.id, phase, {
            message: (error as Error).message,
            log: text(),
            ...(state ? { state } : {}),
          });
          logs.discard(id);
          return;
        } catch (recordError) {
          // The run moved on (e.g. force-canceled) while the phase failed, or the log is out of
          // reach; after the last attempt a restart takes the phase over (`recover`).
          this.#options.onFault?.(run.id, recordError);
        }
      }
    }
  }

  /**
   * The driver's phase under the phase timeout: past it the phase is killed, and a result that the
   * kill made `canceled` becomes a {@link PhaseTimedOut} (keeping the state an apply left).
   */
  async #timed<R extends PlanResult | ApplyResult>(
    runId: string,
    phase: Phase,
    start: (stopped: AbortSignal) => Execution<R> | Promise<Execution<R>>,
  ): Promise<R | { status: 'canceled' }> {
    const ms = this.#options.phaseTimeoutMs ?? PHASE_TIMEOUT_MS;
    let expired = false;
    let timer: NodeJS.Timeout | undefined;
    try {
      // The clock starts with the phase, not while it waits for a slot.
      const result = await this.#pool.submit(runId, (stopped) => {
        timer = setTimeout(() => {
          expired = true;
          this.#pool.kill(runId);
        }, ms);
        timer.unref();
        return start(stopped);
      });
      if (expired && result.status !== 'finished')
        throw new PhaseTimedOut(phase, ms, 'state' in result ? result.state : undefined);
      return result;
    } catch (err) {
      // Stopped before its process ran (while it waited on its inputs): nothing ran, nothing to keep.
      if (!(err instanceof PhaseStopped)) throw err;
      if (expired) throw new PhaseTimedOut(phase, ms, undefined);
      return { status: 'canceled' };
    } finally {
      clearTimeout(timer);
    }
  }

  /** The daemon is stopping, or another process took the phase over: record nothing. */
  #lost(runId: string, phase: Phase): boolean {
    return this.#abandoned || !(this.#options.owns?.(runId, phase) ?? true);
  }

  async #recordPlan(
    runId: string,
    result: PlanResult,
    log: string,
    secrets: readonly string[],
  ): Promise<void> {
    const { port } = this.#options;
    switch (result.status) {
      case 'finished':
        await port.planFinished(runId, {
          plan: result.plan,
          redacted: redactPlan(result.plan, secrets),
          counts: result.counts,
          artifact: result.artifact,
          log,
        });
        return;
      case 'errored':
        await port.phaseErrored(runId, 'plan', { message: result.message, log });
        return;
      case 'canceled':
        await port.phaseCanceled(runId, 'plan', { log });
        return;
      default: {
        const _never: never = result;
        return _never;
      }
    }
  }

  async #recordApply(runId: string, result: ApplyResult, log: string): Promise<void> {
    const { port } = this.#options;
    switch (result.status) {
      case 'finished':
        await port.applyFinished(runId, { state: result.state, counts: result.counts, log });
        return;
      case 'errored':
        await port.phaseErrored(runId, 'apply', {
          message: result.message,
          log,
          ...(result.state ? { state: result.state } : {}),
        });
        return;
      case 'canceled':
        await port.phaseCanceled(runId, 'apply', {
          log,
          ...(result.state ? { state: result.state } : {}),
        });
        return;
      default: {
        const _never: never = result;
        return _never;
      }
    }
  }
}
