import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually, newDataDir, ROOT, storeEnv } from '../../support/daemon.js';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Whether something accepts connections at the address. */
const listening = (url: URL) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

describe('npm start', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    'stops the daemon with its launcher: %s to npm leaves no Keel process and frees the port',
    async (signal) => {
      const dataDir = newDataDir();
      // A supervisor that tracks the launcher's pid: npm in its own session, signalled alone.
      const npm = spawn('npm', ['start', '--silent'], {
        cwd: ROOT,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          ...storeEnv(dataDir),
          KEEL_DATA: dataDir,
          KEEL_LISTEN: '127.0.0.1:0',
          KEEL_LOG_LEVEL: 'info',
        },
      });
      let out = '';
      npm.stdout.on('data', (d: Buffer) => (out += d.toString()));
      npm.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const npmExited = new Promise<void>((done) => npm.once('exit', () => done()));
      let daemonPid: number | undefined;
      try {
        const serving = await eventually(async () => {
          const m = /"address":"([^"]+)".*"pid":(\d+).*"msg":"keel is serving"/.exec(out);
          return m === null ? undefined : { url: new URL(m[1]!), pid: Number(m[2]) };
        }, 90_000);
        daemonPid = serving.pid;
        expect(daemonPid).not.toBe(npm.pid);
        expect(await listening(serving.url)).toBe(true);

        npm.kill(signal);
        await npmExited;
        await eventually(async () => (alive(serving.pid) ? undefined : true));
        expect(await listening(serving.url)).toBe(false);
        expect(existsSync(join(dataDir, 'keel.lock'))).toBe(false);
        expect(out).toContain('"msg":"stopped"');
      } finally {
        if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
        if (daemonPid !== undefined && alive(daemonPid)) process.kill(daemonPid, 'SIGKILL');
      }
    },
    120_000,
  );
});
