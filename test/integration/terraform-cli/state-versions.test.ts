import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type Body, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace } from '../../support/runs-flow.js';

/**
 * State versions written from outside a run (local execution, `state push`) and the outputs
 * `terraform output` reads, as the terraform CLI calls them.
 */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

const state = (serial: number, lineage: string, outputs: Record<string, unknown> = {}) =>
  JSON.stringify({
    version: 4,
    terraform_version: '1.11.4',
    serial,
    lineage,
    outputs,
    resources: [],
    check_results: null,
  });
const md5 = (text: string) => createHash('md5').update(text).digest('hex');
const body = (text: string, extra: Record<string, unknown> = {}) => ({
  data: {
    type: 'state-versions',
    attributes: {
      serial: (JSON.parse(text) as { serial: number }).serial,
      md5: md5(text),
      lineage: (JSON.parse(text) as { lineage: string }).lineage,
      ...extra,
    },
  },
});

async function lockedWorkspace(): Promise<string> {
  const org = await createOrg(h);
  const ws = (await createWorkspace(h, org)).id;
  const lock = await h.api('POST', `/workspaces/${ws}/actions/lock`, { body: { reason: 'local' } });
  expect(lock.status, lock.text).toBe(200);
  return ws;
}

/** Create a pending version and PUT the state to its upload address, as go-tfe does. */
async function upload(ws: string, text: string, extra: Record<string, unknown> = {}) {
  const created = await h.api('POST', `/workspaces/${ws}/state-versions`, {
    body: body(text, extra),
  });
  if (created.status !== 201) return { created, put: null };
  const a = created.json.data.attributes;
  const put = await h.api('PUT', String(a['hosted-state-upload-url']), {
    raw: Buffer.from(text),
  });
  const json = await h.api('PUT', String(a['hosted-json-state-upload-url']), {
    raw: Buffer.from('{"format_version":"1.0"}'),
  });
  expect(json.status, json.text).toBe(200);
  return { created, put };
}

const errorOf = (b: Body) => b.errors[0]?.detail ?? '';

describe('POST /workspaces/:id/state-versions', () => {
  it('takes a state through the upload addresses once the caller holds the lock', async () => {
    const ws = await lockedWorkspace();
    const text = state(1, 'lin-1', { greeting: { value: 'hi', type: 'string' } });
    const { created, put } = await upload(ws, text);
    expect(created.status, created.text).toBe(201);
    expect(created.json.data.attributes).toMatchObject({ status: 'pending', serial: 1 });
    expect(put?.status, put?.text).toBe(200);

    const sv = await h.api('GET', `/state-versions/${created.json.data.id}`);
    expect(sv.json.data.attributes).toMatchObject({
      status: 'finalized',
      serial: 1,
      lineage: 'lin-1',
      md5: md5(text),
      'terraform-version': '1.11.4',
    });
    const current = await h.api('GET', `/workspaces/${ws}/current-state-version`);
    expect(current.json.data.id).toBe(created.json.data.id);
    const download = await h.api('GET', `/state-versions/${created.json.data.id}/download`);
    expect(download.text).toBe(text);
    // The upload address carries no token: the upload is recorded as the announcer's.
    const events = h.core.store.readStream(created.json.data.id);
    expect(events.map((e) => e.type)).toContain('StateVersionCreated');
    expect(events[0]!.metadata.actor).not.toBeNull();
    for (const e of events) expect(e.metadata.actor, e.type).toEqual(events[0]!.metadata.actor);
    // a second upload to the same address changes nothing
    const again = await h.api(
      'PUT',
      String(created.json.data.attributes['hosted-state-upload-url']),
      {
        raw: Buffer.from(text),
      },
    );
    expect(again.status).toBe(409);
  });

  it('takes an inline base64 state too', async () => {
    const ws = await lockedWorkspace();
    const text = state(3, 'lin-inline');
    const res = await h.api('POST', `/workspaces/${ws}/state-versions`, {
      body: body(text, { state: Buffer.from(text).toString('base64') }),
    });
    expect(res.status, res.text).toBe(201);
    expect(res.json.data.attributes).toMatchObject({ status: 'finalized', serial: 3 });
  });

  it('refuses without the lock, a lower serial or a wrong md5, and changes nothing', async () => {
    const org = await createOrg(h);
    const unlocked = (await createWorkspace(h, org)).id;
    const refused = await h.api('POST', `/workspaces/${unlocked}/state-versions`, {
      body: body(state(1, 'x')),
    });
    expect(refused.status).toBe(409);
    expect(errorOf(refused.json)).toContain('must be locked');

    const ws = await lockedWorkspace();
    expect((await upload(ws, state(5, 'lin-5'))).put?.status).toBe(200);
    const old = await upload(ws, state(4, 'lin-5'));
    expect(old.created.status).toBe(409);
    expect(errorOf(old.created.json)).toContain('serial 4 is lower than the current');
    const text = state(6, 'lin-5');
    const created = await h.api('POST', `/workspaces/${ws}/state-versions`, { body: body(text) });
    const bad = await h.api(
      'PUT',
      String(created.json.data.attributes['hosted-state-upload-url']),
      {
        raw: Buffer.from(state(7, 'lin-5')),
      },
    );
    expect(bad.status).toBe(422);
    expect(errorOf(bad.json)).toContain('md5');
    const current = await h.api('GET', `/workspaces/${ws}/current-state-version`);
    expect(current.json.data.attributes.serial).toBe(5);

    // force overrides the serial, still under the lock
    const forced = await upload(ws, state(2, 'lin-5'), { force: true });
    expect(forced.put?.status, forced.put?.text).toBe(200);
    const now = await h.api('GET', `/workspaces/${ws}/current-state-version`);
    expect(now.json.data.attributes).toMatchObject({ serial: 2, lineage: 'lin-5' });
    // the same serial under another lineage is taken, as terraform's forced push sends it
    const other = await upload(ws, state(2, 'lin-other'));
    expect(other.put?.status, other.put?.text).toBe(200);
    const latest = await h.api('GET', `/workspaces/${ws}/current-state-version`);
    expect(latest.json.data.attributes).toMatchObject({ serial: 2, lineage: 'lin-other' });
  });

  it('is 422 for a malformed body and 404 for a bad upload address', async () => {
    const ws = await lockedWorkspace();
    const res = await h.api('POST', `/workspaces/${ws}/state-versions`, {
      body: { data: { type: 'state-versions', attributes: { serial: 'one', md5: 'x' } } },
    });
    expect(res.status).toBe(422);
    const put = await h.api('PUT', `${h.url}/api/v2/archivist/state-versions/sv-nope/secret`, {
      raw: Buffer.from('{}'),
    });
    expect(put.status).toBe(404);
  });
});

describe('state version outputs', () => {
  it('lists the current outputs with sensitive values hidden, and shows one by id', async () => {
    const ws = await lockedWorkspace();
    const text = state(1, 'lin-out', {
      name: { value: 'web', type: 'string' },
      secret: { value: 's3cr3t', type: 'string', sensitive: true },
      ports: { value: [80, 443], type: ['list', 'number'] },
    });
    const { created } = await upload(ws, text);
    const list = await h.api('GET', `/workspaces/${ws}/current-state-version-outputs`);
    expect(list.status, list.text).toBe(200);
    expect(list.json.data.map((o) => o.attributes)).toEqual([
      { name: 'name', sensitive: false, type: 'string', value: 'web', 'detailed-type': 'string' },
      {
        name: 'ports',
        sensitive: false,
        type: 'array',
        value: [80, 443],
        'detailed-type': ['list', 'number'],
      },
      { name: 'secret', sensitive: true, type: 'string', value: null, 'detailed-type': 'string' },
    ]);
    const secret = list.json.data[2]!;
    const one = await h.api('GET', `/state-version-outputs/${secret.id}`);
    expect(one.status, one.text).toBe(200);
    expect(one.json.data.attributes.value).toBe('s3cr3t');
    const byVersion = await h.api('GET', `/state-versions/${created.json.data.id}/outputs`);
    expect(byVersion.json.data.map((o) => o.id)).toEqual(list.json.data.map((o) => o.id));
    expect(byVersion.json.meta.pagination['total-count']).toBe(3);

    expect((await h.api('GET', '/state-version-outputs/wsout-nope-0')).status).toBe(404);
    const stranger = h.user('outsider');
    expect(
      (await h.api('GET', `/state-version-outputs/${secret.id}`, { token: stranger.token })).status,
    ).toBe(404);
  });

  it('is 404 for a workspace without state', async () => {
    const org = await createOrg(h);
    const ws = (await createWorkspace(h, org)).id;
    expect((await h.api('GET', `/workspaces/${ws}/current-state-version-outputs`)).status).toBe(
      404,
    );
  });
});
