import type { SnapshotFrom } from 'xstate';
import {
  FINAL_STATUSES,
  NO_RUN,
  RUN_STATUSES,
  type RunMachine,
  type RunStatus,
} from '../../machines/run.machine.js';

/**
 * Pure derivations from a run's machine snapshot: its wire status, `actions.*` and `permissions.*`.
 * Nothing here is stored: read models call these when a run changes, the presenter when it renders.
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

/** `actions.*`: what the run's state allows at `now`, whoever asks. */
export function actionsOf(snapshot: RunSnapshot, now: Date): RunActions {
  return {
    'is-cancelable': snapshot.can({
      type: 'RunCancelRequested',
      data: { at: now.toISOString(), forceCancelAvailableAt: now.toISOString() },
    }),
    'is-confirmable': snapshot.can({ type: 'RunConfirmed', data: {} }),
    'is-discardable': snapshot.can({ type: 'RunDiscarded', data: {} }),
    'is-force-cancelable': snapshot.can({
      type: 'RunForceCanceled',
      data: { at: now.toISOString() },
    }),
  };
}

/**
 * `permissions.*`: the caller's access to the workspace and the run's state together, so a flag is
 * true exactly when the matching action would be accepted now. Commenting needs read access only.
 */
export function permissionsOf(
  snapshot: RunSnapshot,
  access: WorkspaceAccess,
  now: Date,
): RunPermissions {
  const actions = actionsOf(snapshot, now);
  return {
    'can-apply': access.applyRuns && actions['is-confirmable'],
    'can-cancel': access.applyRuns && actions['is-cancelable'],
    'can-comment': access.read,
    'can-discard': access.applyRuns && actions['is-discardable'],
    'can-force-execute':
      access.applyRuns && snapshot.can({ type: 'RunForceExecuteRequested', data: {} }),
    'can-force-cancel': access.admin && actions['is-force-cancelable'],
    'can-override-policy-check':
      access.admin && snapshot.can({ type: 'RunPolicyOverridden', data: {} }),
  };
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
