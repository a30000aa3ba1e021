import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { Sealed } from '../../core/seal.js';
import { NO_RUN, type ResourceCounts } from '../../../machines/run.machine.js';
import type { RunCreated, RunEvent } from '../events.js';
import type { RunSnapshot } from '../lifecycle.js';

/**
 * Decide functions for the run stream. The machine is the guard (`accepts = snapshot.can`); these
 * add the spec's wording to refusals and stamp times from the caller (never from a global clock).
 */

export { runDecider } from './decider.js';

export type Decide = (s: RunSnapshot) => RunEvent[];

const notAllowed = (detail: string) =>
  new ConflictError(detail, { title: 'transition not allowed' });

function existing(id: string, s: RunSnapshot): void {
  if (s.value === NO_RUN) throw new NotFoundError(`run ${id} not found`);
}

/** One event, refused with `detail` when the machine does not allow it. */
const only =
  (id: string, event: RunEvent, detail: (status: string) => string): Decide =>
  (s) => {
    existing(id, s);
    if (!s.can(event)) throw notAllowed(detail(String(s.value)));
    return [event];
  };

export const createRun =
  (data: RunCreated['data']): Decide =>
  (s) => {
    if (s.value !== NO_RUN) throw new ConflictError(`run ${data.id} already exists`);
    return [{ type: 'RunCreated', data }];
  };

/** `actions/apply`: confirm a run paused for confirmation. */
export const confirmRun = (id: string, comment: string | null): Decide =>
  only(
    id,
    { type: 'RunConfirmed', data: { comment, auto: false } },
    (st) => `run ${id} is not paused for confirmation (status ${st})`,
  );

/** `actions/discard`. */
export const discardRun = (
  id: string,
  comment: string | null,
  reason: 'user' | 'force_execute' = 'user',
): Decide =>
  only(
    id,
    { type: 'RunDiscarded', data: { comment, reason } },
    (st) => `run ${id} is not paused for confirmation or priority (status ${st})`,
  );

/** `actions/cancel`: the interrupt is sent; force-cancel opens after the cool-off. */
export const requestCancel = (
  id: string,
  comment: string | null,
  at: Date,
  coolOffMs: number,
): Decide =>
  only(
    id,
    {
      type: 'RunCancelRequested',
      data: {
        comment,
        at: at.toISOString(),
        forceCancelAvailableAt: new Date(at.getTime() + coolOffMs).toISOString(),
      },
    },
    (st) => `run ${id} is not planning or applying, or is already being canceled (status ${st})`,
  );

/** `actions/force-cancel`. */
export const forceCancel =
  (id: string, comment: string | null, at: Date): Decide =>
  (s) =>
    only(id, { type: 'RunForceCanceled', data: { comment, at: at.toISOString() } }, (st) =>
      s.context.forceCancelAvailableAt === null
        ? `run ${id} was not canceled non-forcefully first (status ${st})`
        : `run ${id} cannot be force-canceled until ${s.context.forceCancelAvailableAt} (status ${st})`,
    )(s);

/** `actions/force-execute` on the target run (the discards of earlier runs are separate commands). */
export const requestForceExecute = (id: string): Decide =>
  only(
    id,
    { type: 'RunForceExecuteRequested', data: {} },
    (st) => `run ${id} is not pending (status ${st})`,
  );

export const commentOnRun =
  (
    id: string,
    comment: {
      id: string;
      body: string;
      by: { kind: 'user' | 'team' | 'organization'; id: string } | null;
    },
  ): Decide =>
  (s) => {
    existing(id, s);
    return [{ type: 'RunCommented', data: comment }];
  };

// ---- what the queue and the executor send ------------------------------------------------------

const step = (id: string, event: RunEvent): Decide =>
  only(id, event, (st) => `${event.type} is not allowed while run ${id} is ${st}`);

const ZERO: ResourceCounts = { additions: 0, changes: 0, destructions: 0, imports: 0 };

/** Commands that move a run through execution; the queue reactor and the executor drivers send them. */
export const executorCommands = {
  fetchStarted: (id: string) => step(id, { type: 'RunFetchStarted', data: {} }),
  fetchCompleted: (id: string) => step(id, { type: 'RunFetchCompleted', data: {} }),
  prePlanStarted: (id: string) => step(id, { type: 'RunPrePlanStarted', data: {} }),
  prePlanCompleted: (id: string) => step(id, { type: 'RunPrePlanCompleted', data: {} }),
  queuingStarted: (id: string) => step(id, { type: 'RunQueuingStarted', data: {} }),
  planQueued: (id: string) => step(id, { type: 'RunPlanQueued', data: {} }),
  planStarted: (id: string) => step(id, { type: 'RunPlanStarted', data: {} }),
  /**
   * A plan finished. Unless the executor has more stages to run (cost estimate, policy checks,
   * post-plan tasks), the plan stage completes in the same append.
   */
  planFinished:
    (
      id: string,
      result: {
        hasChanges: boolean;
        counts?: ResourceCounts;
        log: string | Sealed;
        jsonOutput?: unknown;
        jsonOutputRedacted?: unknown;
        moreStages?: boolean;
      },
    ): Decide =>
    (s) => {
      const finished: RunEvent = {
        type: 'RunPlanFinished',
        data: {
          hasChanges: result.hasChanges,
          counts: result.counts ?? ZERO,
          log: result.log,
          jsonOutput: result.jsonOutput ?? null,
          ...(result.jsonOutputRedacted === undefined
            ? {}
            : { jsonOutputRedacted: result.jsonOutputRedacted }),
        },
      };
      const events = step(id, finished)(s);
      return result.moreStages === true
        ? events
        : [...events, { type: 'RunPlanStageCompleted', data: {} }];
    },
  costEstimateStarted: (id: string) => step(id, { type: 'RunCostEstimateStarted', data: {} }),
  costEstimated: (id: string) => step(id, { type: 'RunCostEstimated', data: {} }),
  policyCheckStarted: (id: string) => step(id, { type: 'RunPolicyCheckStarted', data: {} }),
  policyChecked: (id: string, outcome: 'passed' | 'soft_failed') =>
    step(id, { type: 'RunPolicyChecked', data: { outcome } }),
  policyOverridden: (id: string, comment: string | null) =>
    step(id, { type: 'RunPolicyOverridden', data: { comment } }),
  postPlanStarted: (id: string) => step(id, { type: 'RunPostPlanStarted', data: {} }),
  postPlanCompleted: (id: string) => step(id, { type: 'RunPostPlanCompleted', data: {} }),
  planStageCompleted: (id: string) => step(id, { type: 'RunPlanStageCompleted', data: {} }),
  applyQueued: (id: string) => step(id, { type: 'RunApplyQueued', data: {} }),
  applyStarted: (id: string) => step(id, { type: 'RunApplyStarted', data: {} }),
  applyFinished: (id: string, result: { counts?: ResourceCounts; log: string | Sealed }) =>
    step(id, {
      type: 'RunApplyFinished',
      data: { counts: result.counts ?? ZERO, log: result.log },
    }),
  /** The interrupted process stopped: the cancel completes. */
  canceled: (id: string, log: string | Sealed | null = null) =>
    step(id, { type: 'RunCanceled', data: { log } }),
  errored: (
    id: string,
    failure: { phase: 'plan' | 'apply' | null; message: string; log?: string | Sealed | null },
  ) =>
    step(id, {
      type: 'RunErrored',
      data: { phase: failure.phase, message: failure.message, log: failure.log ?? null },
    }),
};
