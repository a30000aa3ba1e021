import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { flowApp, type Flow } from '../../support/executor-flow.js';
import type { TestApp } from '../../support/app.js';

/**
 * Issue 25: no step wedges a run. Every event Keel appends on its own while a run goes through the
 * queue, pre-plan tasks, plan, cost estimation, policy check, post-plan tasks and apply is, in
 * turn, made to throw: once (a fault
 * that clears), or every time (a step that can never succeed). Whatever the fault, every run ends
 * in a final status, and once the fault is lifted the workspace's next run is applied.
 */

let inputs = 0;
/** A configuration that changes the workspace's one resource each time. */
const config = () => ({
  'main.tf': `resource "terraform_data" "a" {\n  input = "${++inputs}"\n}\n`,
});
const FINAL = ['applied', 'errored', 'discarded', 'canceled', 'force_canceled'];

/**
 * Steps that can fail every time without the property being about them: the error and the dead
 * letter are how a failure is recorded, and a workspace whose run can never be unlocked cannot
 * take its next run (it is only tried once).
 */
const RECORDING = new Set(['RunErrored', 'ReactorStepFailed', 'WorkspaceUnlocked']);

const app = flowApp();

/** Makes every system command that proposes an event of `type` throw, `times` times. */
function injectFault(t: TestApp, type: string, times: number): { lift(): void; hits(): number } {
  const handler = t.app.core.handler;
  // Every command is decided by handleSync: alone (through handle) or inside atomically.
  const handle = handler.handleSync.bind(handler);
  let left = times;
  let hits = 0;
  handler.handleSync = (stream, decider, decide, metadata, options) =>
    handle(
      stream,
      decider,
      (state, version) => {
        const events = decide(state, version);
        if (
          left > 0 &&
          metadata.actor?.accessor === 'system' &&
          events.some((e) => e.type === type)
        ) {
          left -= 1;
          hits += 1;
          throw new Error(`injected fault on ${type}`);
        }
        return events;
      },
      metadata,
      options,
    );
  return { lift: () => (handler.handleSync = handle), hits: () => hits };
}

async function costedWorkspace(flow: Flow): Promise<string> {
  const { org, ws } = await flow.workspace({ 'auto-apply': true });
  await flow.call(
    'PATCH',
    `/organizations/${org}/execution-settings`,
    { data: { attributes: { 'cost-estimation-enabled': true } } },
    200,
  );
  const set = await flow.call(
    'POST',
    `/organizations/${org}/policy-sets`,
    {
      data: {
        type: 'policy-sets',
        attributes: { name: 'all' },
        relationships: { workspaces: { data: [{ id: ws, type: 'workspaces' }] } },
      },
    },
    201,
  );
  await flow.call(
    'POST',
    `/organizations/${org}/policies`,
    {
      data: {
        type: 'policies',
        attributes: { name: 'any', query: 'true', 'enforcement-level': 'advisory' },
        relationships: { 'policy-sets': { data: [{ id: set.doc.data.id, type: 'policy-sets' }] } },
      },
    },
    201,
  );
  // Run tasks before and after the plan, at an address where nothing listens: each delivery
  // fails, and an advisory task's failure lets the run go on.
  const task = await flow.call(
    'POST',
    `/organizations/${org}/tasks`,
    { data: { type: 'tasks', attributes: { name: 'absent', url: 'http://127.0.0.1:1/hook' } } },
    201,
  );
  for (const stage of ['pre_plan', 'post_plan'])
    await flow.call(
      'POST',
      `/workspaces/${ws}/tasks`,
      {
        data: {
          type: 'workspace-tasks',
          attributes: { 'enforcement-level': 'advisory', stage },
          relationships: { task: { data: { id: task.doc.data.id, type: 'tasks' } } },
        },
      },
      201,
    );
  return ws;
}

/** Two runs queued on a workspace, settled; their statuses. */
async function twoRuns(flow: Flow, t: TestApp, ws: string): Promise<string[]> {
  const runs = [
    await flow.run(ws, {}, await flow.upload(ws, config())),
    await flow.run(ws, {}, await flow.upload(ws, config())),
  ];
  await t.settle();
  return Promise.all(runs.map((r) => flow.status(r)));
}

/** The types of the events Keel appends by itself for a clean run, in the order it does. */
async function systemSteps(flow: Flow, t: TestApp): Promise<string[]> {
  const ws = await costedWorkspace(flow);
  const from = t.app.core.store.lastPosition();
  expect(await twoRuns(flow, t, ws)).toEqual(['applied', 'applied']);
  const types = t.app.core.store
    .readAll(from, 100_000)
    .filter((e) => e.metadata.actor?.accessor === 'system')
    .map((e) => e.type);
  return [...new Set(types)];
}

describe('fault injection', () => {
  it('whichever step throws, once or every time, every run ends final and the next run is applied', async () => {
    const { t, flow } = app;
    const steps = await systemSteps(flow, t);
    // The pipeline this property is about: each of its steps is among those faulted.
    for (const step of [
      'WorkspaceLocked',
      'RunPlanQueued',
      'RunPlanStarted',
      'RunPlanFinished',
      'RunCostEstimateStarted',
      'CostEstimateRecorded',
      'RunPolicyCheckStarted',
      'PolicyCheckRecorded',
      'RunPlanStageCompleted',
      'RunApplyQueued',
      'RunApplyStarted',
      'RunApplyFinished',
      'WorkspaceUnlocked',
      'RunPrePlanStarted',
      'RunPostPlanStarted',
      'TaskStageStarted',
      'TaskResultUpdated',
      'TaskStageFinished',
      'RunPostPlanCompleted',
    ])
      expect(steps).toContain(step);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...steps),
        fc.constantFrom('once', 'always'),
        async (step, mode) => {
          fc.pre(mode === 'once' || !RECORDING.has(step));
          const ws = await costedWorkspace(flow);
          const fault = injectFault(t, step, mode === 'once' ? 1 : Number.POSITIVE_INFINITY);
          let statuses: string[];
          try {
            statuses = await twoRuns(flow, t, ws);
          } finally {
            fault.lift();
          }
          expect(fault.hits(), `${step} was never attempted`).toBeGreaterThan(0);
          for (const status of statuses) expect(FINAL, `${step} ${mode}`).toContain(status);
          // A fault that clears hurts at most the run it hit.
          if (mode === 'once') expect(statuses).toContain('applied');
          expect(await twoRuns(flow, t, ws)).toEqual(['applied', 'applied']);
        },
      ),
      { numRuns: 60 },
    );
  });
});
