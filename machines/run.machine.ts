import { and, assign, setup } from 'xstate';

/**
 * The run lifecycle. State names are the wire values of `data.attributes.status`, so a run's status
 * is `snapshot.value`; `actions.*` are `snapshot.can(...)` and nothing is stored twice.
 *
 * The machine is pure (no invoke, no after): the run stream's events are its events, and the fold of
 * the stream through `transition()` is the run. Time enters only as data inside events (`at`), so the
 * force-cancel cool-off is a guard comparing two timestamps.
 */

/** The facts of a new run that the lifecycle depends on. */
export interface RunCreatedFacts {
  planOnly: boolean;
  savePlan: boolean;
  autoApply: boolean;
  allowEmptyApply: boolean;
}

/** Resource counts a finished plan or apply reports. */
export interface ResourceCounts {
  additions: number;
  changes: number;
  destructions: number;
  imports: number;
}

/**
 * Every event the run stream knows, past tense: declared here once. The runs context gives each
 * its full data (`src/runs/events.ts`), within what the guards read (`RunGuardData`).
 */
export const RUN_EVENT_TYPES = [
  'RunCreated',
  'RunFetchStarted',
  'RunFetchCompleted',
  'RunPrePlanStarted',
  'RunPrePlanCompleted',
  'RunQueuingStarted',
  'RunPlanQueued',
  'RunPlanStarted',
  'RunPlanFinished',
  'RunCostEstimateStarted',
  'RunCostEstimated',
  'RunPolicyCheckStarted',
  'RunPolicyChecked',
  'RunPolicyOverridden',
  'RunPostPlanStarted',
  'RunPostPlanCompleted',
  'RunPlanStageCompleted',
  'RunConfirmed',
  'RunApplyQueued',
  'RunApplyStarted',
  'RunApplyFinished',
  'RunDiscarded',
  'RunCancelRequested',
  'RunCanceled',
  'RunForceCanceled',
  'RunForceExecuteRequested',
  'RunErrored',
  // Not a lifecycle step: a comment leaves the state as it is (no transition handles it).
  'RunCommented',
] as const;

export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

/** The data the guards read, for the events whose data they read. */
interface GuardFields {
  RunCreated: RunCreatedFacts;
  RunPlanFinished: { hasChanges: boolean };
  RunPolicyChecked: { outcome: 'passed' | 'soft_failed' };
  RunCancelRequested: { at: string; forceCancelAvailableAt: string };
  RunForceCanceled: { at: string };
}

/** Each event's data as far as the lifecycle knows it. */
export type RunGuardData = {
  [T in RunEventType]: T extends keyof GuardFields ? GuardFields[T] : object;
};

/** The run events with each type's data taken from `D` (which carries at least the guards'). */
export type RunEventOf<D extends RunGuardData> = {
  [T in RunEventType]: { type: T; data: D[T] };
}[RunEventType];

/** The events the machine folds. */
export type RunMachineEvent = RunEventOf<RunGuardData>;

/** What the lifecycle remembers beyond its status. */
export interface RunMachineContext extends RunCreatedFacts {
  hasChanges: boolean;
  /** The plan stage is over and the run waits for a user to apply or discard it ("needs confirmation"). */
  pausedForConfirmation: boolean;
  /** A user asked to run this pending run now, ahead of the queue. */
  forceExecuted: boolean;
  /** Set by a first, non-forceful cancel; the interrupt has been sent. */
  cancelRequestedAt: string | null;
  forceCancelAvailableAt: string | null;
}

/** Every status a run can have, in lifecycle order: the spec's list. */
export const RUN_STATUSES = [
  'pending',
  'fetching',
  'fetching_completed',
  'pre_plan_running',
  'pre_plan_completed',
  'queuing',
  'plan_queued',
  'planning',
  'planned',
  'cost_estimating',
  'cost_estimated',
  'policy_checking',
  'policy_override',
  'policy_soft_failed',
  'policy_checked',
  'confirmed',
  'post_plan_running',
  'post_plan_completed',
  'planned_and_finished',
  'planned_and_saved',
  'apply_queued',
  'applying',
  'applied',
  'discarded',
  'errored',
  'canceled',
  'force_canceled',
] as const;

export type RunStatus = (typeof RUN_STATUSES)[number];

/** Terminal statuses: the run is complete and never changes again. */
export const FINAL_STATUSES: readonly RunStatus[] = [
  'policy_soft_failed',
  'planned_and_finished',
  'applied',
  'discarded',
  'errored',
  'canceled',
  'force_canceled',
];

/** The state before `RunCreated`: the stream is empty. The API never shows it. */
export const NO_RUN = 'none';

const initialContext: RunMachineContext = {
  planOnly: false,
  savePlan: false,
  autoApply: false,
  allowEmptyApply: false,
  hasChanges: false,
  pausedForConfirmation: false,
  forceExecuted: false,
  cancelRequestedAt: null,
  forceCancelAvailableAt: null,
};

/** A plan that ends here: speculative, or nothing to apply. */
const endsAfterPlan = (c: RunMachineContext) => c.planOnly || (!c.hasChanges && !c.allowEmptyApply);

/** The transitions shared by every status in which a user may confirm ("needs confirmation"). */
const awaitingConfirmation = {
  RunConfirmed: { guard: 'isConfirmable', target: 'confirmed' },
  RunDiscarded: { guard: 'isNotPlanOnly', target: 'discarded' },
  RunPlanStageCompleted: [
    { guard: 'endsAfterPlan', target: 'planned_and_finished' },
    { guard: 'isSavePlan', target: 'planned_and_saved' },
    { guard: 'isAutoApply', target: 'confirmed' },
    // otherwise the run stays where it is, paused for a user to apply or discard it
    { actions: 'recordPause' },
  ],
  // A step Keel could not take (an estimate, a check, the queue) ends the run rather than wedging it.
  RunErrored: 'errored',
} as const;

const cancelable = {
  RunCancelRequested: {
    guard: 'isNotCancelRequested',
    actions: 'recordCancelRequest',
  },
  RunCanceled: { guard: 'isCancelRequested', target: 'canceled' },
  RunForceCanceled: { guard: 'isCoolOffOver', target: 'force_canceled' },
  RunErrored: { target: 'errored' },
} as const;

/** The run lifecycle machine (see the module comment). */
export const runMachine = setup({
  types: {
    context: {} as RunMachineContext,
    events: {} as RunMachineEvent,
  },
  guards: {
    isConfirmable: ({ context }) => context.pausedForConfirmation,
    isNotPlanOnly: ({ context }) => !context.planOnly,
    endsAfterPlan: ({ context }) => endsAfterPlan(context),
    isSavePlan: ({ context }) => context.savePlan,
    isAutoApply: ({ context }) => context.autoApply,
    isPlanOnly: ({ context }) => context.planOnly,
    isPolicySoftFailed: ({ event }) =>
      event.type === 'RunPolicyChecked' && event.data.outcome === 'soft_failed',
    isNotCancelRequested: ({ context }) => context.cancelRequestedAt === null,
    isCancelRequested: ({ context }) => context.cancelRequestedAt !== null,
    isCoolOffOver: ({ context, event }) =>
      event.type === 'RunForceCanceled' &&
      context.forceCancelAvailableAt !== null &&
      Date.parse(event.data.at) >= Date.parse(context.forceCancelAvailableAt),
  },
  actions: {
    recordFacts: assign(({ event }) =>
      event.type === 'RunCreated'
        ? {
            planOnly: event.data.planOnly,
            savePlan: event.data.savePlan,
            autoApply: event.data.autoApply,
            allowEmptyApply: event.data.allowEmptyApply,
          }
        : {},
    ),
    /** A plan that finished despite an interrupt ends that interrupt: the next phase starts clean. */
    recordPlan: assign(({ event }) =>
      event.type === 'RunPlanFinished'
        ? {
            hasChanges: event.data.hasChanges,
            cancelRequestedAt: null,
            forceCancelAvailableAt: null,
          }
        : {},
    ),
    recordPause: assign({ pausedForConfirmation: true }),
    recordForceExecute: assign({ forceExecuted: true }),
    recordCancelRequest: assign(({ event }) =>
      event.type === 'RunCancelRequested'
        ? {
            cancelRequestedAt: event.data.at,
            forceCancelAvailableAt: event.data.forceCancelAvailableAt,
          }
        : {},
    ),
  },
}).createMachine({
  id: 'run',
  initial: NO_RUN,
  context: initialContext,
  states: {
    [NO_RUN]: { on: { RunCreated: { target: 'pending', actions: 'recordFacts' } } },
    pending: {
      on: {
        RunFetchStarted: 'fetching',
        RunPrePlanStarted: 'pre_plan_running',
        RunQueuingStarted: 'queuing',
        RunPlanQueued: 'plan_queued',
        RunDiscarded: 'discarded',
        RunForceExecuteRequested: { actions: 'recordForceExecute' },
        RunErrored: 'errored',
      },
    },
    fetching: { on: { RunFetchCompleted: 'fetching_completed', RunErrored: 'errored' } },
    fetching_completed: {
      on: {
        RunPrePlanStarted: 'pre_plan_running',
        RunQueuingStarted: 'queuing',
        RunPlanQueued: 'plan_queued',
        RunErrored: 'errored',
      },
    },
    pre_plan_running: { on: { RunPrePlanCompleted: 'pre_plan_completed', RunErrored: 'errored' } },
    pre_plan_completed: {
      on: { RunQueuingStarted: 'queuing', RunPlanQueued: 'plan_queued', RunErrored: 'errored' },
    },
    queuing: { on: { RunPlanQueued: 'plan_queued', RunErrored: 'errored' } },
    plan_queued: { on: { RunPlanStarted: 'planning', RunErrored: 'errored' } },
    planning: {
      on: { RunPlanFinished: { target: 'planned', actions: 'recordPlan' }, ...cancelable },
    },
    planned: {
      on: {
        RunCostEstimateStarted: 'cost_estimating',
        RunPolicyCheckStarted: 'policy_checking',
        RunPostPlanStarted: 'post_plan_running',
        ...awaitingConfirmation,
      },
    },
    cost_estimating: { on: { RunCostEstimated: 'cost_estimated', RunErrored: 'errored' } },
    cost_estimated: {
      on: {
        RunPolicyCheckStarted: 'policy_checking',
        RunPostPlanStarted: 'post_plan_running',
        ...awaitingConfirmation,
      },
    },
    policy_checking: {
      on: {
        RunPolicyChecked: [
          { guard: and(['isPolicySoftFailed', 'isPlanOnly']), target: 'policy_soft_failed' },
          { guard: 'isPolicySoftFailed', target: 'policy_override' },
          { target: 'policy_checked' },
        ],
        RunErrored: 'errored',
      },
    },
    policy_override: {
      on: {
        RunPolicyOverridden: 'policy_checked',
        RunDiscarded: 'discarded',
        RunErrored: 'errored',
      },
    },
    policy_soft_failed: { type: 'final' },
    policy_checked: {
      on: { RunPostPlanStarted: 'post_plan_running', ...awaitingConfirmation },
    },
    post_plan_running: {
      on: {
        RunPostPlanCompleted: 'post_plan_completed',
        RunDiscarded: 'discarded',
        RunErrored: 'errored',
      },
    },
    post_plan_completed: { on: { ...awaitingConfirmation } },
    planned_and_finished: { type: 'final' },
    planned_and_saved: {
      on: { RunConfirmed: 'confirmed', RunDiscarded: 'discarded', RunErrored: 'errored' },
    },
    confirmed: { on: { RunApplyQueued: 'apply_queued', RunErrored: 'errored' } },
    apply_queued: {
      on: { RunApplyStarted: 'applying', RunErrored: 'errored' },
    },
    applying: { on: { RunApplyFinished: 'applied', ...cancelable } },
    applied: { type: 'final' },
    discarded: { type: 'final' },
    errored: { type: 'final' },
    canceled: { type: 'final' },
    force_canceled: { type: 'final' },
  },
});

export type RunMachine = typeof runMachine;
