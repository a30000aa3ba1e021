import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, newDataDir, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { httpRequest } from '../../support/app.js';
import { queuedRun, uploadedWorkspace } from '../../support/runs-harness.js';
import { filesUnder } from '../../support/secret-scan.js';
import { running } from '../../support/processes.js';

/**
 * A command engine's phase runs in a scratch directory holding the workspace's variables, its
 * state and its configuration, in clear, for terraform to read. It is removed when the phase
 * ends. A daemon killed mid-phase cannot remove it: the next daemon on the data directory does,
 * before it serves (docs/api/execution.md).
 */

const FAKE = resolve('test/fixtures/fake-terraform');
const SECRET = 'scratch-secret-7f3a91c2';

const daemons: RunningDaemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop();
});

/** Every file under `dir` whose content holds `needle`, in clear. */
const filesHolding = (dir: string, needle: string): string[] =>
  existsSync(dir)
    ? filesUnder(dir).filter((f) => statSync(f).isFile() && readFileSync(f).includes(needle))
    : [];

/**
 * The engine processes (the fake terraform) running in a directory under `dir`, found by `pgrep`
 * and their working directories.
 */
function enginesIn(dir: string): number[] {
  let out = '';
  try {
    out = execFileSync('pgrep', ['-f', FAKE]).toString();
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
  const root = realpathSync(dir);
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map(Number)
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/cwd`).startsWith(`${root}${sep}`) && running(pid);
      } catch {
        return false;
      }
    });
}

/** The engines under `dir`, once there is one (the phase writes its files, then starts it). */
const enginesStarted = (dir: string): Promise<number[]> =>
  eventually(async () => {
    const found = enginesIn(dir);
    return found.length > 0 ? found : undefined;
  });

/** Once none of `pids` runs any more (a SIGKILL takes a moment to take effect). */
const allStopped = (pids: number[]): Promise<true> =>
  eventually(async () => (pids.some(running) ? undefined : true));

/**
 * On a daemon serving `url`: a workspace with a sensitive variable and a plan that stays running
 * (the fake engine waits before it plans), queued. Answers the files holding the variable's value
 * under `dirs` once the plan's scratch directory has them.
 */
async function planStillRunning(url: string, token: string, dirs: string[]): Promise<string[]> {
  const api = (method: string, path: string, body?: unknown) =>
    httpRequest(url, method, `/api/v2${path}`, { token, body, headers: { connection: 'close' } });
  const wsId = await uploadedWorkspace(api);
  for (const attributes of [
    { key: 'db_password', value: SECRET, category: 'terraform', sensitive: true },
    { key: 'FAKE_TF_PLAN_DELAY_MS', value: '600000', category: 'env' },
  ]) {
    const v = await api('POST', `/workspaces/${wsId}/vars`, { data: { type: 'vars', attributes } });
    expect(v.status, v.text).toBe(201);
  }
  await queuedRun(api, wsId);
  // The plan runs: the sensitive value is in its scratch directory, in clear, for terraform.
  const held = await eventually(async () => {
    const files = dirs.flatMap((dir) => filesHolding(dir, SECRET));
    return files.length > 0 ? files : undefined;
  });
  expect(held.some((f) => f.endsWith('zzz-keel-workspace.auto.tfvars'))).toBe(true);
  return held;
}

describe("a command engine's scratch directory", () => {
  it('left by a daemon killed mid-phase is removed by the next daemon on the directory before it serves', async () => {
    const dataDir = newDataDir();
    // The daemon's own temporary directory, so that everything it writes there can be searched.
    const tmp = mkdtempSync(join(tmpdir(), 'keel-scratch-tmp-'));
    const env = { KEEL_ENGINE_BIN: FAKE, TMPDIR: tmp };
    const first = await startDaemon({ dataDir, env });
    daemons.push(first);
    // The operator is told what an engine can reach.
    expect(first.output()).toMatch(
      /"engines":\["default"\].*execution engines run a workspace's configuration as this daemon's user/,
    );
    const held = await planStillRunning(first.url, first.bootstrap().runs.user_token, [
      dataDir,
      tmp,
    ]);

    // A second daemon on the directory meanwhile is refused, and leaves the phase's files alone.
    await expect(startDaemon({ dataDir, env })).rejects.toThrow(/another Keel process/);
    expect(held.every((f) => existsSync(f))).toBe(true);

    const engines = await enginesStarted(join(dataDir, 'scratch'));
    await first.stop('SIGKILL');
    // Its terraform dies with it (the parent-death signal it was started with), before any
    // daemon starts again: no one would record what it went on doing.
    await allStopped(engines);
    // Nothing removed the files: the process was killed.
    expect(held.every((f) => existsSync(f))).toBe(true);

    const second = await startDaemon({ dataDir, env });
    daemons.push(second);
    // Serving: what the killed daemon left is gone (the run's plan, started again, has its own).
    expect(held.filter((f) => existsSync(f))).toEqual([]);
  });

  it('of a worker killed mid-phase is removed by the primary as it replaces the worker', async () => {
    const d = await startDaemon({
      args: ['--workers', '2'],
      env: { KEEL_ENGINE_BIN: FAKE, KEEL_POLL_INTERVAL_MS: '100' },
    });
    daemons.push(d);
    const held = await planStillRunning(d.url, d.bootstrap().runs.user_token, [d.dataDir]);
    // Each process has a directory of its own in scratch/, named by its pid: the leader's runs
    // the plan.
    const pid = Number(relative(join(d.dataDir, 'scratch'), held[0]!).split(sep)[0]);
    expect(Number.isInteger(pid) && pid > 0, held[0]).toBe(true);
    const engines = await enginesStarted(join(d.dataDir, 'scratch', String(pid)));
    process.kill(pid, 'SIGKILL');
    // The primary starts another worker, and removes what the dead one left: its files, then its
    // directory (one recursive removal, which another process can see half done).
    const dead = join(d.dataDir, 'scratch', String(pid));
    await eventually(async () => (existsSync(dead) ? undefined : true));
    expect(held.filter((f) => existsSync(f))).toEqual([]);
    // Its terraform was stopped before.
    await allStopped(engines);
  });
});
