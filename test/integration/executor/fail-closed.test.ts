import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { flowApp } from '../../support/executor-flow.js';

/**
 * No step wedges a run: a plan that leaves no resources goes through cost estimation on the
 * command engine (terraform leaves `resources` out of such a plan's JSON), and a step that throws
 * errors its run, with the error in the log, so that the workspace's next run goes on.
 */

const FAKE = resolve('test/fixtures/fake-terraform');
const counted = (n: number) => ({
  'main.tf': `resource "terraform_data" "a" {\n  count = ${n}\n  input = "x"\n}\n`,
});

const app = flowApp({ config: { engines: { fake: FAKE } } });

async function costedWorkspace(): Promise<string> {
  const { org, ws } = await app.flow.workspace({ 'execution-engine': 'fake' });
  await app.flow.call(
    'PATCH',
    `/organizations/${org}/execution-settings`,
    { data: { attributes: { 'cost-estimation-enabled': true } } },
    200,
  );
  return ws;
}

async function applied(ws: string, files: Record<string, string>): Promise<string> {
  const run = await app.flow.run(ws, {}, await app.flow.upload(ws, files));
  await app.t.settle();
  expect(await app.flow.status(run)).toBe('cost_estimated');
  await app.flow.action(run, 'apply');
  await app.t.settle();
  expect(await app.flow.status(run)).toBe('applied');
  return run;
}

describe('a plan that leaves no resources, with cost estimation (issue 25)', () => {
  it('is estimated, applied, and the next run of the workspace goes on', async () => {
    const ws = await costedWorkspace();
    await applied(ws, counted(2));
    const down = await applied(ws, counted(0));
    const estimate = await app.flow.call('GET', `/runs/${down}/cost-estimate`, undefined, 200);
    expect(estimate.doc.data.attributes).toMatchObject({
      status: 'finished',
      'proposed-monthly-cost': '0.00',
      'resources-count': 2,
    });
    const lock = await app.flow.call('GET', `/workspaces/${ws}`, undefined, 200);
    expect(lock.doc.data.attributes.locked).toBe(false);
    await applied(ws, counted(1));
  });
});

describe('a step that throws', () => {
  it('errors the run with the error in its plan log, unlocks the workspace, and records a dead letter', async () => {
    const ws = await costedWorkspace();
    // Every estimate throws, as the one of the issue did, until the fault is lifted.
    const core = app.t.app.core;
    // The estimate is recorded with the run's command inside `atomically`: the synchronous path.
    const handle = core.handler.handleSync.bind(core.handler);
    let failing = true;
    core.handler.handleSync = (stream, decider, decide, metadata, options) =>
      handle(
        stream,
        decider,
        (state, version) => {
          const events = decide(state, version);
          if (failing && events.some((e) => e.type === 'CostEstimateRecorded'))
            throw new TypeError("Cannot read properties of undefined (reading 'reduce')");
          return events;
        },
        metadata,
        options,
      );
    try {
      const first = await app.flow.run(ws, {}, await app.flow.upload(ws, counted(1)));
      const second = await app.flow.run(ws, {}, await app.flow.upload(ws, counted(1)));
      await app.t.settle();
      expect(await app.flow.status(first)).toBe('errored');
      const { log } = await app.flow.phase(first, 'plan');
      expect(log).toContain("Cannot read properties of undefined (reading 'reduce')");
      expect(log).toContain('Plan: 1 to add');
      // The queue moved on: the second run holds the workspace and is stuck nowhere.
      expect(['errored', 'cost_estimated']).toContain(await app.flow.status(second));
      const dead = core.store
        .readAll(0, 100_000)
        .filter((e) => e.type === 'ReactorStepFailed' && e.stream.startsWith('dead-letter-'));
      expect(dead.map((e) => (e.data as { runId: string | null }).runId)).toContain(first);
      failing = false;
      const third = await app.flow.run(ws, {}, await app.flow.upload(ws, counted(1)));
      if ((await app.flow.status(second)) === 'cost_estimated')
        await app.flow.action(second, 'discard');
      await app.t.settle();
      expect(await app.flow.status(third)).toBe('cost_estimated');
      await app.flow.action(third, 'apply');
      await app.t.settle();
      expect(await app.flow.status(third)).toBe('applied');
    } finally {
      core.handler.handleSync = handle;
    }
  });
});
