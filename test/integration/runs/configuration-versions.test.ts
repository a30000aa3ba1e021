import { gzipSync } from 'node:zlib';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configTarball, startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { rawTarball } from '../../support/configuration.js';
import { createOrg, createWorkspace, getRun } from '../../support/runs-flow.js';

/** Configuration versions: create, the one-time upload address, upload checks, auto-queued runs. */

let h: RunsHarness;
let org: string;
beforeAll(async () => {
  h = await startRunsHarness({ config: { uploadLimitBytes: 64 * 1024 } });
  org = await createOrg(h);
});
afterAll(async () => h.close());

async function newCv(ws: string, attributes: Record<string, unknown> = {}) {
  const res = await h.api('POST', `/workspaces/${ws}/configuration-versions`, {
    body: { data: { type: 'configuration-versions', attributes } },
  });
  expect(res.status, res.text).toBe(201);
  return res.json.data;
}

/** A tar.gz holding one entry with the given path (written by hand: tar refuses to write `..`). */
function archiveWith(path: string): Buffer {
  const header = new tar.Header({ path, size: 3, type: 'File', mode: 0o644, mtime: new Date(0) });
  const block = Buffer.alloc(512);
  header.encode(block, 0);
  const body = Buffer.alloc(512);
  body.write('abc');
  return gzipSync(Buffer.concat([block, body, Buffer.alloc(1024)]));
}

describe('configuration versions', () => {
  it('returns the upload address only on create, then uploads, auto-queues a run and downloads', async () => {
    const ws = (await createWorkspace(h, org)).id;
    const cv = await newCv(ws);
    expect(cv.attributes).toMatchObject({
      status: 'pending',
      'auto-queue-runs': true,
      speculative: false,
      provisional: false,
      source: 'engine-api',
      error: null,
    });
    const url = String(cv.attributes['upload-url']);
    expect(url).toMatch(/\/api\/v2\/archivist\/uploads\/cv-/);
    const shown = await h.api('GET', `/configuration-versions/${cv.id}`);
    expect(shown.json.data.attributes['upload-url']).toBeUndefined();
    expect((await h.api('GET', `/configuration-versions/${cv.id}/download`)).status).toBe(404);

    const put = await h.api('PUT', url, { token: null, raw: configTarball() });
    expect(put.status, put.text).toBe(200);
    const uploaded = await h.api('GET', `/configuration-versions/${cv.id}`);
    expect(uploaded.json.data.attributes.status).toBe('uploaded');
    expect(Object.keys(uploaded.json.data.attributes['status-timestamps'] as object)).toEqual([
      'uploaded-at',
    ]);

    const runs = await h.api('GET', `/workspaces/${ws}/runs`);
    expect(runs.json.data).toHaveLength(1);
    const run = runs.json.data[0]!;
    expect(run.attributes.source).toBe('engine-configuration-version');
    // Recorded as the reference records an upload-queued run, not as a manual API run.
    expect(run.attributes.message).toBe('Triggered via API');
    expect(run.relationships['configuration-version']?.data?.id).toBe(cv.id);
    expect(run.relationships['created-by']?.data?.type).toBe('users');

    const download = await h.api('GET', `/configuration-versions/${cv.id}/download`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/octet-stream');
    const viaRun = await h.api('GET', `/runs/${run.id}/configuration-version/download`);
    expect(viaRun.status).toBe(200);

    // a second upload is refused
    expect((await h.api('PUT', url, { token: null, raw: configTarball() })).status).toBe(409);
  });

  it('refuses a wrong address, an oversized body, and archives that leave the directory', async () => {
    const ws = (await createWorkspace(h, org)).id;
    const cv = await newCv(ws, { 'auto-queue-runs': false });
    const url = String(cv.attributes['upload-url']);
    expect(
      (await h.api('PUT', url.slice(0, -3), { token: null, raw: configTarball() })).status,
    ).toBe(404);

    const before = h.core.store.lastPosition();
    const big = await h.api('PUT', url, { token: null, raw: Buffer.alloc(65 * 1024, 1) });
    expect(big.status).toBe(413);
    expect(h.core.store.lastPosition()).toBe(before);
    expect(
      (await h.api('GET', `/configuration-versions/${cv.id}`)).json.data.attributes.status,
    ).toBe('pending');

    const evil = await h.api('PUT', url, { token: null, raw: archiveWith('../../evil.tf') });
    expect(evil.status).toBe(422);
    expect(evil.json.errors[0]!.detail).toMatch(/outside the configuration directory/);
    const errored = await h.api('GET', `/configuration-versions/${cv.id}`);
    expect(errored.json.data.attributes).toMatchObject({
      status: 'errored',
      error: 'invalid_archive',
    });

    const cv2 = await newCv(ws, { 'auto-queue-runs': false });
    const junk = await h.api('PUT', String(cv2.attributes['upload-url']), {
      token: null,
      raw: Buffer.from('not an archive'),
    });
    expect(junk.status).toBe(422);
    expect((await h.api('GET', `/workspaces/${ws}/runs`)).json.data).toEqual([]);
  });

  it.each([
    [
      'a symbolic link',
      { type: 'SymbolicLink' as const, linkpath: '/etc/passwd' },
      /symbolic link/,
    ],
    ['a hard link', { type: 'Link' as const, linkpath: '/etc/passwd' }, /hard link/],
    [
      'a link inside the root',
      { type: 'SymbolicLink' as const, linkpath: 'main.tf' },
      /symbolic link/,
    ],
    ['a device', { type: 'CharacterDevice' as const }, /device/],
  ])(
    'refuses %s at upload with a 422, and nothing can be downloaded',
    async (_n, entry, detail) => {
      const ws = (await createWorkspace(h, org)).id;
      const cv = await newCv(ws);
      const archive = rawTarball([
        { path: './main.tf', body: Buffer.from('terraform {}\n') },
        { path: './passwd.tf', ...entry },
      ]);
      const put = await h.api('PUT', String(cv.attributes['upload-url']), {
        token: null,
        raw: archive,
      });
      expect(put.status).toBe(422);
      expect(put.json.errors[0]).toMatchObject({
        status: '422',
        title: 'invalid configuration archive',
      });
      expect(put.json.errors[0]!.detail).toMatch(detail);
      expect(
        (await h.api('GET', `/configuration-versions/${cv.id}`)).json.data.attributes.status,
      ).toBe('errored');
      expect((await h.api('GET', `/configuration-versions/${cv.id}/download`)).status).toBe(404);
      expect((await h.api('GET', `/workspaces/${ws}/runs`)).json.data).toEqual([]);
    },
  );

  it('records the version creator as the actor of the upload and of the run it queues', async () => {
    const ws = (await createWorkspace(h, org)).id;
    const cv = await newCv(ws);
    await h.api('PUT', String(cv.attributes['upload-url']), { token: null, raw: configTarball() });
    const created = h.core.store.readStream(cv.id)[0]!;
    expect(created.type).toBe('ConfigurationVersionCreated');
    const creator = created.metadata.actor;
    expect(creator).not.toBeNull();
    expect(creator?.accessor).not.toBe('system');
    const uploaded = h.core.store
      .readStream(cv.id)
      .find((e) => e.type === 'ConfigurationVersionUploaded');
    expect(uploaded?.metadata.actor).toEqual(creator);
    const run = (await h.api('GET', `/workspaces/${ws}/runs`)).json.data[0]!;
    const runCreated = h.core.store.readStream(run.id)[0]!;
    expect(runCreated.type).toBe('RunCreated');
    expect(runCreated.metadata.actor).toEqual(creator);
    // The upload carries no token: the request's own address and id are still recorded.
    expect(runCreated.metadata.requestId).not.toBeNull();
  });

  it('makes speculative versions queue plan-only runs, and lists versions newest first', async () => {
    const ws = (await createWorkspace(h, org)).id;
    const cv = await newCv(ws, { speculative: true });
    await h.api('PUT', String(cv.attributes['upload-url']), { token: null, raw: configTarball() });
    const runs = await h.api('GET', `/workspaces/${ws}/runs?filter[operation]=plan_only`);
    expect(runs.json.data).toHaveLength(1);
    expect(runs.json.data[0]!.attributes['plan-only']).toBe(true);
    await h.settle();
    expect((await getRun(h, runs.json.data[0]!.id)).attributes.status).toBe('plan_queued');

    const refused = await h.api('POST', '/runs', {
      body: {
        data: {
          type: 'runs',
          attributes: { 'plan-only': false },
          relationships: {
            workspace: { data: { id: ws } },
            'configuration-version': { data: { id: cv.id } },
          },
        },
      },
    });
    expect(refused.status).toBe(422);

    const second = await newCv(ws, { provisional: true, 'auto-queue-runs': false });
    const list = await h.api('GET', `/workspaces/${ws}/configuration-versions`);
    expect(list.json.data.map((c) => c.id)).toEqual([second.id, cv.id]);
    expect(list.json.meta.pagination['total-count']).toBe(2);
  });
});
