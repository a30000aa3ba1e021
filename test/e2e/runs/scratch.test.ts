import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, newDataDir, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { configTarball } from '../../support/runs-harness.js';

/**
 * A command engine's phase runs in a scratch directory holding the workspace's variables, its
 * state and its configuration, in clear, for terraform to read. It is removed when the phase
 * ends. A daemon killed mid-phase cannot remove it: the next daemon on the data directory does,
 * before it serves (docs/api/execution.md).
 */

const FAKE = resolve('test/fixtures/fake-terraform');
const SECRET = 'scratch-secret-7f3a91c2';
const JSONAPI = 'application/vnd.api+json';

const daemons: RunningDaemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop('SIGKILL');
});

/** Every file under `dir` whose content holds `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile() && readFileSync(child).includes(needle)) found.push(child);
    }
  };
  if (existsSync(dir)) walk(dir);
  return found;
}

describe("a command engine's scratch directory", () => {
  it('left by a daemon killed mid-phase is removed by the next daemon on the directory before it serves', async () => {
    const dataDir = newDataDir();
    // The daemon's own temporary directory, so that everything it writes there can be searched.
    const tmp = mkdtempSync(join(tmpdir(), 'keel-scratch-tmp-'));
    const env = { KEEL_ENGINE_BIN: FAKE, TMPDIR: tmp };
    const first = await startDaemon({ dataDir, env });
    daemons.push(first);
    const token = first.bootstrap().runs.user_token;
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${first.url}/api/v2${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': JSONAPI }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return {
        status: res.status,
        json: (text === '' ? {} : JSON.parse(text)) as {
          data: { id: string; attributes: Record<string, unknown> };
        },
      };
    };
    const org = await api('POST', '/organizations', {
      data: { type: 'organizations', attributes: { name: 'acme', email: 'ops@example.com' } },
    });
    expect(org.status).toBe(201);
    const ws = await api('POST', '/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'prod' } },
    });
    expect(ws.status).toBe(201);
    const wsId = ws.json.data.id;
    for (const attributes of [
      { key: 'db_password', value: SECRET, category: 'terraform', sensitive: true },
      // The fake engine waits this long before it plans: the phase is still running when killed.
      { key: 'FAKE_TF_PLAN_DELAY_MS', value: '600000', category: 'env' },
    ]) {
      const v = await api('POST', `/workspaces/${wsId}/vars`, {
        data: { type: 'vars', attributes },
      });
      expect(v.status).toBe(201);
    }
    const cv = await api('POST', `/workspaces/${wsId}/configuration-versions`, {
      data: { type: 'configuration-versions', attributes: {} },
    });
    expect(cv.status).toBe(201);
    const put = await fetch(String(cv.json.data.attributes['upload-url']), {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array(configTarball()),
    });
    expect(put.status).toBe(200);

    // The plan runs: the sensitive value is in its scratch directory, in clear, for terraform.
    const held = await eventually(async () => {
      const files = [...filesHolding(dataDir, SECRET), ...filesHolding(tmp, SECRET)];
      return files.length > 0 ? files : undefined;
    });
    expect(held.some((f) => f.endsWith('zzz-keel-workspace.auto.tfvars'))).toBe(true);

    // A second daemon on the directory meanwhile is refused, and leaves the phase's files alone.
    await expect(startDaemon({ dataDir, env })).rejects.toThrow(/another Keel process/);
    expect(held.every((f) => existsSync(f))).toBe(true);

    await first.stop('SIGKILL');
    // Nothing removed it: the process was killed.
    expect(held.every((f) => existsSync(f))).toBe(true);

    const second = await startDaemon({ dataDir, env });
    daemons.push(second);
    // Serving: what the killed daemon left is gone (the run's plan, started again, has its own).
    expect(held.filter((f) => existsSync(f))).toEqual([]);
  });
});
