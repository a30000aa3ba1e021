import type { SnapshotFrom } from 'xstate';
import {
  FINAL_STATUSES,
  NO_RUN,
  RUN_STATUSES,
  type RunMachine,
  type RunMachineEvent,
  type RunStatus,
} from '../../machines/run.machine.js';

/**
 * Pure derivations of a run's state: its wire status from the machine's snapshot (the command
 * side), the named state its read model keeps, and `actions.*` and `permissions.*` from that.
 */

export type RunSnapshot = SnapshotFrom<RunMachine>;

/** What the caller may do on the run's workspace (from team access or organization ownership). */
export interface WorkspaceAccess {
  read: boolean;
  queuePlans: boolean;
  applyRuns: boolean;
  admin: boolean;
  /** Workspace variables: list them (`read`), also create, change and delete them (`write`). */
  variables: 'none' | 'read' | 'write';
  /** State: only outputs, whole state versions, or also creating them. */
  stateVersions: 'none' | 'read-outputs' | 'read' | 'write';
  /** Sentinel mocks (Keel serves none; the permission is recorded and reported). */
  sentinelMocks: boolean;
  /** Lock and unlock the workspace. */
  lock: boolean;
  /** Manage the workspace's run tasks. */
  runTasks: boolean;
}

export const NO_ACCESS: WorkspaceAccess = {
  read: false,
  queuePlans: false,
  applyRuns: false,
  admin: false,
  variables: 'none',
  stateVersions: 'none',
  sentinelMocks: false,
  lock: false,
  runTasks: false,
};
export const FULL_ACCESS: WorkspaceAccess = {
  read: true,
  queuePlans: true,
  applyRuns: true,
  admin: true,
  variables: 'write',
  stateVersions: 'write',
  sentinelMocks: true,
  lock: true,
  runTasks: true,
};

export interface RunActions {
  'is-cancelable': boolean;
  'is-confirmable': boolean;
  'is-discardable': boolean;
  'is-force-cancelable': boolean;
}

export interface RunPermissions {
  'can-apply': boolean;
  'can-cancel': boolean;
  'can-comment': boolean;
  'can-discard': boolean;
  'can-force-execute': boolean;
  'can-force-cancel': boolean;
  'can-override-policy-check': boolean;
}

const isRunStatus = (v: unknown): v is RunStatus =>
  (RUN_STATUSES as readonly unknown[]).includes(v);

/** The wire status: the machine's state name. A snapshot before `RunCreated` has none. */
export function statusOf(snapshot: RunSnapshot): RunStatus {
  const value: unknown = snapshot.value;
  if (value === NO_RUN || !isRunStatus(value))
    throw new Error(`run snapshot has no status (${String(value)})`);
  return value;
}

export const isFinalStatus = (status: RunStatus): boolean => FINAL_STATUSES.includes(status);

/**
 * A run's state as its read model holds it, in named columns: the status and the facts that
 * `actions.*`, `permissions.*` and the run's attributes read. Folded from the run's events by
 * {@link runStateAfter}; the command side folds the same events through the machine instead, and
 * the tests hold the two to the same status and the same answers (`test/unit/runs/run-state.test.ts`).
 */
export interface RunState {
  status: RunStatus;
  planOnly: boolean;
  savePlan: boolean;
  autoApply: boolean;
  allowEmptyApply: boolean;
  /** What the last finished plan reported (false before a plan finished). */
  hasChanges: boolean;
  /** The plan stage ended with the run waiting for a user to apply or discard it. */
  pausedForConfirmation: boolean;
  /** The first, non-forceful cancel of the running phase (cleared when a plan finishes anyway). */
  cancelRequestedAt: string | null;
  /** When that cancel's cool-off ends and force-cancel opens. */
  forceCancelAvailableAt: string | null;
}

/** The statuses the spec calls "needs confirmation": a paused run there may be applied. */
const AWAITING_CONFIRMATION: readonly RunStatus[] = [
  'planned',
  'cost_estimated',
  'policy_checked',
  'post_plan_completed',
];

/** A run's state after one of its events (`null` before `RunCreated`). The event is one the machine accepted. */
export function runStateAfter(before: RunState | null, event: RunMachineEvent): RunState {
  if (event.type === 'RunCreated') {
    const d = event.data;
    return {
      status: 'pending',
      planOnly: d.planOnly,
      savePlan: d.savePlan,
      autoApply: d.autoApply,
      allowEmptyApply: d.allowEmptyApply,
      hasChanges: false,
      pausedForConfirmation: false,
      cancelRequestedAt: null,
      forceCancelAvailableAt: null,
    };
  }
  if (before === null) throw new Error(`${event.type} before RunCreated`);
  const to = (status: RunStatus): RunState => ({ ...before, status });
  switch (event.type) {
    case 'RunFetchStarted':
      return to('fetching');
    case 'RunFetchCompleted':
      return to('fetching_completed');
    case 'RunPrePlanStarted':
      return to('pre_plan_running');
    case 'RunPrePlanCompleted':
      return to('pre_plan_completed');
    case 'RunQueuingStarted':
      return to('queuing');
    case 'RunPlanQueued':
      return to('plan_queued');
    case 'RunPlanStarted':
      return to('planning');
    case 'RunPlanFinished':
      // A plan that finished despite an interrupt ends that interrupt: the next phase starts clean.
      return {
        ...to('planned'),
        hasChanges: event.data.hasChanges,
        cancelRequestedAt: null,
        forceCancelAvailableAt: null,
      };
    case 'RunCostEstimateStarted':
      return to('cost_estimating');
    case 'RunCostEstimated':
      return to('cost_estimated');
    case 'RunPolicyCheckStarted':
      return to('policy_checking');
    case 'RunPolicyChecked':
      if (event.data.outcome === 'passed') return to('policy_checked');
      return to(before.planOnly ? 'policy_soft_failed' : 'policy_override');
    case 'RunPolicyOverridden':
      return to('policy_checked');
    case 'RunPostPlanStarted':
      return to('post_plan_running');
    case 'RunPostPlanCompleted':
      return to('post_plan_completed');
    case 'RunPlanStageCompleted':
      if (before.planOnly || (!before.hasChanges && !before.allowEmptyApply))
        return to('planned_and_finished');
      if (before.savePlan) return to('planned_and_saved');
      if (before.autoApply) return to('confirmed');
      return { ...before, pausedForConfirmation: true };
    case 'RunConfirmed':
      return to('confirmed');
    case 'RunApplyQueued':
      return to('apply_queued');
    case 'RunApplyStarted':
      return to('applying');
    case 'RunApplyFinished':
      return to('applied');
    case 'RunDiscarded':
      return to('discarded');
    case 'RunCancelRequested':
      return {
        ...before,
        cancelRequestedAt: event.data.at,
        forceCancelAvailableAt: event.data.forceCancelAvailableAt,
      };
    case 'RunCanceled':
      return to('canceled');
    case 'RunForceCanceled':
      return to('force_canceled');
    case 'RunErrored':
      return to('errored');
    // Neither changes the status: a force-execute moves the queue, a comment nothing.
    case 'RunForceExecuteRequested':
    case 'RunCommented':
      return before;
    default: {
      const _never: never = event;
      return _never;
    }
  }
}

/**
 * `actions.*` and `permissions.*` of a run: what its state allows at `now`, and of that what the
 * caller's access to the workspace lets it do, so a permission is true exactly when the matching
 * action would be accepted now. Commenting needs read access only. The one place either is made.
 */
export function abilitiesOf(
  run: RunState,
  access: WorkspaceAccess,
  now: Date,
): { actions: RunActions; permissions: RunPermissions } {
  const { status } = run;
  const running = status === 'planning' || status === 'applying';
  const awaiting = AWAITING_CONFIRMATION.includes(status);
  const actions: RunActions = {
    'is-cancelable': running && run.cancelRequestedAt === null,
    'is-confirmable': status === 'planned_and_saved' || (awaiting && run.pausedForConfirmation),
    'is-discardable':
      status === 'pending' ||
      status === 'policy_override' ||
      status === 'post_plan_running' ||
      status === 'planned_and_saved' ||
      (awaiting && !run.planOnly),
    'is-force-cancelable':
      running &&
      run.forceCancelAvailableAt !== null &&
      now.getTime() >= Date.parse(run.forceCancelAvailableAt),
  };
  const permissions: RunPermissions = {
    'can-apply': access.applyRuns && actions['is-confirmable'],
    'can-cancel': access.applyRuns && actions['is-cancelable'],
    'can-comment': access.read,
    'can-discard': access.applyRuns && actions['is-discardable'],
    'can-force-execute': access.applyRuns && status === 'pending',
    'can-force-cancel': access.admin && actions['is-force-cancelable'],
    'can-override-policy-check': access.admin && status === 'policy_override',
  };
  return { actions, permissions };
}

/** Statuses of `filter[status_group]=discardable`, as the spec lists them. */
export const DISCARDABLE_STATUSES: readonly RunStatus[] = [
  'planned',
  'planned_and_saved',
  'cost_estimated',
  'policy_checked',
  'policy_override',
  'post_plan_running',
  'post_plan_completed',
];

export const RUN_STATUS_GROUPS = ['non_final', 'final', 'discardable'] as const;
export type RunStatusGroup = (typeof RUN_STATUS_GROUPS)[number];

/** The statuses a status group stands for. */
export function statusesOfGroup(group: RunStatusGroup): readonly RunStatus[] {
  switch (group) {
    case 'final':
      return FINAL_STATUSES;
    case 'non_final':
      return RUN_STATUSES.filter((s) => !FINAL_STATUSES.includes(s));
    case 'discardable':
      return DISCARDABLE_STATUSES;
    default: {
      const _never: never = group;
      return _never;
    }
  }
}

export const RUN_OPERATIONS = [
  'plan_only',
  'plan_and_apply',
  'save_plan',
  'refresh_only',
  'destroy',
  'empty_apply',
] as const;
export type RunOperation = (typeof RUN_OPERATIONS)[number];

/** The one operation a run performs, from its creation attributes (the first that applies). */
export function operationOf(run: {
  planOnly: boolean;
  savePlan: boolean;
  refreshOnly: boolean;
  isDestroy: boolean;
  allowEmptyApply: boolean;
}): RunOperation {
  if (run.planOnly) return 'plan_only';
  if (run.savePlan) return 'save_plan';
  if (run.refreshOnly) return 'refresh_only';
  if (run.isDestroy) return 'destroy';
  if (run.allowEmptyApply) return 'empty_apply';
  return 'plan_and_apply';
}

/** `status-timestamps` key of a status: `plan_queued` → `plan-queued-at`. */
export const timestampKey = (status: RunStatus): string => `${status.replaceAll('_', '-')}-at`;
