import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import {
  FINAL_STATUSES,
  RUN_EVENT_TYPES,
  RUN_STATUSES,
  runMachine,
  type RunMachineEvent,
} from '../../../machines/run.machine.js';
import {
  abilitiesOf,
  FULL_ACCESS,
  NO_ACCESS,
  runStateAfter,
  statusOf,
  operationOf,
  timestampKey,
  type RunState,
} from '../../../src/runs/lifecycle.js';

const created = (
  facts: Partial<{
    planOnly: boolean;
    savePlan: boolean;
    autoApply: boolean;
    allowEmptyApply: boolean;
  }> = {},
) =>
  ({
    type: 'RunCreated',
    data: { planOnly: false, savePlan: false, autoApply: false, allowEmptyApply: false, ...facts },
  }) as const;

function fold(events: RunMachineEvent[]) {
  let [s] = initialTransition(runMachine);
  for (const e of events) {
    if (!s.can(e)) throw new Error(`${e.type} refused in ${String(s.value)}`);
    [s] = transition(runMachine, s, e);
  }
  return s;
}

/** The same events folded into the read model's named state. */
const readState = (events: RunMachineEvent[]): RunState =>
  events.reduce<RunState | null>(runStateAfter, null)!;

const e = (type: RunMachineEvent['type']) => ({ type, data: {} }) as RunMachineEvent;
const T0 = '2026-01-01T00:00:00.000Z';
const T10 = '2026-01-01T00:00:10.000Z';

describe('run machine', () => {
  it('handles exactly the declared event types, a comment excepted', () => {
    const handled = new Set(runMachine.root.events);
    expect([...handled].sort()).toEqual(RUN_EVENT_TYPES.filter((t) => t !== 'RunCommented').sort());
    expect(new Set(RUN_EVENT_TYPES).size).toBe(RUN_EVENT_TYPES.length);
  });

  it('leaves the state as it is on a comment', () => {
    const before = fold([created(), e('RunPlanQueued')]);
    const comment = { type: 'RunCommented', data: {} } as const;
    expect(before.can(comment)).toBe(false);
    expect(transition(runMachine, before, comment)[0].value).toBe(before.value);
  });

  it('has a state for every status of the spec, and the final ones are final', () => {
    const states = runMachine.root.states;
    for (const status of RUN_STATUSES) expect(states[status], status).toBeDefined();
    for (const status of RUN_STATUSES)
      expect(states[status]!.type === 'final', status).toBe(FINAL_STATUSES.includes(status));
  });

  it('plans, pauses for confirmation, confirms and applies', () => {
    const paused: RunMachineEvent[] = [
      created(),
      e('RunPlanQueued'),
      e('RunPlanStarted'),
      { type: 'RunPlanFinished', data: { hasChanges: true } },
      e('RunPlanStageCompleted'),
    ];
    expect(statusOf(fold(paused))).toBe('planned');
    expect(readState(paused).status).toBe('planned');
    expect(abilitiesOf(readState(paused), FULL_ACCESS, new Date(T0)).actions).toEqual({
      'is-cancelable': false,
      'is-confirmable': true,
      'is-discardable': true,
      'is-force-cancelable': false,
    });
    const done = fold([
      created(),
      e('RunPlanQueued'),
      e('RunPlanStarted'),
      { type: 'RunPlanFinished', data: { hasChanges: true } },
      e('RunPlanStageCompleted'),
      e('RunConfirmed'),
      e('RunApplyQueued'),
      e('RunApplyStarted'),
      e('RunApplyFinished'),
    ]);
    expect(statusOf(done)).toBe('applied');
    expect(done.status).toBe('done');
  });

  it('ends a plan without changes, or a plan-only run, as planned_and_finished', () => {
    const planned = [
      e('RunPlanQueued'),
      e('RunPlanStarted'),
      { type: 'RunPlanFinished', data: { hasChanges: false } } as const,
      e('RunPlanStageCompleted'),
    ];
    expect(statusOf(fold([created(), ...planned]))).toBe('planned_and_finished');
    const planOnly = [
      e('RunPlanQueued'),
      e('RunPlanStarted'),
      { type: 'RunPlanFinished', data: { hasChanges: true } } as const,
      e('RunPlanStageCompleted'),
    ];
    expect(statusOf(fold([created({ planOnly: true }), ...planOnly]))).toBe('planned_and_finished');
    expect(statusOf(fold([created({ savePlan: true }), ...planOnly]))).toBe('planned_and_saved');
    expect(statusOf(fold([created({ autoApply: true }), ...planOnly]))).toBe('confirmed');
  });

  it('refuses to confirm a plan-only run and to discard a running one', () => {
    const s = fold([
      created({ planOnly: true }),
      e('RunPlanQueued'),
      e('RunPlanStarted'),
      { type: 'RunPlanFinished', data: { hasChanges: true } },
    ]);
    expect(s.can(e('RunConfirmed'))).toBe(false);
    const notPausedYet = fold([
      created(),
      e('RunPlanQueued'),
      e('RunPlanStarted'),
      { type: 'RunPlanFinished', data: { hasChanges: true } },
    ]);
    expect(notPausedYet.can(e('RunConfirmed'))).toBe(false);
    const running = fold([created(), e('RunPlanQueued'), e('RunPlanStarted')]);
    expect(running.can(e('RunDiscarded'))).toBe(false);
  });

  it('cancels once, then allows force-cancel only after the cool-off', () => {
    const events: RunMachineEvent[] = [
      created(),
      e('RunPlanQueued'),
      e('RunPlanStarted'),
      { type: 'RunCancelRequested', data: { at: T0, forceCancelAvailableAt: T10 } },
    ];
    const s = fold(events);
    const actionsAt = (now: string) =>
      abilitiesOf(readState(events), FULL_ACCESS, new Date(now)).actions;
    expect(statusOf(s)).toBe('planning');
    expect(s.context.forceCancelAvailableAt).toBe(T10);
    expect(
      s.can({ type: 'RunCancelRequested', data: { at: T0, forceCancelAvailableAt: T10 } }),
    ).toBe(false);
    expect(readState(events).forceCancelAvailableAt).toBe(T10);
    expect(actionsAt('2026-01-01T00:00:09.999Z')['is-force-cancelable']).toBe(false);
    expect(actionsAt(T10)['is-force-cancelable']).toBe(true);
    expect(
      statusOf(transition(runMachine, s, { type: 'RunForceCanceled', data: { at: T10 } })[0]),
    ).toBe('force_canceled');
    expect(statusOf(transition(runMachine, s, e('RunCanceled'))[0])).toBe('canceled');
  });

  it('routes a soft-failed policy check by plan-only', () => {
    const upTo = [
      e('RunPlanQueued'),
      e('RunPlanStarted'),
      { type: 'RunPlanFinished', data: { hasChanges: true } } as const,
      e('RunPolicyCheckStarted'),
      { type: 'RunPolicyChecked', data: { outcome: 'soft_failed' } } as const,
    ];
    expect(statusOf(fold([created(), ...upTo]))).toBe('policy_override');
    expect(statusOf(fold([created({ planOnly: true }), ...upTo]))).toBe('policy_soft_failed');
    expect(statusOf(fold([created(), ...upTo, e('RunPolicyOverridden')]))).toBe('policy_checked');
  });

  it('derives permissions from access and state together', () => {
    const s = readState([created()]);
    expect(abilitiesOf(s, FULL_ACCESS, new Date(T0)).permissions).toEqual({
      'can-apply': false,
      'can-cancel': false,
      'can-comment': true,
      'can-discard': true,
      'can-force-execute': true,
      'can-force-cancel': false,
      'can-override-policy-check': false,
    });
    const none = abilitiesOf(s, NO_ACCESS, new Date(T0)).permissions;
    expect(Object.values(none).every((v) => !v)).toBe(true);
  });

  it('names operations and timestamp keys', () => {
    const base = {
      planOnly: false,
      savePlan: false,
      refreshOnly: false,
      isDestroy: false,
      allowEmptyApply: false,
    };
    expect(operationOf(base)).toBe('plan_and_apply');
    expect(operationOf({ ...base, isDestroy: true })).toBe('destroy');
    expect(operationOf({ ...base, planOnly: true, isDestroy: true })).toBe('plan_only');
    expect(timestampKey('planned_and_finished')).toBe('planned-and-finished-at');
  });
});
