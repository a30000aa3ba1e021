import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { edgesToCover, uncovered } from '../../support/graph-edges.js';
import { NO_RUN, runMachine, type RunMachineEvent } from '../../../machines/run.machine.js';
import type { RunSnapshot } from '../../../src/runs/lifecycle.js';
import { NO_FACTS, specFlags, specStep } from './run-spec.js';
import { RUN_EVENTS as EVENTS } from '../../support/run-machine-events.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import {
  createOrg,
  createRun,
  createWorkspace,
  drivePlan,
  getRun,
  uploadedCv,
} from '../../support/runs-flow.js';

/**
 * Model-based tests: every state and every transition of the run machine, reached through the HTTP
 * API and the executor's commands (never by calling the machine). After each step the run's
 * `status` is compared with the status the spec's rules give (run-spec.ts) and with the machine's
 * state, and its `actions` and `permissions` with what the spec says that status allows.
 * Mutation check: `planned_and_saved` RunConfirmed → `discarded` fails edge planned_and_saved|RunConfirmed ("expected 'discarded' to be 'confirmed'").
 */

/** A state is its status plus the context the guards read (timestamps reduced to "requested"). */
const serializeState = (s: RunSnapshot) =>
  JSON.stringify([
    s.value,
    {
      ...s.context,
      cancelRequestedAt: s.context.cancelRequestedAt !== null,
      forceCancelAvailableAt: null,
    },
  ]);

const EDGES = edgesToCover<RunMachineEvent>(runMachine, EVENTS, (s) =>
  serializeState(s as RunSnapshot),
);

let h: RunsHarness;
let org: string;
beforeAll(async () => {
  h = await startRunsHarness();
  org = await createOrg(h);
});
afterAll(async () => h.close());

/** Drive one machine event against the real system; returns the event as it really happened (times). */
async function perform(
  ws: string,
  runId: { id: string | null },
  event: RunMachineEvent,
  state: RunSnapshot,
): Promise<RunMachineEvent> {
  const id = () => runId.id!;
  const x = h.runs.executor;
  const action = async (name: string) => {
    const res = await h.api('POST', `/runs/${id()}/actions/${name}`, { body: {} });
    expect(res.status, `${name}: ${res.text}`).toBe(202);
  };
  switch (event.type) {
    case 'RunCreated': {
      const d = event.data;
      const run = await createRun(h, ws, {
        'plan-only': d.planOnly,
        'save-plan': d.savePlan,
        'auto-apply': d.autoApply,
        'allow-empty-apply': d.allowEmptyApply,
      });
      runId.id = run.id;
      return event;
    }
    case 'RunPlanQueued':
      // The queue admits a pending run; later stages hand over to the planner themselves.
      if (state.value === 'pending') await h.settle();
      else await x.planQueued(id());
      return event;
    case 'RunApplyQueued':
      await h.settle();
      return event;
    case 'RunFetchStarted':
      await x.fetchStarted(id());
      return event;
    case 'RunFetchCompleted':
      await x.fetchCompleted(id());
      return event;
    case 'RunPrePlanStarted':
      await x.prePlanStarted(id());
      return event;
    case 'RunPrePlanCompleted':
      await x.prePlanCompleted(id());
      return event;
    case 'RunQueuingStarted':
      await x.queuingStarted(id());
      return event;
    case 'RunPlanStarted':
      await x.planStarted(id());
      return event;
    case 'RunPlanFinished':
      await x.planFinished(id(), {
        hasChanges: event.data.hasChanges,
        log: 'plan log\n',
        moreStages: true,
      });
      return event;
    case 'RunCostEstimateStarted':
      await x.costEstimateStarted(id());
      return event;
    case 'RunCostEstimated':
      await x.costEstimated(id());
      return event;
    case 'RunPolicyCheckStarted':
      await x.policyCheckStarted(id());
      return event;
    case 'RunPolicyChecked':
      await x.policyChecked(id(), event.data.outcome);
      return event;
    case 'RunPolicyOverridden':
      await x.policyOverridden(id(), null);
      return event;
    case 'RunPostPlanStarted':
      await x.postPlanStarted(id());
      return event;
    case 'RunPostPlanCompleted':
      await x.postPlanCompleted(id());
      return event;
    case 'RunPlanStageCompleted':
      await x.planStageCompleted(id());
      return event;
    case 'RunApplyStarted':
      await x.applyStarted(id());
      return event;
    case 'RunApplyFinished':
      await x.applyFinished(id(), { log: 'apply log\n' });
      return event;
    case 'RunCanceled':
      await x.canceled(id());
      return event;
    case 'RunErrored':
      await x.errored(id(), { phase: null, message: 'the executor failed' });
      return event;
    case 'RunConfirmed':
      await action('apply');
      return event;
    case 'RunDiscarded':
      await action('discard');
      return event;
    case 'RunCancelRequested': {
      const at = h.clock.now();
      await action('cancel');
      return {
        type: 'RunCancelRequested',
        data: {
          at: at.toISOString(),
          forceCancelAvailableAt: new Date(at.getTime() + 10_000).toISOString(),
        },
      };
    }
    case 'RunForceCanceled':
      h.clock.advance(10_000);
      await action('force-cancel');
      return { type: 'RunForceCanceled', data: { at: h.clock.now().toISOString() } };
    case 'RunForceExecuteRequested':
      await action('force-execute');
      return event;
    case 'RunCommented':
      throw new Error('comments are not lifecycle steps');
    default: {
      const _never: never = event;
      return _never;
    }
  }
}

describe('run machine, every transition through the API', () => {
  it('has a path for every state and every transition the machine defines', () => {
    expect(uncovered(runMachine, EDGES)).toEqual([]);
    const reached = new Set(EDGES.flatMap((e) => e.key.split('|').filter((_, i) => i !== 1)));
    const states = Object.keys(runMachine.root.states).filter((s) => s !== NO_RUN);
    expect(states.filter((s) => !reached.has(s))).toEqual([]);
  });

  it.each(EDGES.map((e) => [e.key, e] as const))('%s', async (_key, edge) => {
    const ws = (await createWorkspace(h, org)).id;
    await uploadedCv(h, ws);
    const forceExecute = edge.steps.some((e) => e.type === 'RunForceExecuteRequested');
    if (forceExecute) {
      // force-execute needs another run holding the lock in a discardable state
      const blocker = await createRun(h, ws);
      await h.settle();
      await drivePlan(h, blocker.id);
    }
    let model = initialTransition(runMachine)[0];
    let spec = { status: NO_RUN, facts: NO_FACTS };
    const run = { id: null as string | null };
    for (const planned of edge.steps) {
      const happened = await perform(ws, run, planned, model);
      expect(model.can(happened), `${planned.type} in ${String(model.value)}`).toBe(true);
      model = transition(runMachine, model, happened)[0];
      spec = specStep(spec.status, spec.facts, happened);
      const real = await getRun(h, run.id!);
      expect(real.attributes.status, `after ${planned.type}`).toBe(spec.status);
      expect(model.value, `the machine after ${planned.type}`).toBe(spec.status);
      const want = specFlags(spec.status, spec.facts, h.clock.now());
      expect(real.attributes.actions, `actions after ${planned.type}`).toEqual(want.actions);
      expect(real.attributes.permissions, `permissions after ${planned.type}`).toEqual(
        want.permissions,
      );
    }
    // what the spec's table says the final status forbids is refused with a 409 and changes nothing
    const forbidden = refusedActions(specFlags(spec.status, spec.facts, h.clock.now()).actions);
    const before = h.core.store.lastPosition();
    for (const name of forbidden) {
      const res = await h.api('POST', `/runs/${run.id!}/actions/${name}`, { body: {} });
      expect(res.status, `${name} in ${spec.status}: ${res.text}`).toBe(409);
      expect(res.json.errors[0]?.title).toBe('transition not allowed');
    }
    expect(h.core.store.lastPosition()).toBe(before);
    expect((await getRun(h, run.id!)).attributes.status).toBe(spec.status);
  });
});

/** The action endpoints whose flag is false. */
function refusedActions(actions: Record<string, boolean>): string[] {
  const endpoint: Record<string, string> = {
    'is-cancelable': 'cancel',
    'is-confirmable': 'apply',
    'is-discardable': 'discard',
    'is-force-cancelable': 'force-cancel',
  };
  return Object.entries(endpoint).flatMap(([flag, name]) => (actions[flag] ? [] : [name]));
}
