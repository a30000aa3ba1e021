import { describe, expect, it } from 'vitest';
import { flowApp } from '../../support/executor-flow.js';

/** Team access `custom`: the variables and run-tasks permissions, on the executor's routes. */

const app = flowApp();
let n = 0;

/** A workspace and a team token holding `custom` access with the permissions given. */
async function custom(permissions: Record<string, unknown>) {
  const { flow, t } = app;
  const { org, ws } = await flow.workspace();
  const team = await flow.call(
    'POST',
    `/organizations/${org}/teams`,
    { data: { type: 'teams', attributes: { name: `custom-${++n}` } } },
    201,
  );
  const relationships = {
    team: { data: { type: 'teams', id: team.doc.data.id } },
    workspace: { data: { type: 'workspaces', id: ws } },
  };
  await flow.call(
    'POST',
    '/team-workspaces',
    {
      data: {
        type: 'team-workspaces',
        attributes: { access: 'custom', ...permissions },
        relationships,
      },
    },
    201,
  );
  const token = String(
    (await flow.call('POST', `/teams/${team.doc.data.id}/authentication-token`, {}, 201)).doc.data
      .attributes.token,
  );
  const as = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { token, ...(body === undefined ? {} : { body }) });
  return { ws, as };
}

const VAR = { data: { type: 'vars', attributes: { key: 'k', value: 'v', category: 'terraform' } } };
const ATTACH = {
  data: {
    type: 'workspace-tasks',
    attributes: { 'enforcement-level': 'advisory', stage: 'pre_plan' },
    relationships: { task: { data: { type: 'tasks', id: 'task-none' } } },
  },
};

const refused = (res: { status: number; text: string }, what: string) => {
  expect(res.status, res.text).toBe(404);
  expect(res.text).toContain(`${what}: not found or not authorized`);
};

describe('team access custom: variables and run tasks', () => {
  it('variables none hides them; read lists but cannot change; write changes', async () => {
    const none = await custom({});
    refused(
      await none.as('GET', `/workspaces/${none.ws}/vars`),
      `variables of workspace ${none.ws}`,
    );

    const reader = await custom({ variables: 'read' });
    expect((await reader.as('GET', `/workspaces/${reader.ws}/vars`)).status).toBe(200);
    refused(
      await reader.as('POST', `/workspaces/${reader.ws}/vars`, VAR),
      `variables of workspace ${reader.ws}`,
    );

    const writer = await custom({ variables: 'write' });
    const made = await writer.as('POST', `/workspaces/${writer.ws}/vars`, VAR);
    expect(made.status, made.text).toBe(201);
    const listed = await writer.as('GET', `/workspaces/${writer.ws}/vars`);
    expect((listed.json as { data: unknown[] }).data).toHaveLength(1);
    // variables write is not workspace admin
    refused(
      await writer.as('PATCH', `/workspaces/${writer.ws}`, {
        data: { type: 'workspaces', attributes: { description: 'x' } },
      }),
      `updating workspace ${writer.ws}`,
    );
  });

  it('run-tasks attaches run tasks; without it the workspace is not found for that', async () => {
    const without = await custom({ runs: 'apply', variables: 'write' });
    const hidden = await without.as('POST', `/workspaces/${without.ws}/tasks`, ATTACH);
    expect(hidden.status).toBe(404);
    expect(hidden.text).toContain(`workspace ${without.ws} not found`);

    const tasker = await custom({ 'run-tasks': true });
    const attach = await tasker.as('POST', `/workspaces/${tasker.ws}/tasks`, ATTACH);
    // past the permission: the unknown task is what is refused
    expect(attach.status, attach.text).toBe(422);
    expect(attach.text).toContain('task task-none not found');
  });
});
