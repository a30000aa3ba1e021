import { describe, expect, it } from 'vitest';
import { flowApp } from '../../support/executor-flow.js';

/**
 * Variable sets reaching a run, by the reference's precedence (highest first): priority global,
 * priority project-scoped, priority workspace-scoped, run variables, workspace variables,
 * workspace-scoped, project-scoped, global sets.
 */

const KEYS = ['g', 'p', 'w', 'v', 'r', 'pr', 'pp', 'q', 's'];
const CONFIG = {
  'main.tf': `${KEYS.map((k) => `variable "${k}" {${k === 's' ? '\n  sensitive = true\n' : ''}}`).join('\n')}
resource "aws_instance" "web" {
${KEYS.map((k) => `  ${k} = var.${k}`).join('\n')}
}
`,
};

const started = flowApp();

const tf = (key: string, value: string, sensitive = false) => ({
  type: 'vars',
  attributes: { key, value, category: 'terraform', sensitive },
});

async function varset(
  org: string,
  name: string,
  options: {
    global?: boolean;
    priority?: boolean;
    workspaces?: string[];
    projects?: string[];
    vars: ReturnType<typeof tf>[];
  },
): Promise<string> {
  const res = await started.flow.call(
    'POST',
    `/organizations/${org}/varsets`,
    {
      data: {
        type: 'varsets',
        attributes: { name, global: options.global ?? false, priority: options.priority ?? false },
        relationships: {
          workspaces: {
            data: (options.workspaces ?? []).map((id) => ({ type: 'workspaces', id })),
          },
          projects: { data: (options.projects ?? []).map((id) => ({ type: 'projects', id })) },
          vars: { data: options.vars },
        },
      },
    },
    201,
  );
  return res.doc.data.id;
}

const defaultProject = async (org: string) =>
  (await started.flow.call('GET', `/organizations/${org}`, undefined, 200)).doc.data.relationships[
    'default-project'
  ]!.data!.id;

describe('variable sets in a run', () => {
  it('assemble by the reference precedence; a sensitive value reaches the run and not its log', async () => {
    const { org, ws } = await started.flow.workspace();
    const prj = await defaultProject(org);
    await varset(org, 'G', {
      global: true,
      vars: ['g', 'p', 'w', 'v', 'r'].map((k) => tf(k, 'G')),
    });
    await varset(org, 'P', { projects: [prj], vars: ['p', 'w', 'v'].map((k) => tf(k, 'P')) });
    await varset(org, 'W', {
      workspaces: [ws],
      vars: [...['w', 'v', 'r'].map((k) => tf(k, 'W')), tf('s', 'hunter2-varset', true)],
    });
    await varset(org, 'GP', {
      global: true,
      priority: true,
      vars: [tf('pr', 'GP'), tf('q', 'GP')],
    });
    await varset(org, 'PP', {
      priority: true,
      projects: [prj],
      vars: [tf('pp', 'PP'), tf('q', 'PP')],
    });
    await varset(org, 'WP', { priority: true, workspaces: [ws], vars: [tf('pp', 'WP')] });
    for (const k of ['v', 'r', 'pr'])
      await started.flow.call('POST', `/workspaces/${ws}/vars`, { data: tf(k, 'V') }, 201);

    const listed = await started.flow.call<{ data: { attributes: { name: string } }[] }>(
      'GET',
      `/workspaces/${ws}/varsets`,
      undefined,
      200,
    );
    expect(listed.doc.data.map((s) => s.attributes.name).sort()).toEqual([
      'G',
      'GP',
      'P',
      'PP',
      'W',
      'WP',
    ]);

    const cv = await started.flow.upload(ws, CONFIG);
    const run = await started.flow.run(
      ws,
      {
        variables: [
          { key: 'r', value: '"R"' },
          { key: 'pr', value: '"R"' },
        ],
      },
      cv,
    );
    await started.t.settle();
    expect(await started.flow.status(run)).toBe('planned');
    const plan = await started.t.request('GET', `/api/v2/runs/${run}/plan/json-output`, {
      token: started.flow.token,
    });
    const after = (
      plan.json as { resource_changes: { change: { after: Record<string, unknown> } }[] }
    ).resource_changes[0]?.change.after;
    expect(after).toEqual({
      g: 'G',
      p: 'P',
      w: 'W',
      v: 'V',
      r: 'R',
      pr: 'GP',
      pp: 'PP',
      q: 'GP',
      s: 'hunter2-varset',
    });
    expect((await started.flow.phase(run, 'plan')).log).not.toContain('hunter2-varset');
  });

  it('two sets of one scope giving a workspace the same key error the run, naming both', async () => {
    const { org, ws } = await started.flow.workspace();
    await varset(org, 'first', { workspaces: [ws], vars: KEYS.map((k) => tf(k, 'one')) });
    await varset(org, 'second', { workspaces: [ws], vars: [tf('g', 'two')] });
    const cv = await started.flow.upload(ws, CONFIG);
    const run = await started.flow.run(ws, {}, cv);
    await started.t.settle();
    expect(await started.flow.status(run)).toBe('errored');
    const log = (await started.flow.phase(run, 'plan')).log;
    expect(log).toMatch(
      /terraform variable g is set by variable sets first \(varset-[^)]+\) and second/,
    );
  });
});
