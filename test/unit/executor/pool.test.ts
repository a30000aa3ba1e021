import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Execution } from '../../../src/runs/executor/driver.js';
import { fileLiveLogs, memoryLiveLogs } from '../../../src/runs/executor/logs.js';
import { ExecutionPool, PhaseStopped } from '../../../src/runs/executor/pool.js';

/** A phase that ends only when told to, recording how it was stopped. */
function controllable(name: string, events: string[]) {
  let finish: (value: string) => void = () => undefined;
  const result = new Promise<string>((resolve) => (finish = resolve));
  const execution: Execution<string> = {
    result,
    interrupt: () => {
      events.push(`${name}:interrupt`);
      finish(`${name}:canceled`);
    },
    kill: () => {
      events.push(`${name}:kill`);
      finish(`${name}:killed`);
    },
  };
  return { execution, finish: () => finish(`${name}:done`) };
}

describe('execution pool', () => {
  it('aborts what a phase waits on while it starts, on a cancel or a force-cancel', async () => {
    for (const how of ['interrupt', 'kill'] as const) {
      const pool = new ExecutionPool(1);
      let seen: AbortSignal | undefined;
      const started = pool.submit('run-1', (stopped) => {
        seen = stopped;
        // It waits on its inputs; the stop cuts that short with the stop's reason.
        return new Promise<Execution<string>>((_, reject) =>
          stopped.addEventListener('abort', () => reject(stopped.reason as Error)),
        );
      });
      await Promise.resolve();
      expect(seen?.aborted).toBe(false);
      expect(pool[how]('run-1')).toBe(true);
      const err = await started.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PhaseStopped);
      expect((err as PhaseStopped).how).toBe(how);
      // The slot is free again.
      expect(pool.has('run-1')).toBe(false);
      expect(pool.running).toBe(0);
    }
  });

  it('runs at most `limit` phases at once and starts waiting ones in order', async () => {
    const pool = new ExecutionPool(2);
    const events: string[] = [];
    const phases = ['a', 'b', 'c'].map((n) => controllable(n, events));
    const results = phases.map((p, i) =>
      pool.submit(`run-${i}`, () => {
        events.push(`start:${i}`);
        return p.execution;
      }),
    );
    await Promise.resolve();
    expect(events).toEqual(['start:0', 'start:1']);
    expect(pool.running).toBe(2);
    phases[0]?.finish();
    expect(await results[0]).toBe('a:done');
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['start:0', 'start:1', 'start:2']);
    phases[1]?.finish();
    phases[2]?.finish();
    expect(await Promise.all(results)).toEqual(['a:done', 'b:done', 'c:done']);
    await pool.idle();
    expect(pool.running).toBe(0);
  });

  it('routes interrupt and kill to the run, even before its phase has a slot', async () => {
    const pool = new ExecutionPool(1);
    const events: string[] = [];
    const first = controllable('a', events);
    const second = controllable('b', events);
    const r1 = pool.submit('run-1', () => first.execution);
    const r2 = pool.submit('run-2', () => second.execution);
    expect(pool.interrupt('run-2')).toBe(true);
    expect(pool.kill('run-1')).toBe(true);
    expect(await r1).toBe('a:killed');
    expect(await r2).toBe('b:canceled');
    expect(events).toEqual(['a:kill', 'b:interrupt']);
    expect(pool.interrupt('run-3')).toBe(false);
  });

  it('refuses a second phase for a run that already has one', async () => {
    const pool = new ExecutionPool(1);
    const phase = controllable('a', []);
    const running = pool.submit('run-1', () => phase.execution);
    await expect(pool.submit('run-1', () => phase.execution)).rejects.toThrow(
      'already has a phase',
    );
    phase.finish();
    await running;
    expect(pool.has('run-1')).toBe(false);
  });

  it('refuses a concurrency below one', () => {
    expect(() => new ExecutionPool(0)).toThrow(RangeError);
  });
});

describe('live logs', () => {
  it('keep lines in files that survive a new store on the same directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-logs-'));
    try {
      const logs = fileLiveLogs(dir);
      logs.append('plan-1', 'Terraform will perform the following actions:');
      logs.append('plan-1', 'Plan: 1 to add, 0 to change, 0 to destroy.');
      expect(fileLiveLogs(dir).read('plan-1')).toBe(
        'Terraform will perform the following actions:\nPlan: 1 to add, 0 to change, 0 to destroy.\n',
      );
      logs.discard('plan-1');
      expect(logs.read('plan-1')).toBeNull();
      expect(() => logs.append('../evil', 'x')).toThrow('invalid phase id');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keep lines in memory for an in-memory daemon', () => {
    const logs = memoryLiveLogs();
    logs.append('apply-1', 'a');
    logs.append('apply-1', 'b');
    expect(logs.read('apply-1')).toBe('a\nb\n');
    logs.discard('apply-1');
    expect(logs.read('apply-1')).toBeNull();
  });
});
