import { createHash } from 'node:crypto';
import type { Core } from '../../../context.js';
import { systemMetadata } from '../../../core/events.js';
import type { ScheduleEntry, Timer } from '../../../core/schedule.js';
import { isSealed } from '../../../core/seal.js';
import type { RunsContext, RunRow } from '../../index.js';
import { planIdOf } from '../../run/presenters.js';
import { appendOnly } from '../port.js';
import { failRun } from '../../run/fail-closed.js';
import {
  DEFAULT_TASK_TIMEOUT_MS,
  buildTaskPayload,
  deliverTask,
  stageOutcome,
  taskDeadline,
} from '../tasks.js';
import type { TaskStage } from '../tasks.js';
import type { RunTaskEvent, StageResult } from './events.js';
import type { RunTaskQueries, TaskStageRow } from './projection.js';
import { TASK_TIMEOUT } from './projection.js';

/** Only a hash of a task's callback token is kept. */
export const tokenHash = (token: string): string =>
  createHash('sha256').update(token).digest('hex');

/**
 * Runs a run's task stages: records the stage with a pending result per task, POSTs each task its
 * payload, and finishes the stage once every result is final (by callback, failed delivery or
 * timeout), moving the run on or erroring it.
 */
export class TaskStages {
  readonly #inFlight = new Set<Promise<void>>();
  readonly #metadata = systemMetadata('run tasks');

  constructor(
    private readonly core: Core,
    private readonly runs: RunsContext,
    private readonly queries: RunTaskQueries,
    private readonly timeoutMs = DEFAULT_TASK_TIMEOUT_MS,
  ) {}

  /** Inside `core.handler.atomically` only. */
  record(stream: string, event: RunTaskEvent): void {
    this.core.handler.handleSync(stream, appendOnly, () => [event], this.#metadata);
  }

  /** Whether the run's workspace has tasks at this stage that have not run for it yet. */
  pending(run: RunRow, stage: TaskStage): boolean {
    return (
      this.queries.attached(run.workspaceId, stage).length > 0 &&
      !this.queries.stagesOfRun(run.id).some((s) => s.stage === stage)
    );
  }

  /** Starts the stage: the run enters `post_plan_running` and every task is sent its payload. */
  async start(run: RunRow, stage: TaskStage): Promise<void> {
    const deliver = await this.core.handler.atomically(() => this.begin(run, stage));
    deliver();
  }

  /**
   * {@link start} inside `core.handler.atomically`: records the stage and answers with what sends
   * the tasks their payloads, to call once that is durable.
   */
  begin(run: RunRow, stage: TaskStage): () => void {
    const { core } = this;
    const now = core.clock.now();
    const tokens = new Map<string, string>();
    const results: StageResult[] = this.queries
      .attached(run.workspaceId, stage)
      .flatMap((attached) => {
        const task = this.queries.task(attached.taskId);
        if (!task) return [];
        const id = core.ids.id('taskrs');
        const token = core.ids.secret(40);
        tokens.set(id, token);
        return [
          {
            id,
            taskId: task.id,
            taskName: task.name,
            url: task.url,
            enforcement: attached.enforcement,
            tokenHash: tokenHash(token),
            dueAt: taskDeadline(now, this.timeoutMs).toISOString(),
          },
        ];
      });
    const stageId = core.ids.id('ts');
    if (stage === 'post_plan') this.runs.executorSync.postPlanStarted(run.id);
    else this.runs.executorSync.prePlanStarted(run.id);
    this.record(stageId, {
      type: 'TaskStageStarted',
      data: { id: stageId, runId: run.id, stage, results },
    });
    return () => {
      // A delivery that fails inside Keel ends the run, rather than leaving it to the tasks' timeout.
      const work = this.#deliver(run, stage, stageId, results, tokens).catch(
        async (err: unknown) => {
          core.logger.error({ err, runId: run.id }, 'delivering run tasks failed');
          await this.#fail(run.id, `delivering the ${stage} tasks`, err);
        },
      );
      this.#inFlight.add(work);
      void work.finally(() => this.#inFlight.delete(work));
    };
  }

  async #deliver(
    run: RunRow,
    stage: TaskStage,
    stageId: string,
    results: StageResult[],
    tokens: Map<string, string>,
  ): Promise<void> {
    const { core } = this;
    const ws = this.runs.model.workspaces.get(run.workspaceId);
    for (const result of results) {
      const task = this.queries.task(result.taskId);
      const payload = buildTaskPayload(
        {
          stage,
          baseUrl: core.config.publicAddress.replace(/\/$/, ''),
          runId: run.id,
          runMessage: run.attrs.message,
          runCreatedAt: run.createdAt,
          runCreatedBy: run.createdByName,
          isSpeculative: run.attrs.planOnly,
          organizationName: run.organization,
          workspaceId: run.workspaceId,
          workspaceName: ws?.name ?? '',
          workspaceWorkingDirectory: '',
          configurationVersionId: run.attrs.configurationVersionId,
          planId: stage === 'post_plan' ? planIdOf(run.id) : null,
        },
        {
          id: result.id,
          accessToken: tokens.get(result.id) ?? '',
          enforcement: result.enforcement,
        },
      );
      const hmacKey =
        task?.hmacKey && isSealed(task.hmacKey) ? core.sealer.unseal(task.hmacKey) : null;
      const delivery = await deliverTask({ url: result.url, hmacKey }, payload);
      if (!delivery.delivered) {
        await this.update(stageId, run.id, result.id, 'errored', delivery.message, null);
      }
    }
  }

  /** Records a result's new status and finishes the stage when every result is final. */
  async update(
    stageId: string,
    runId: string,
    resultId: string,
    status: 'running' | 'passed' | 'failed' | 'errored',
    message: string | null,
    url: string | null,
  ): Promise<void> {
    await this.core.handler.atomically(() => {
      this.record(stageId, {
        type: 'TaskResultUpdated',
        data: { stageId, runId, resultId, status, message, url },
      });
      const stage = this.queries.stage(stageId);
      if (stage) this.#finishIfDone(stage);
    });
  }

  #finishIfDone(stage: TaskStageRow): void {
    if (stage.status !== 'running') return;
    const outcome = stageOutcome(stage.results);
    if (outcome === 'running') return;
    this.record(stage.id, {
      type: 'TaskStageFinished',
      data: { id: stage.id, runId: stage.runId, status: outcome },
    });
    const run = this.runs.model.runs.get(stage.runId);
    const expected = stage.stage === 'post_plan' ? 'post_plan_running' : 'pre_plan_running';
    if (run?.status !== expected) return;
    if (outcome === 'failed') {
      const failed = stage.results
        .filter((r) => r.enforcement === 'mandatory' && r.status !== 'passed')
        .map((r) => r.taskName);
      this.runs.executorSync.errored(run.id, {
        phase: null,
        message: `mandatory ${stage.stage} task failed: ${failed.join(', ')}`,
      });
    } else if (stage.stage === 'post_plan') this.runs.executorSync.postPlanCompleted(run.id);
    else {
      // The plan was held back for the tasks: queue it now, through `queuing`.
      this.runs.executorSync.prePlanCompleted(run.id);
      this.runs.executorSync.queuingStarted(run.id);
      this.runs.executorSync.planQueued(run.id);
    }
  }

  /** A result that has not answered by its deadline is errored. */
  timer(): Timer {
    return {
      kind: TASK_TIMEOUT,
      fire: async (entry: ScheduleEntry) => {
        const { stageId, resultId } = entry.data as { stageId: string; resultId: string };
        const stage = this.queries.stage(stageId);
        const result = stage?.results.find((r) => r.id === resultId);
        if (!stage || result?.status !== 'running') return;
        try {
          await this.update(
            stageId,
            stage.runId,
            resultId,
            'errored',
            `the task did not report a result within ${Math.round(this.timeoutMs / 1000)} seconds`,
            null,
          );
        } catch (err) {
          // The timeout is the stage's last resort: if even it cannot be recorded, the run ends.
          await this.#fail(
            stage.runId,
            `timing out the ${stage.stage} task ${result.taskName}`,
            err,
          );
        }
      },
    };
  }

  /** Errors a run its stage could not move on (see `failRun`); a failure to do so is logged. */
  async #fail(runId: string, what: string, error: unknown): Promise<void> {
    try {
      await failRun(this.runs.model, runId, what, error, 'run tasks');
    } catch (err) {
      this.core.logger.error({ err, runId }, 'erroring a run whose task stage failed');
    }
  }

  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }
}
