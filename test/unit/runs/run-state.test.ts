import { describe, expect, it } from 'vitest';
import { initialTransition, transition, type AnyMachineSnapshot } from 'xstate';
import { runMachine, type RunMachineEvent } from '../../../machines/run.machine.js';
import {
  abilitiesOf,
  FULL_ACCESS,
  runStateAfter,
  statusOf,
  type RunSnapshot,
  type RunState,
  type WorkspaceAccess,
} from '../../../src/runs/lifecycle.js';
import { edgesToCover } from '../../support/graph-edges.js';
import { RUN_EVENTS } from '../../support/run-machine-events.js';

/**
 * The read model's named state (`runStateAfter`) and the answers made from it (`abilitiesOf`)
 * against the machine, which decides: along the shortest path to every transition the machine
 * defines, after each step, the status is the machine's and every action and permission is true
 * exactly when the machine would accept its event then.
 */

const T0 = '2026-01-01T00:00:00.000Z';
/** Before, at and after the cool-off of the cancel the traversal requests (at T0, until T10). */
const NOWS = ['2026-01-01T00:00:05.000Z', '2026-01-01T00:00:10.000Z', '2026-01-01T00:01:00.000Z'];

const serializeState = (s: AnyMachineSnapshot) => {
  const r = s as RunSnapshot;
  return JSON.stringify([r.value, r.context]);
};

const EDGES = edgesToCover<RunMachineEvent>(runMachine, RUN_EVENTS, serializeState);

const ACCESS: WorkspaceAccess[] = [
  FULL_ACCESS,
  { ...FULL_ACCESS, admin: false },
  { ...FULL_ACCESS, applyRuns: false, admin: false },
];

/** What the machine says each action and permission is, with the caller's access. */
function machineAnswers(s: RunSnapshot, access: WorkspaceAccess, now: string) {
  const can = (event: RunMachineEvent) => s.can(event);
  const actions = {
    'is-cancelable': can({
      type: 'RunCancelRequested',
      data: { at: now, forceCancelAvailableAt: now },
    }),
    'is-confirmable': can({ type: 'RunConfirmed', data: {} }),
    'is-discardable': can({ type: 'RunDiscarded', data: {} }),
    'is-force-cancelable': can({ type: 'RunForceCanceled', data: { at: now } }),
  };
  return {
    actions,
    permissions: {
      'can-apply': access.applyRuns && actions['is-confirmable'],
      'can-cancel': access.applyRuns && actions['is-cancelable'],
      'can-comment': access.read,
      'can-discard': access.applyRuns && actions['is-discardable'],
      'can-force-execute': access.applyRuns && can({ type: 'RunForceExecuteRequested', data: {} }),
      'can-force-cancel': access.admin && actions['is-force-cancelable'],
      'can-override-policy-check': access.admin && can({ type: 'RunPolicyOverridden', data: {} }),
    },
  };
}

describe('run read state', () => {
  it('covers a good share of the machine', () => {
    expect(EDGES.length).toBeGreaterThan(60);
  });

  it.each(EDGES.map((edge) => [edge.key, edge.steps] as const))(
    'agrees with the machine along %s',
    (_key, steps) => {
      let [snapshot] = initialTransition(runMachine);
      let state: RunState | null = null;
      for (const [i, event] of steps.entries()) {
        expect(snapshot.can(event), `step ${i} ${event.type}`).toBe(true);
        [snapshot] = transition(runMachine, snapshot, event);
        state = runStateAfter(state, event);
        const where = `after step ${i} ${event.type}`;
        expect(state.status, where).toBe(statusOf(snapshot));
        for (const access of ACCESS) {
          for (const now of NOWS) {
            expect(abilitiesOf(state, access, new Date(now)), `${where} at ${now}`).toEqual(
              machineAnswers(snapshot, access, now),
            );
          }
        }
      }
    },
  );

  it('keeps a comment and a force-execute out of the status', () => {
    const created = runStateAfter(null, {
      type: 'RunCreated',
      data: { planOnly: false, savePlan: false, autoApply: false, allowEmptyApply: false },
    });
    expect(runStateAfter(created, { type: 'RunCommented', data: {} })).toEqual(created);
    expect(runStateAfter(created, { type: 'RunForceExecuteRequested', data: {} })).toEqual(created);
  });

  it('refuses an event before the run exists', () => {
    expect(() => runStateAfter(null, { type: 'RunPlanQueued', data: {} })).toThrow(
      'RunPlanQueued before RunCreated',
    );
  });

  it('clears a cancel when a plan finishes anyway', () => {
    let s = runStateAfter(null, {
      type: 'RunCreated',
      data: { planOnly: false, savePlan: false, autoApply: false, allowEmptyApply: false },
    });
    s = runStateAfter(s, {
      type: 'RunCancelRequested',
      data: { at: T0, forceCancelAvailableAt: T0 },
    });
    expect(s.cancelRequestedAt).toBe(T0);
    s = runStateAfter(s, { type: 'RunPlanFinished', data: { hasChanges: true } });
    expect([s.cancelRequestedAt, s.forceCancelAvailableAt, s.hasChanges]).toEqual([
      null,
      null,
      true,
    ]);
  });
});
