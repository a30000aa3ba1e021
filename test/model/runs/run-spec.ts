import type { RunMachineEvent } from '../../../machines/run.machine.js';

/**
 * The runs spec's lifecycle rules, restated independently of the run machine and of the
 * presenter: which status each step leads to, and what each status lets a caller do. The graph
 * test compares the API with these, so a changed transition in the machine shows up as a
 * difference.
 */

/** What a run's history tells the rules beyond its status, folded here from the steps taken. */
export interface RunFacts {
  planOnly: boolean;
  savePlan: boolean;
  autoApply: boolean;
  allowEmptyApply: boolean;
  hasChanges: boolean;
  /** The plan stage is over and the run waits for apply or discard. */
  paused: boolean;
  /** The first, non-forceful cancel's cool-off end, once one was accepted. */
  forceCancelAvailableAt: string | null;
}

export const NO_FACTS: RunFacts = {
  planOnly: false,
  savePlan: false,
  autoApply: false,
  allowEmptyApply: false,
  hasChanges: false,
  paused: false,
  forceCancelAvailableAt: null,
};

/** The statuses the spec calls "needs confirmation" (policy checked included). */
const CONFIRMATION = ['planned', 'cost_estimated', 'policy_checked', 'post_plan_completed'];

type Decided =
  | 'RunCreated'
  | 'RunPlanFinished'
  | 'RunPolicyChecked'
  | 'RunPlanStageCompleted'
  | 'RunCancelRequested'
  | 'RunForceExecuteRequested'
  | 'RunCommented';
type Fixed = Exclude<RunMachineEvent['type'], Decided>;

/** Steps that move to one status whatever came before. */
const FIXED_TARGET: Record<Fixed, string> = {
  RunFetchStarted: 'fetching',
  RunFetchCompleted: 'fetching_completed',
  RunPrePlanStarted: 'pre_plan_running',
  RunPrePlanCompleted: 'pre_plan_completed',
  RunQueuingStarted: 'queuing',
  RunPlanQueued: 'plan_queued',
  RunPlanStarted: 'planning',
  RunCostEstimateStarted: 'cost_estimating',
  RunCostEstimated: 'cost_estimated',
  RunPolicyCheckStarted: 'policy_checking',
  RunPolicyOverridden: 'policy_checked',
  RunPostPlanStarted: 'post_plan_running',
  RunPostPlanCompleted: 'post_plan_completed',
  RunConfirmed: 'confirmed',
  RunApplyQueued: 'apply_queued',
  RunApplyStarted: 'applying',
  RunApplyFinished: 'applied',
  RunDiscarded: 'discarded',
  RunCanceled: 'canceled',
  RunForceCanceled: 'force_canceled',
  RunErrored: 'errored',
};

const isFixed = (e: RunMachineEvent): e is Extract<RunMachineEvent, { type: Fixed }> =>
  e.type in FIXED_TARGET;

/** The status a run in `status` reaches by `event`, and the facts after it. */
export function specStep(
  status: string,
  facts: RunFacts,
  event: RunMachineEvent,
): { status: string; facts: RunFacts } {
  if (isFixed(event)) return { status: FIXED_TARGET[event.type], facts };
  switch (event.type) {
    case 'RunCreated':
      return { status: 'pending', facts: { ...NO_FACTS, ...event.data } };
    case 'RunPlanFinished':
      // a plan that finished despite an interrupt ends that interrupt
      return {
        status: 'planned',
        facts: { ...facts, hasChanges: event.data.hasChanges, forceCancelAvailableAt: null },
      };
    case 'RunPolicyChecked': {
      const soft = event.data.outcome === 'soft_failed';
      const next = !soft
        ? 'policy_checked'
        : facts.planOnly
          ? 'policy_soft_failed'
          : 'policy_override';
      return { status: next, facts };
    }
    case 'RunPlanStageCompleted': {
      if (facts.planOnly || (!facts.hasChanges && !facts.allowEmptyApply))
        return { status: 'planned_and_finished', facts };
      if (facts.savePlan) return { status: 'planned_and_saved', facts };
      if (facts.autoApply) return { status: 'confirmed', facts };
      return { status, facts: { ...facts, paused: true } };
    }
    case 'RunCancelRequested':
      return {
        status,
        facts: { ...facts, forceCancelAvailableAt: event.data.forceCancelAvailableAt },
      };
    case 'RunForceExecuteRequested':
    case 'RunCommented':
      return { status, facts };
    default: {
      const _never: never = event;
      return _never;
    }
  }
}

/**
 * What a status allows, by the spec: cancel interrupts a run that is planning or applying (once);
 * force-cancel follows a cancel after the cool-off; apply needs a run paused for confirmation (or a
 * saved plan); discard skips a run paused for confirmation or priority (pending, needs
 * confirmation, policy override, post-plan running, saved plans; never a speculative plan);
 * force-execute targets a pending run; a policy override needs a soft-failed check; commenting
 * needs read access only. The caller has full access, so each permission follows its action.
 */
export function specFlags(status: string, facts: RunFacts, now: Date) {
  const running = status === 'planning' || status === 'applying';
  const requested = facts.forceCancelAvailableAt !== null;
  const confirmable =
    status === 'planned_and_saved' || (CONFIRMATION.includes(status) && facts.paused);
  const discardable =
    ['pending', 'policy_override', 'post_plan_running', 'planned_and_saved'].includes(status) ||
    (CONFIRMATION.includes(status) && !facts.planOnly);
  const cancelable = running && !requested;
  const forceCancelable =
    running && requested && now.getTime() >= Date.parse(facts.forceCancelAvailableAt ?? '');
  return {
    actions: {
      'is-cancelable': cancelable,
      'is-confirmable': confirmable,
      'is-discardable': discardable,
      'is-force-cancelable': forceCancelable,
    },
    permissions: {
      'can-apply': confirmable,
      'can-cancel': cancelable,
      'can-comment': true,
      'can-discard': discardable,
      'can-force-execute': status === 'pending',
      'can-force-cancel': forceCancelable,
      'can-override-policy-check': status === 'policy_override',
    },
  };
}
