import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type Body, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace } from '../../support/runs-flow.js';

/**
 * A state document a client uploads is JSON from outside: one that parses but is not a state
 * (a field of the wrong type, a list where a map belongs) is a 422 naming the field, inline or
 * through the upload address, and no state version is recorded.
 */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

const md5 = (text: string) => createHash('md5').update(text).digest('hex');
const errorOf = (b: Body) => b.errors[0]?.detail ?? '';

async function lockedWorkspace(): Promise<string> {
  const org = await createOrg(h);
  const ws = (await createWorkspace(h, org)).id;
  const lock = await h.api('POST', `/workspaces/${ws}/actions/lock`, { body: { reason: 'local' } });
  expect(lock.status, lock.text).toBe(200);
  return ws;
}

const attributes = (text: string) => ({ serial: 1, md5: md5(text), lineage: 'lin' });

const malformed: [string, Record<string, unknown>, string][] = [
  ['a serial that is a string', { version: 4, serial: '1', lineage: 'lin' }, '/serial'],
  ['a lineage that is a number', { version: 4, serial: 1, lineage: 7 }, '/lineage'],
  ['resources that are a map', { version: 4, serial: 1, resources: { a: {} } }, '/resources'],
  ['a resource that is a string', { version: 4, serial: 1, resources: ['a'] }, '/resources/0'],
  ['an output that is not an object', { version: 4, serial: 1, outputs: { a: 5 } }, '/outputs/a'],
  [
    'a sensitive flag that is nested',
    { version: 4, serial: 1, outputs: { a: { value: 1, sensitive: { yes: true } } } },
    '/outputs/a/sensitive',
  ],
  [
    'a terraform_version that is a list',
    { serial: 1, terraform_version: ['1.9'] },
    '/terraform_version',
  ],
];

describe('a state document that is JSON but not a state', () => {
  it.each(malformed)(
    '%s is a 422 inline, naming the field, and records nothing',
    async (_, doc, field) => {
      const ws = await lockedWorkspace();
      const text = JSON.stringify(doc);
      const res = await h.api('POST', `/workspaces/${ws}/state-versions`, {
        body: {
          data: {
            type: 'state-versions',
            attributes: { ...attributes(text), state: Buffer.from(text).toString('base64') },
          },
        },
      });
      expect(res.status, res.text).toBe(422);
      expect(errorOf(res.json)).toContain(`${field}:`);
      expect((await h.api('GET', `/workspaces/${ws}/current-state-version`)).status).toBe(404);
      expect((await h.api('GET', `/workspaces/${ws}/state-versions`)).json.data).toEqual([]);
    },
  );

  it('is a 422 through the upload address too, and the version stays pending', async () => {
    const ws = await lockedWorkspace();
    const text = JSON.stringify({ version: 4, serial: 1, lineage: 'lin', resources: 'none' });
    const created = await h.api('POST', `/workspaces/${ws}/state-versions`, {
      body: { data: { type: 'state-versions', attributes: attributes(text) } },
    });
    expect(created.status, created.text).toBe(201);
    const put = await h.api(
      'PUT',
      String(created.json.data.attributes['hosted-state-upload-url']),
      {
        raw: Buffer.from(text),
      },
    );
    expect(put.status, put.text).toBe(422);
    expect(errorOf(put.json)).toContain('/resources:');
    const sv = await h.api('GET', `/state-versions/${created.json.data.id}`);
    expect(sv.json.data.attributes.status).toBe('pending');
    expect((await h.api('GET', `/workspaces/${ws}/current-state-version`)).status).toBe(404);
  });

  it('takes a state with fields Keel does not read, as it is', async () => {
    const ws = await lockedWorkspace();
    const text = JSON.stringify({
      version: 4,
      serial: 1,
      lineage: 'lin',
      outputs: { a: { value: { nested: [1] }, type: ['object', { nested: ['list', 'number'] }] } },
      resources: [{ mode: 'managed', type: 'null_resource', name: 'a', extra: { deep: true } }],
      check_results: null,
    });
    const res = await h.api('POST', `/workspaces/${ws}/state-versions`, {
      body: {
        data: {
          type: 'state-versions',
          attributes: { ...attributes(text), state: Buffer.from(text).toString('base64') },
        },
      },
    });
    expect(res.status, res.text).toBe(201);
    expect((await h.api('GET', `/state-versions/${res.json.data.id}/download`)).text).toBe(text);
  });
});
