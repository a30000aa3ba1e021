import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../../src/app.js';
import { createApp } from '../../../src/app.js';
import { testConfig } from '../../../src/config.js';
import { ManualClock } from '../../../src/core/clock.js';
import { Leadership } from '../../../src/core/leadership.js';
import type { Durability } from '../../../src/core/group-commit.js';
import { sequentialIds } from '../../../src/core/ids.js';
import { silentLogger } from '../../../src/core/logger.js';
import { listen } from '../../../src/http/server.js';
import type { ListeningServer } from '../../../src/http/server.js';
import { RECOVERY_LINES } from '../../../src/runs/executor/service.js';
import { TEST_SEAL_KEY, httpRequest } from '../../support/app.js';
import type { TestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';

const FAKE = resolve('test/fixtures/fake-terraform');
const CONFIG = { 'main.tf': 'resource "aws_instance" "web" {\n  ami = "ami-123"\n}\n' };

interface Daemon {
  app: App;
  server: ListeningServer;
  testApp: TestApp;
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A daemon on a data directory that outlives it, so a second daemon can start on the same log. */
async function daemon(
  dataDir: string,
  engineBin: string | null,
  token: string | null,
  engines: Record<string, string> = {},
  shared?: { clock: ManualClock; databasePath?: string; durability?: Durability },
): Promise<Daemon> {
  const clock = shared?.clock ?? new ManualClock('2026-01-01T00:00:00.000Z');
  // `shared`: one of several processes on the log (as under --workers), on one clock.
  const config = testConfig(dataDir, { engineBin, engines, ...(shared ? { workers: 2 } : {}) });
  // Ids continue where the first daemon stopped: a restart must not reuse them.
  const ids = sequentialIds();
  if (token !== null) for (let i = 0; i < 1000; i += 1) ids.id('skip');
  const app = createApp(config, {
    clock,
    ids,
    logger: silentLogger(),
    sealKey: TEST_SEAL_KEY,
    ...(shared?.databasePath === undefined ? {} : { databasePath: shared.databasePath }),
    ...(shared?.durability === undefined ? {} : { durability: shared.durability }),
  });
  const tokens = token === null ? app.bootstrap() : null;
  const server = await listen(app.callback, '127.0.0.1', 0);
  const testApp: TestApp = {
    app,
    clock,
    config,
    dataDir,
    tokens: tokens ?? {
      address: '',
      runs: { user_token: token ?? '' },
      secrets: { root_token: '' },
      cloud: {
        access_key_id: '',
        secret_access_key: '',
        iam_endpoint: '',
        sts_endpoint: '',
        region: '',
      },
    },
    server,
    request: (method, path, opts = {}) => httpRequest(server.url, method, path, opts),
    settle: () => app.settle(),
    close: async () => {
      await server.close();
      await app.close();
    },
  };
  return { app, server, testApp };
}

function logged(app: App, pattern: RegExp): Promise<void> {
  const logs = app.executor.liveLogs;
  const append = logs.append.bind(logs);
  return new Promise((done) => {
    logs.append = (id, line) => {
      append(id, line);
      if (pattern.test(line)) done();
    };
  });
}

describe('a restart while phases run', () => {
  it('plans again a plan that was running, and errors an apply that was running', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'keel-restart-'));
    dirs.push(dataDir);
    const first = await daemon(dataDir, FAKE, null);
    const flow = new Flow(first.testApp);
    const token = flow.token;

    // one run stuck in its plan, another stuck in its apply
    const planning = await flow.workspace();
    await flow.call(
      'POST',
      `/workspaces/${planning.ws}/vars`,
      {
        data: {
          type: 'vars',
          attributes: { key: 'FAKE_TF_PLAN_DELAY_MS', value: '600000', category: 'env' },
        },
      },
      201,
    );
    const applying = await flow.workspace();
    await flow.call(
      'POST',
      `/workspaces/${applying.ws}/vars`,
      {
        data: {
          type: 'vars',
          attributes: { key: 'FAKE_TF_APPLY_DELAY_MS', value: '600000', category: 'env' },
        },
      },
      201,
    );
    const applyCv = await flow.upload(applying.ws, CONFIG);
    const applyRun = await flow.run(applying.ws, {}, applyCv);
    await first.app.settle();
    const creating = logged(first.app, /Creating\.\.\./);
    await flow.action(applyRun, 'apply');
    await creating;
    const planCv = await flow.upload(planning.ws, CONFIG);
    // the fake binary waits before planning each change, so this plan stays running
    const refreshing = logged(first.app, /Initializing the backend/);
    const planRun = await flow.run(planning.ws, {}, planCv);
    await refreshing;
    expect(await flow.status(planRun)).toBe('planning');
    expect(await flow.status(applyRun)).toBe('applying');

    // the daemon goes away: its phases are killed and nothing more is recorded
    await first.testApp.close();
    await first.app.executor.executor.idle();

    const second = await daemon(dataDir, null, token);
    const again = new Flow(second.testApp);
    await second.app.settle();
    expect(await again.status(planRun)).toBe('planned');
    const plan = await again.phase(planRun, 'plan');
    expect(plan.log).toContain(RECOVERY_LINES.plan);
    expect(plan.log).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
    expect(await again.status(applyRun)).toBe('errored');
    expect((await again.phase(applyRun, 'apply')).log).toContain(RECOVERY_LINES.apply);
    await second.testApp.close();
  });
});

describe('several processes on one log', () => {
  it("takes over a plan whose claim ran out, and the first process's outcome is not recorded", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'keel-claims-'));
    dirs.push(dataDir);
    const clock = new ManualClock('2026-01-01T00:00:00.000Z');
    const a = await daemon(dataDir, FAKE, null, {}, { clock });
    const flow = new Flow(a.testApp);
    // The second has a data directory (live logs) of its own, as a node of a cluster has.
    const other = mkdtempSync(join(tmpdir(), 'keel-claims-'));
    dirs.push(other);
    const databasePath = join(dataDir, 'keel.sqlite');
    const b = await daemon(other, FAKE, flow.token, {}, { clock, databasePath });
    const lead = (d: Daemon) => {
      const executor = d.app.contexts.find((c) => c.name === 'executor');
      if (executor?.lead === undefined) throw new Error('the executor takes part in leading');
      executor.lead();
    };
    const { ws } = await flow.workspace();
    await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      {
        data: {
          type: 'vars',
          attributes: { key: 'FAKE_TF_PLAN_DELAY_MS', value: '1500', category: 'env' },
        },
      },
      201,
    );
    const cv = await flow.upload(ws, CONFIG);
    // The first process runs the plan: the run is queued through it and its reactors react.
    const started = logged(a.app, /Initializing the backend/);
    const run = await flow.run(ws, {}, cv);
    await a.app.reactors.settle();
    await started;
    expect(a.app.executor.executor.has(run)).toBe(true);

    // While its claim is held (renewed), the other leaves the plan alone.
    lead(a);
    lead(b);
    expect(b.app.executor.executor.has(run)).toBe(false);
    // The first stops renewing (it died, or lost the lead); its claim runs out and the plan is
    // started again by the second, exactly once however often it polls.
    clock.advance(6000);
    lead(b);
    lead(b);
    expect(b.app.executor.executor.has(run)).toBe(true);
    await Promise.all([a.app.executor.executor.idle(), b.app.executor.executor.idle()]);

    expect(await flow.status(run)).toBe('planned');
    const types = a.app.core.store
      .readAll(0, 10_000)
      .filter((e) => e.stream === run)
      .map((e) => e.type);
    expect(types.filter((t) => t === 'RunPlanStarted')).toHaveLength(1);
    // The first process's plan ended too, but only the claim holder recorded an outcome.
    expect(types.filter((t) => /^RunPlan(Finished|Errored|Canceled)$/.test(t))).toHaveLength(1);
    expect((await flow.phase(run, 'plan')).log).toContain(RECOVERY_LINES.plan);
    await b.testApp.close();
    await a.testApp.close();
  });
});

describe('a run queued for a phase that no process started', () => {
  it('is started by the leader once the claim that made its reaction pass it over runs out', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'keel-claims-'));
    dirs.push(dataDir);
    const clock = new ManualClock('2026-01-01T00:00:00.000Z');
    const a = await daemon(dataDir, FAKE, null, {}, { clock });
    const flow = new Flow(a.testApp);
    const { ws } = await flow.workspace();
    const cv = await flow.upload(ws, CONFIG);
    const run = await flow.run(ws, {}, cv);
    // Another process holds the plan's claim (it froze, say): the reaction to the run's queuing
    // meets it and passes the run over.
    const elsewhere = new Leadership(a.app.core.db, clock, {
      holder: 'another process',
      ttlMs: 5000,
      name: `run-plan:${run}`,
    });
    expect(elsewhere.tryLead()).toBe(true);
    await a.app.reactors.settle();
    expect(await flow.status(run)).toBe('plan_queued');
    const executor = a.app.contexts.find((c) => c.name === 'executor');
    if (executor?.lead === undefined) throw new Error('the executor takes part in leading');
    executor.lead();
    expect(a.app.executor.executor.has(run)).toBe(false);
    // The claim runs out: the leader's next poll starts the plan, once however often it polls.
    clock.advance(6000);
    executor.lead();
    executor.lead();
    // The command that moves it into planning goes through group commit first.
    while (!a.app.executor.executor.has(run)) await new Promise((r) => setImmediate(r));
    await a.app.executor.executor.idle();
    await a.app.reactors.settle();
    expect(await flow.status(run)).toBe('planned');
    const types = a.app.core.store
      .readAll(0, 10_000)
      .filter((e) => e.stream === run)
      .map((e) => e.type);
    expect(types.filter((t) => t === 'RunPlanStarted')).toHaveLength(1);
    await a.testApp.close();
  });
});

describe('a phase being started', () => {
  it('is not taken for one a restart interrupted while the command that started it is not yet durable', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'keel-starting-'));
    dirs.push(dataDir);
    const clock = new ManualClock('2026-01-01T00:00:00.000Z');
    // Holds the batch that records RunPlanStarted between its COMMIT and its acknowledgement:
    // a read sees the run planning, and the executor has not started the phase yet.
    let holding = false;
    let release = () => undefined as void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const started: { app?: App } = {};
    const durability: Durability = {
      commit(commitNow) {
        commitNow();
        const store = started.app?.core.store;
        const last = store?.readAll(store.lastPosition() - 1, 1)[0];
        if (last?.type !== 'RunPlanStarted') return Promise.resolve();
        holding = true;
        return held;
      },
    };
    const a = await daemon(dataDir, FAKE, null, {}, { clock, durability });
    started.app = a.app;
    const flow = new Flow(a.testApp);
    const { ws } = await flow.workspace();
    const cv = await flow.upload(ws, CONFIG);
    const run = await flow.run(ws, {}, cv);
    await vi.waitFor(() => {
      if (!holding) throw new Error('the plan has not been started yet');
    });
    expect(await flow.status(run)).toBe('planning');
    expect(a.app.executor.executor.has(run)).toBe(false);
    // The leader's poll meanwhile: a run planning with no phase here looks interrupted.
    const executor = a.app.contexts.find((c) => c.name === 'executor');
    executor?.lead?.();
    release();
    await a.app.settle();
    await a.app.executor.executor.idle();
    await a.app.settle();

    expect(await flow.status(run)).toBe('planned');
    expect((await flow.phase(run, 'plan')).log).not.toContain(RECOVERY_LINES.plan);
    await a.testApp.close();
  });
});

describe('a restart without the engine a workspace chose', () => {
  it("errors the workspace's next run, saying the engine is not configured", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'keel-restart-'));
    dirs.push(dataDir);
    const first = await daemon(dataDir, null, null, { fake: FAKE });
    const flow = new Flow(first.testApp);
    const token = flow.token;
    const { ws } = await flow.workspace({ 'execution-engine': 'fake' });
    const cv = await flow.upload(ws, CONFIG);
    await first.testApp.close();

    const second = await daemon(dataDir, null, token);
    const again = new Flow(second.testApp);
    const shown = await again.call('GET', `/workspaces/${ws}`, undefined, 200);
    expect(shown.doc.data.attributes['execution-engine']).toBe('fake');
    const run = await again.run(ws, {}, cv);
    await second.app.settle();
    expect(await again.status(run)).toBe('errored');
    expect((await again.phase(run, 'plan')).log).toContain(
      'execution engine fake is not configured on this daemon',
    );
    // The workspace can be pointed at an engine that exists.
    await again.call(
      'PATCH',
      `/workspaces/${ws}`,
      { data: { attributes: { 'execution-engine': 'builtin' } } },
      200,
    );
    await second.testApp.close();
  });
});
