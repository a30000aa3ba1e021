import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { builtinDriver } from '../../../src/runs/executor/builtin/index.js';
import { commandDriver } from '../../../src/runs/executor/command/index.js';
import type { Driver } from '../../../src/runs/executor/driver.js';
import { memoryLiveLogs } from '../../../src/runs/executor/logs.js';
import { Executor, RECOVERY_LINES } from '../../../src/runs/executor/service.js';
import type { ExecutorPort, Phase, PhaseRun } from '../../../src/runs/executor/service.js';
import { defaultFlags } from '../../../src/runs/executor/types.js';
import type { StateV4 } from '../../../src/runs/executor/types.js';
import { tarball } from '../../support/configuration.js';

/** An in-memory stand-in for the runs context: it stores what the executor records. */
class MemoryRuns implements ExecutorPort {
  readonly outcomes: { run: string; phase: Phase; kind: string; log: string; message?: string }[] =
    [];
  readonly artifacts = new Map<string, Buffer>();
  state: StateV4 | null = null;
  constructor(readonly files: Record<string, string>) {}
  configuration(id: string) {
    if (id !== 'cv-1') throw new Error(`configuration version ${id} has no upload`);
    return tarball(this.files);
  }
  currentState() {
    return this.state;
  }
  async workspaceVariables() {
    return [
      { key: 'name', value: 'web', category: 'terraform' as const, hcl: false, sensitive: true },
    ];
  }
  planArtifact(runId: string) {
    return this.artifacts.get(runId) ?? null;
  }
  phaseId(runId: string, phase: Phase) {
    return `${phase}-${runId.slice(4)}`;
  }
  async planFinished(runId: string, r: { artifact: Buffer; log: string }) {
    this.artifacts.set(runId, r.artifact);
    this.outcomes.push({ run: runId, phase: 'plan', kind: 'finished', log: r.log });
  }
  async applyFinished(runId: string, r: { state: StateV4; log: string }) {
    this.state = r.state;
    this.outcomes.push({ run: runId, phase: 'apply', kind: 'finished', log: r.log });
  }
  async phaseErrored(runId: string, phase: Phase, f: { message: string; log: string }) {
    this.outcomes.push({ run: runId, phase, kind: 'errored', log: f.log, message: f.message });
  }
  async phaseCanceled(runId: string, phase: Phase, o: { log: string }) {
    this.outcomes.push({ run: runId, phase, kind: 'canceled', log: o.log });
  }
}

const CONFIG = {
  'main.tf': 'variable "name" {}\nresource "aws_instance" "web" {\n  ami = "ami-${var.name}"\n}\n',
};
const run = (id: string, cv = 'cv-1'): PhaseRun => ({
  id,
  workspaceId: 'ws-1',
  configurationVersionId: cv,
  flags: defaultFlags,
  variables: [],
});

function executor(port: ExecutorPort, driver: Driver, logs = memoryLiveLogs()) {
  const faults: unknown[] = [];
  return {
    exec: new Executor({
      port,
      logs,
      driverFor: () => driver,
      concurrency: 2,
      onFault: (_id, e) => faults.push(e),
    }),
    logs,
    faults,
  };
}

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'keel-exec-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('executor', () => {
  const builtin = () =>
    builtinDriver({ newId: (t, a) => `${t}:${a}`, newLineage: () => 'lineage' });

  it('records a plan and then an apply, with their logs', async () => {
    const port = new MemoryRuns(CONFIG);
    const { exec, logs } = executor(port, builtin());
    await exec.plan(run('run-1'));
    await exec.apply(run('run-1'));
    expect(port.outcomes.map((o) => `${o.phase}:${o.kind}`)).toEqual([
      'plan:finished',
      'apply:finished',
    ]);
    expect(port.outcomes[0]?.log).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
    expect(port.outcomes[1]?.log).toContain(
      'Apply complete! Resources: 1 added, 0 changed, 0 destroyed.',
    );
    expect(port.state?.resources[0]?.instances[0]?.attributes).toEqual({
      ami: 'ami-web',
      id: 'aws_instance:aws_instance.web',
    });
    expect(logs.read('plan-1')).toBeNull();
  });

  it('records a configuration error as an errored plan with the diagnostic', async () => {
    const port = new MemoryRuns({ 'main.tf': 'resource "a" {' });
    await executor(port, builtin()).exec.plan(run('run-2'));
    expect(port.outcomes[0]).toMatchObject({ kind: 'errored' });
    expect(port.outcomes[0]?.log).toContain('Error: ');
  });

  it('errors the run, with a line saying why, when Keel itself fails', async () => {
    const port = new MemoryRuns(CONFIG);
    const { exec, faults } = executor(port, builtin());
    await exec.plan(run('run-3', 'cv-missing'));
    expect(port.outcomes[0]).toMatchObject({
      kind: 'errored',
      message: 'configuration version cv-missing has no upload',
    });
    expect(port.outcomes[0]?.log).toContain(
      'Error: plan failed inside Keel: configuration version cv-missing has no upload',
    );
    expect(faults).toHaveLength(1);
    await exec.apply(run('run-4'));
    expect(port.outcomes[1]).toMatchObject({
      phase: 'apply',
      kind: 'errored',
      message: 'run run-4 has no plan to apply',
    });
  });

  it('errors a phase that outlives the phase timeout, after killing it (issue 25)', async () => {
    vi.useFakeTimers();
    try {
      const port = new MemoryRuns(CONFIG);
      let killed = 0;
      // A plan that never ends by itself: only a kill stops it.
      const hanging: Driver = {
        name: 'command',
        plan: () => {
          let stop: (r: { status: 'canceled' }) => void = () => undefined;
          return {
            result: new Promise((resolve) => (stop = resolve)),
            interrupt: () => undefined,
            kill: () => {
              killed += 1;
              stop({ status: 'canceled' });
            },
          };
        },
        apply: () => {
          throw new Error('not reached');
        },
      };
      const exec = new Executor({
        port,
        logs: memoryLiveLogs(),
        driverFor: () => hanging,
        concurrency: 1,
        phaseTimeoutMs: 30 * 60_000,
      });
      const done = exec.plan(run('run-9'));
      await vi.advanceTimersByTimeAsync(30 * 60_000 - 1);
      expect(port.outcomes).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      await done;
      expect(killed).toBe(1);
      expect(port.outcomes[0]).toMatchObject({
        kind: 'errored',
        message: 'the plan did not finish within 30 minutes and was stopped',
      });
      expect(port.outcomes[0]?.log).toContain('did not finish within 30 minutes');
    } finally {
      vi.useRealTimers();
    }
  });

  it('after a restart plans again and errors interrupted applies', async () => {
    const port = new MemoryRuns(CONFIG);
    const { exec } = executor(port, builtin());
    await exec.recover([
      { run: run('run-5'), phase: 'plan' },
      { run: run('run-6'), phase: 'apply' },
    ]);
    const byRun = Object.fromEntries(port.outcomes.map((o) => [o.run, o]));
    expect(byRun['run-5']).toMatchObject({ kind: 'finished' });
    expect(byRun['run-5']?.log).toContain(RECOVERY_LINES.plan);
    expect(byRun['run-6']).toMatchObject({ kind: 'errored', message: RECOVERY_LINES.apply });
  });

  it('streams a long plan to the live log and cancels it with SIGINT', async () => {
    const port = new MemoryRuns(CONFIG);
    const driver = commandDriver({
      binary: resolve('test/fixtures/fake-terraform'),
      scratchRoot: scratch,
      baseEnv: { PATH: process.env.PATH ?? '', FAKE_TF_PLAN_DELAY_MS: '600000' },
    });
    // a first plan and apply give the workspace a state, so the next plan has something to refresh
    const fast = executor(port, builtin());
    await fast.exec.plan(run('run-7'));
    await fast.exec.apply(run('run-7'));
    const logs = memoryLiveLogs();
    const seen = new Promise<void>((done) => {
      const append = logs.append.bind(logs);
      logs.append = (id, line) => {
        append(id, line);
        if (line.includes('Refreshing state')) done();
      };
    });
    const { exec } = executor(port, driver, logs);
    const planned = exec.plan(run('run-8'));
    await seen;
    expect(logs.read('plan-8')).toContain('aws_instance.web: Refreshing state...');
    expect(port.outcomes.filter((o) => o.run === 'run-8')).toEqual([]);
    expect(exec.cancel('run-8')).toBe(true);
    await planned;
    const outcome = port.outcomes.find((o) => o.run === 'run-8');
    expect(outcome).toMatchObject({ phase: 'plan', kind: 'canceled' });
    expect(outcome?.log).toContain('Interrupt received.');
    expect(exec.cancel('run-8')).toBe(false);
    await exec.idle();
  });
});
