import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import {
  MAIN,
  ROOT,
  eventually,
  keel,
  nodeArgs,
  startDaemon,
  storeEnv,
} from '../../support/daemon.js';
import type { RunningDaemon } from '../../support/daemon.js';

interface Line {
  position: number;
  type: string;
  data: Record<string, unknown>;
}
const lines = (out: string): Line[] =>
  out
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);

describe('keel events on a real data directory', () => {
  let d: RunningDaemon;
  beforeAll(async () => {
    d = await startDaemon();
    const root = d.bootstrap().secrets.root_token;
    const r = await httpRequest(d.url, 'POST', '/v1/pki/root/generate/internal', {
      headers: { 'x-vault-token': root },
      body: { common_name: 'CLI Root', key_type: 'ec' },
    });
    expect(r.status).toBe(200);
  });
  afterAll(async () => {
    await d.stop();
  });

  it('prints the newest N oldest first, and summarises long values unless --full', () => {
    const all = lines(keel(['events', '--data', d.dataDir]).stdout);
    const newest = lines(keel(['events', '--data', d.dataDir, '--newest', '2']).stdout);
    expect(newest.map((e) => e.position)).toEqual(all.slice(-2).map((e) => e.position));
    const oldest = lines(keel(['events', '--data', d.dataDir, '--limit', '2']).stdout);
    expect(oldest.map((e) => e.position)).toEqual(all.slice(0, 2).map((e) => e.position));

    const summarised = keel(['events', '--data', d.dataDir, '--newest', '3']).stdout;
    const full = keel(['events', '--data', d.dataDir, '--newest', '3', '--full']).stdout;
    expect(summarised).toContain('chars; --full prints all');
    expect(full).not.toContain('chars; --full prints all');
    expect(full).toContain('-----BEGIN CERTIFICATE-----');
    expect(full.length).toBeGreaterThan(summarised.length);
  });

  it('--follow prints events appended after it started, and ends on SIGINT', async () => {
    const child = spawn(
      process.execPath,
      nodeArgs(MAIN, ['events', '--data', d.dataDir, '--newest', '0', '--follow']),
      {
        cwd: ROOT,
        env: { ...process.env, ...storeEnv(d.dataDir) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const root = d.bootstrap().secrets.root_token;
    // The follower may start after the write; write until it has seen one.
    await eventually(async () => {
      const w = await httpRequest(d.url, 'POST', '/v1/sys/policies/acl/followed', {
        headers: { 'x-vault-token': root },
        body: { policy: 'path "pki/*" { capabilities = ["read"] }' },
      });
      expect(w.status).toBe(204);
      return out.includes('"type":"AclPolicyWritten"') ? true : undefined;
    });
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  });
});

describe('the keel bin', () => {
  it('serves as the daemon itself: SIGTERM stops it, it exits 0 and releases the data directory', async () => {
    const d = await startDaemon({ entry: join(ROOT, 'bin', 'keel.js') });
    const pid = Number(/"pid":(\d+)[^\n]*"msg":"keel is serving"/.exec(d.output())?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(existsSync(join(d.dataDir, 'keel.lock'))).toBe(true);
    expect(await d.stop('SIGTERM')).toBe(0);
    expect(existsSync(join(d.dataDir, 'keel.lock'))).toBe(false);
    expect(() => process.kill(pid, 0)).toThrow();
  });
});
