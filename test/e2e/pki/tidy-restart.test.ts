import { describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { eventually, startDaemon } from '../../support/daemon.js';

interface Status {
  data: { state: string; tidy_cert_store?: boolean };
}

describe('PKI tidy on the real daemon', () => {
  it('a tidy started before a kill -9 runs after the restart; auto-tidy is still scheduled', async () => {
    // A long poll interval: the started tidy waits in the schedule when the daemon is killed.
    const first = await startDaemon({ args: ['--poll-interval-ms', '600000'] });
    const token = first.bootstrap().secrets.root_token;
    const v1 = (url: string, method: string, path: string, body?: unknown) =>
      httpRequest(url, method, `/v1/pki/${path}`, {
        token,
        tokenHeader: 'x-vault-token',
        ...(body === undefined ? {} : { body }),
      });
    let second: Awaited<ReturnType<typeof startDaemon>> | undefined;
    try {
      await v1(first.url, 'POST', 'root/generate/internal', { common_name: 'R', key_type: 'ec' });
      const auto = await v1(first.url, 'POST', 'config/auto-tidy', {
        enabled: true,
        tidy_cert_store: true,
        interval_duration: '24h',
      });
      expect(auto.status, auto.text).toBe(200);
      const started = await v1(first.url, 'POST', 'tidy', { tidy_cert_store: true });
      expect(started.status).toBe(202);
      expect((await v1(first.url, 'GET', 'tidy-status')).json).toMatchObject({
        data: { state: 'Running' },
      });
      await first.stop('SIGKILL');

      second = await startDaemon({
        dataDir: first.dataDir,
        args: ['--poll-interval-ms', '50'],
      });
      const url = second.url;
      const finished = await eventually(async () => {
        const s = (await v1(url, 'GET', 'tidy-status')).json as Status;
        return s.data.state === 'Finished' ? s : undefined;
      });
      expect(finished.data).toMatchObject({ state: 'Finished', tidy_cert_store: true });
      expect((await v1(url, 'GET', 'config/auto-tidy')).json).toMatchObject({
        data: { enabled: true, interval_duration: 86400 },
      });
    } finally {
      await first.stop('SIGKILL');
      await second?.stop();
    }
  });
});
