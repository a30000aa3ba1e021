import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stopProcessesIn } from '../../../src/scratch-processes.js';
import { running } from '../../support/processes.js';

/**
 * What a killed daemon's phases left running in its scratch is stopped by whoever takes the
 * scratch over: every process working under the directory, and nothing else.
 */
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A process sleeping in `cwd`, once it runs. */
async function sleeperIn(cwd: string): Promise<ChildProcess> {
  const child = spawn('sleep', ['600'], { cwd, stdio: 'ignore' });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', reject);
  });
  return child;
}

/** The exit of a child, as its parent sees it. */
const exited = (child: ChildProcess) =>
  new Promise<NodeJS.Signals | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode);
    else child.once('exit', (_code, signal) => resolve(signal));
  });

describe('stopProcessesIn', () => {
  it('kills the processes working under the directory, at any depth, and no other', async () => {
    const root = mkdtempSync(join(tmpdir(), 'keel-scratch-procs-'));
    dirs.push(root);
    const scratch = join(root, 'scratch');
    const deep = join(scratch, '4242', 'keel-run-x');
    const beside = join(root, 'scratch-not');
    mkdirSync(deep, { recursive: true });
    mkdirSync(beside, { recursive: true });
    const inside = await sleeperIn(deep);
    const atRoot = await sleeperIn(scratch);
    const outside = await sleeperIn(beside);

    const stopped = stopProcessesIn(scratch);
    expect(stopped.sort()).toEqual([inside.pid, atRoot.pid].sort());
    expect(await exited(inside)).toBe('SIGKILL');
    expect(await exited(atRoot)).toBe('SIGKILL');
    expect(running(outside.pid!)).toBe(true);
    expect(running(process.pid)).toBe(true);
  });

  it('finds a process whose directory was removed under it, and nothing in a directory never made', async () => {
    const root = mkdtempSync(join(tmpdir(), 'keel-scratch-procs-'));
    dirs.push(root);
    const gone = join(root, 'scratch', '7');
    mkdirSync(gone, { recursive: true });
    const child = await sleeperIn(gone);
    rmSync(gone, { recursive: true });
    expect(stopProcessesIn(join(root, 'scratch'))).toEqual([child.pid]);
    expect(await exited(child)).toBe('SIGKILL');
    expect(stopProcessesIn(join(root, 'never'))).toEqual([]);
  });
});
