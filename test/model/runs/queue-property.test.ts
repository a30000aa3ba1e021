import { expectEachProjectionRebuildsAlone } from '../../support/rebuild.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import {
  FINAL_STATUSES,
  runMachine,
  type RunMachineEvent,
  type RunStatus,
} from '../../../machines/run.machine.js';
import type { RunSnapshot } from '../../../src/runs/lifecycle.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace, runBody, uploadedCv } from '../../support/runs-flow.js';

/**
 * Random sequences of API actions and executor commands on the runs of one workspace. After each:
 * the action succeeded iff the machine (folded from the log by this test) allowed it; at most one
 * run holds the lock; runs take the lock in the order they were queued (FIFO). At the end, rebuilding
 * every read model from the log gives identical tables.
 */

type Action =
  | { kind: 'create'; planOnly: boolean; autoApply: boolean }
  | { kind: 'settle' }
  | {
      kind: 'executor';
      step:
        | 'planStarted'
        | 'planFinished'
        | 'planNoChanges'
        | 'applyStarted'
        | 'applyFinished'
        | 'canceled'
        | 'errored';
      run: number;
    }
  | {
      kind: 'user';
      action: 'apply' | 'discard' | 'cancel' | 'force-cancel' | 'force-execute';
      run: number;
    }
  | { kind: 'tick' }
  | { kind: 'lock' }
  | { kind: 'unlock' };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  fc.record({
    kind: fc.constant('create' as const),
    planOnly: fc.boolean(),
    autoApply: fc.boolean(),
  }),
  fc.constant({ kind: 'settle' as const }),
  fc.record({
    kind: fc.constant('executor' as const),
    step: fc.constantFrom(
      'planStarted',
      'planFinished',
      'planNoChanges',
      'applyStarted',
      'applyFinished',
      'canceled',
      'errored',
    ),
    run: fc.nat(7),
  }),
  fc.record({
    kind: fc.constant('user' as const),
    action: fc.constantFrom('apply', 'discard', 'cancel', 'force-cancel', 'force-execute'),
    run: fc.nat(7),
  }),
  fc.constant({ kind: 'tick' as const }),
  fc.constant({ kind: 'lock' as const }),
  fc.constant({ kind: 'unlock' as const }),
);

let h: RunsHarness;
let org: string;
beforeAll(async () => {
  h = await startRunsHarness();
  org = await createOrg(h);
});
afterAll(async () => h.close());

/** The machine's view of a run: its stream folded through `transition`, independently of the app. */
function fold(runId: string): RunSnapshot {
  let s = initialTransition(runMachine)[0];
  for (const e of h.core.store.readStream(runId)) {
    if ((runMachine.events as readonly string[]).includes(e.type))
      s = transition(runMachine, s, e as unknown as RunMachineEvent)[0];
  }
  return s;
}

const isFinal = (s: RunSnapshot) => FINAL_STATUSES.includes(s.value as RunStatus);

/** The event each user action proposes, for asking the machine. */
function proposed(
  action: 'apply' | 'discard' | 'cancel' | 'force-cancel' | 'force-execute',
): RunMachineEvent {
  const now = h.clock.now().toISOString();
  switch (action) {
    case 'apply':
      return { type: 'RunConfirmed', data: {} };
    case 'discard':
      return { type: 'RunDiscarded', data: {} };
    case 'cancel':
      return { type: 'RunCancelRequested', data: { at: now, forceCancelAvailableAt: now } };
    case 'force-cancel':
      return { type: 'RunForceCanceled', data: { at: now } };
    case 'force-execute':
      return { type: 'RunForceExecuteRequested', data: {} };
    default: {
      const _never: never = action;
      return _never;
    }
  }
}

const EXECUTOR_EVENT: Record<Extract<Action, { kind: 'executor' }>['step'], RunMachineEvent> = {
  planStarted: { type: 'RunPlanStarted', data: {} },
  planFinished: { type: 'RunPlanFinished', data: { hasChanges: true } },
  planNoChanges: { type: 'RunPlanFinished', data: { hasChanges: false } },
  applyStarted: { type: 'RunApplyStarted', data: {} },
  applyFinished: { type: 'RunApplyFinished', data: {} },
  canceled: { type: 'RunCanceled', data: {} },
  errored: { type: 'RunErrored', data: {} },
};

async function execute(ws: string, runs: string[], a: Action): Promise<void> {
  const x = h.runs.executor;
  switch (a.kind) {
    case 'create': {
      const res = await h.api('POST', '/runs', {
        body: runBody(ws, { 'plan-only': a.planOnly, 'auto-apply': a.autoApply }),
      });
      expect(res.status, res.text).toBe(201);
      runs.push(res.json.data.id);
      return;
    }
    case 'settle':
      await h.settle();
      return;
    case 'tick':
      h.clock.advance(5_000);
      return;
    case 'lock':
    case 'unlock': {
      const before = h.runs.model.workspaces.get(ws)!.lock;
      const res = await h.api('POST', `/workspaces/${ws}/actions/${a.kind}`, { body: {} });
      const allowed = a.kind === 'lock' ? before === null : before?.kind === 'user';
      expect(res.status, `${a.kind} with lock ${JSON.stringify(before)}: ${res.text}`).toBe(
        allowed ? 200 : 409,
      );
      return;
    }
    case 'executor': {
      const id = runs[a.run % Math.max(1, runs.length)];
      if (id === undefined) return;
      const event = EXECUTOR_EVENT[a.step];
      const may = fold(id).can(event);
      let ok = true;
      try {
        if (a.step === 'planFinished' || a.step === 'planNoChanges')
          await x.planFinished(id, { hasChanges: a.step === 'planFinished', log: '' });
        else if (a.step === 'applyFinished') await x.applyFinished(id, { log: '' });
        else if (a.step === 'errored') await x.errored(id, { phase: null, message: 'failed' });
        else await x[a.step](id);
      } catch {
        ok = false;
      }
      expect(ok, `${a.step} on ${id} (${String(fold(id).value)})`).toBe(may);
      return;
    }
    case 'user': {
      const id = runs[a.run % Math.max(1, runs.length)];
      if (id === undefined) return;
      const snapshot = fold(id);
      let expected = snapshot.can(proposed(a.action)) ? 202 : 409;
      if (a.action === 'force-execute') {
        const lock = h.runs.model.workspaces.get(ws)!.lock;
        if (snapshot.value !== 'pending' || lock?.kind !== 'run' || lock.id === id) expected = 403;
        else expected = fold(lock.id).can({ type: 'RunDiscarded', data: {} }) ? 202 : 409;
      }
      const res = await h.api('POST', `/runs/${id}/actions/${a.action}`, { body: {} });
      expect(res.status, `${a.action} on ${id} in ${String(snapshot.value)}: ${res.text}`).toBe(
        expected,
      );
      return;
    }
    default: {
      const _never: never = a;
      return _never;
    }
  }
}

/** At most one run needs the lock at a time, and it is the one holding it. */
function checkLock(ws: string, runs: string[]): void {
  const lock = h.runs.model.workspaces.get(ws)!.lock;
  const active = runs.filter((id) => {
    const s = fold(id);
    return !s.context.planOnly && !isFinal(s) && s.value !== 'pending';
  });
  expect(active.length, `active runs ${active.join(', ')}`).toBeLessThanOrEqual(1);
  if (active.length === 1) expect(lock).toEqual({ kind: 'run', id: active[0] });
  // Read models agree with the machine.
  for (const id of runs) expect(h.runs.model.runs.get(id)!.status).toBe(fold(id).value);
}

/** Runs took the workspace lock in creation order. */
function checkFifo(ws: string, runs: string[]): void {
  const takers = h.core.store
    .readStream(ws)
    .filter(
      (e) => e.type === 'WorkspaceLocked' && (e.data as { by: { kind: string } }).by.kind === 'run',
    )
    .map((e) => runs.indexOf((e.data as { by: { id: string } }).by.id));
  expect(takers).toEqual([...takers].sort((a, b) => a - b));
}

describe('the queue under random actions', () => {
  it('keeps lock, FIFO and machine agreement, and replays to identical read models', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 1, maxLength: 30 }), async (actions) => {
        const ws = (await createWorkspace(h, org)).id;
        await uploadedCv(h, ws);
        const runs: string[] = [];
        for (const a of actions) {
          await execute(ws, runs, a);
          checkLock(ws, runs);
        }
        await h.settle();
        checkLock(ws, runs);
        checkFifo(ws, runs);
        const before = h.projections.dump();
        h.projections.rebuildAll((after, limit) => h.core.store.readAll(after, limit));
        expect(h.projections.dump()).toEqual(before);
        expectEachProjectionRebuildsAlone(h.projections, (a, l) => h.core.store.readAll(a, l));
      }),
      { numRuns: 25 },
    );
  });
});
