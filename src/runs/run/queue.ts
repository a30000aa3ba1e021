import { systemMetadata, type StoredEvent } from '../../core/events.js';
import type { Reactor } from '../../core/reactors.js';
import { isFinalStatus } from '../lifecycle.js';
import type { RunCreated } from '../events.js';
import type { RunsModel } from '../model.js';
import { lockForRun, unlockForRun, workspaceDecider } from '../workspaces/decider.js';
import { executorCommands, runDecider } from './commands.js';
import type { RunRow } from './projection.js';

/**
 * The workspace run queue, a process manager. For a workspace it brings the log to the one
 * consistent next step, so it can be re-run at any time (at-least-once delivery, restarts):
 *
 * - pending plan-only runs, and pending saved-plan runs (their planning), start without the lock;
 * - the run holding the lock moves on (pending → plan_queued, confirmed → apply_queued), and gives
 *   the lock back once it is final;
 * - an unlocked workspace goes to the oldest waiting run (FIFO): a pending run, or a confirmed
 *   saved plan that needs the lock to apply. A user or team lock keeps them waiting.
 */
export async function reconcileWorkspace(
  model: RunsModel,
  workspaceId: string,
  prePlan: PrePlan = () => null,
): Promise<void> {
  // The moves are decided against the read models and recorded as one command: no other command
  // comes between a round's read and its write.
  const then = await model.core.handler.atomically(() =>
    reconcileWorkspaceSync(model, workspaceId, prePlan),
  );
  for (const work of then) work();
}

/**
 * Starts a run's pre-plan tasks inside the queue's command, answering with what to do once that is
 * durable (or null when the run has none).
 */
export type PrePlan = (run: RunRow) => (() => void) | null;

/**
 * {@link reconcileWorkspace} inside `core.handler.atomically`: answers with the work to do once
 * the moves are durable (the pre-plan tasks' deliveries).
 */
function reconcileWorkspaceSync(
  model: RunsModel,
  workspaceId: string,
  prePlan: PrePlan,
): (() => void)[] {
  const { handler } = model.core;
  const metadata = systemMetadata('run queue');
  const then: (() => void)[] = [];
  // A run with pre-plan tasks goes to them first (the executor queues its plan afterwards).
  const startPlan = (run: RunRow) => {
    const tasks = prePlan(run);
    if (tasks !== null) then.push(tasks);
    else handler.handleSync(run.id, runDecider, executorCommands.planQueued(run.id), metadata);
  };
  for (const run of model.runs.bypassing(workspaceId)) startPlan(run);
  // Each round makes one move; a handful of rounds reaches the steady state.
  for (let round = 0; round < 100; round++) {
    const ws = model.workspaces.get(workspaceId);
    if (ws === null) return then;
    if (ws.lock?.kind === 'run') {
      const holder = model.runs.get(ws.lock.id);
      if (holder === null || isFinalStatus(holder.status)) {
        handler.handleSync(ws.id, workspaceDecider, unlockForRun(ws.lock.id), metadata);
        continue;
      }
      if (holder.status === 'pending') startPlan(holder);
      else if (holder.status === 'confirmed')
        handler.handleSync(
          holder.id,
          runDecider,
          executorCommands.applyQueued(holder.id),
          metadata,
        );
      return then;
    }
    if (ws.lock !== null) return then;
    const waiting = [
      ...model.runs.queued(ws.id, 1),
      ...model.runs.savedPlansToApply(ws.id, 1),
    ].sort((a, b) => a.seq - b.seq);
    const next = waiting[0];
    if (next === undefined) return then;
    handler.handleSync(ws.id, workspaceDecider, lockForRun(next.id), metadata);
  }
  throw new Error(`run queue of workspace ${workspaceId} did not settle`);
}

/**
 * The run a workspace's queue is held up by when reconciling it fails: the run holding its lock,
 * or else the oldest run waiting for it. Erroring that run lets the queue go on.
 */
export function runHoldingUp(model: RunsModel, event: StoredEvent): string | null {
  const workspaceId = event.type.startsWith('Workspace')
    ? event.stream
    : (model.runs.get(event.stream)?.workspaceId ?? null);
  if (workspaceId === null) return null;
  const ws = model.workspaces.get(workspaceId);
  if (ws === null) return null;
  if (ws.lock?.kind === 'run') {
    const holder = model.runs.get(ws.lock.id);
    if (holder !== null && !isFinalStatus(holder.status)) return holder.id;
  }
  return model.runs.queued(workspaceId, 1)[0]?.id ?? null;
}

/** The queue as a reactor: any run or workspace event re-examines that workspace. */
export function queueReactor(model: RunsModel, prePlan: PrePlan = () => null): Reactor {
  return {
    name: 'runs-queue',
    types: ['Run*', 'Workspace*'],
    async react(event: StoredEvent) {
      const workspaceId = event.type.startsWith('Workspace')
        ? event.stream
        : event.type === 'RunCreated'
          ? // The event names its workspace: no read of the run's row (one per created run).
            (event.data as RunCreated['data']).workspaceId
          : event.type.startsWith('Run')
            ? (model.runs.get(event.stream)?.workspaceId ?? null)
            : null;
      if (workspaceId !== null && event.type !== 'WorkspaceDeleted')
        await reconcileWorkspace(model, workspaceId, prePlan);
    },
  };
}
