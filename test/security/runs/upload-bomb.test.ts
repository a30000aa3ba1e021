import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { bomb } from '../../support/configuration.js';
import { startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { daemonTarget, Flow } from '../../support/executor-flow.js';

/**
 * Archive bombs against the real daemon: a 2 GiB configuration in a ~2 MiB upload is refused with
 * a 422 at upload, the daemon keeps answering while it refuses it, and its memory does not grow by
 * anything like the bomb.
 */

const MIB = 1024 * 1024;
let daemon: RunningDaemon;
let flow: Flow;

/** The daemon's resident memory, now and at its peak, in bytes (Linux). */
const memory = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) =>
    Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
};

beforeAll(async () => {
  daemon = await startDaemon();
  flow = new Flow(daemonTarget(daemon));
});
afterAll(async () => {
  await daemon.stop();
});

describe('configuration upload bombs', () => {
  it.each([
    ['one file declaring 2 GiB', 'declared' as const],
    ['2,048 files of 1 MiB', 'spread' as const],
  ])('refuses %s with a 422 while /v1/sys/health keeps answering', async (_name, shape) => {
    const archive = bomb(2048 * MIB, shape);
    expect(archive.length).toBeLessThan(4 * MIB);
    const { ws } = await flow.workspace();
    const cv = await flow.call(
      'POST',
      `/workspaces/${ws}/configuration-versions`,
      { data: { type: 'configuration-versions', attributes: {} } },
      201,
    );
    const before = memory(daemon.child.pid!);

    let done = false;
    const upload = httpRequest(String(cv.doc.data.attributes['upload-url']), 'PUT', '', {
      rawBody: archive,
    }).finally(() => (done = true));
    // While the upload is refused, every health probe answers within a second: a liveness bound,
    // not a measurement (a probe takes milliseconds; the reported daemon took 14.6 s).
    const probes: number[] = [];
    do {
      const started = performance.now();
      const health = await httpRequest(daemon.url, 'GET', '/v1/sys/health');
      expect(health.status).toBe(200);
      probes.push(performance.now() - started);
    } while (!done);
    const res = await upload;

    expect(res.status, res.text).toBe(422);
    const error = (res.json as { errors: { status: string; title: string; detail: string }[] })
      .errors[0]!;
    expect(error).toMatchObject({ status: '422', title: 'invalid configuration archive' });
    expect(error.detail).toMatch(/expands to more than 33554432 bytes/);
    expect(Math.max(...probes)).toBeLessThan(1000);

    const shown = await flow.call(
      'GET',
      `/configuration-versions/${cv.doc.data.id}`,
      undefined,
      200,
    );
    expect(shown.doc.data.attributes.status).toBe('errored');
    const runs = await flow.call<{ data: unknown[] }>('GET', `/workspaces/${ws}/runs`);
    expect(runs.doc.data).toEqual([]);
    // Nothing near the bomb was held: the peak resident memory grew by less than 128 MiB.
    expect(memory(daemon.child.pid!).peak - before.peak).toBeLessThan(128 * MIB);
  });
});
