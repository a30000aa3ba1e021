import { describe, expect, it } from 'vitest';
import { flowApp, type ListDoc } from '../../support/executor-flow.js';

/** Reading an organization's policy sets, policies and run tasks: lists, by id, and 404s. */

const app = flowApp();

describe("an organization's policy sets, policies and tasks", () => {
  it('are listed and shown by id to the organization, 404 to others and when missing', async () => {
    const { flow, t } = app;
    const { org } = await flow.workspace();
    const set = await flow.call(
      'POST',
      `/organizations/${org}/policy-sets`,
      { data: { type: 'policy-sets', attributes: { name: 'guards', global: true } } },
      201,
    );
    const policy = await flow.call(
      'POST',
      `/organizations/${org}/policies`,
      {
        data: {
          type: 'policies',
          attributes: { name: 'always', query: 'true', 'enforcement-level': 'advisory' },
          relationships: {
            'policy-sets': { data: [{ id: set.doc.data.id, type: 'policy-sets' }] },
          },
        },
      },
      201,
    );
    const task = await flow.call(
      'POST',
      `/organizations/${org}/tasks`,
      { data: { type: 'tasks', attributes: { name: 'scan', url: 'https://scan.example/hook' } } },
      201,
    );

    const sets = await flow.call<ListDoc>(
      'GET',
      `/organizations/${org}/policy-sets`,
      undefined,
      200,
    );
    expect(sets.doc.data).toEqual([set.doc.data]);
    const tasks = await flow.call<ListDoc>('GET', `/organizations/${org}/tasks`, undefined, 200);
    expect(tasks.doc.data).toEqual([task.doc.data]);
    for (const [path, created] of [
      ['policy-sets', set],
      ['policies', policy],
      ['tasks', task],
    ] as const) {
      const shown = await flow.call('GET', `/${path}/${created.doc.data.id}`, undefined, 200);
      expect(shown.doc.data).toEqual(created.doc.data);
    }

    // Missing ids are 404s naming the resource; another organization's member sees 404 too.
    const missing = [
      ['policy-sets', 'policy set'],
      ['policies', 'policy'],
      ['tasks', 'task'],
    ] as const;
    for (const [path, noun] of missing) {
      const res = await flow.call('GET', `/${path}/nothing-1`, undefined, 404);
      expect(res.doc.errors?.[0]?.detail).toContain(`${noun} nothing-1 not found`);
    }
    const other = await flow.workspace();
    const outsider = await flow.teamToken(other.org, other.ws, 'admin');
    for (const path of [`/policy-sets/${set.doc.data.id}`, `/tasks/${task.doc.data.id}`]) {
      const res = await t.request('GET', `/api/v2${path}`, { token: outsider });
      expect(res.status, path).toBe(404);
    }
    const list = await t.request('GET', `/api/v2/organizations/${org}/tasks`, { token: outsider });
    expect(list.status).toBe(404);
  });
});
