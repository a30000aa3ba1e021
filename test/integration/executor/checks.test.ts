import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';
import type { ListDoc } from '../../support/executor-flow.js';

const TWO_INSTANCES = {
  'main.tf':
    'resource "aws_instance" "small" {\n  instance_type = "t3.micro"\n}\nresource "aws_instance" "big" {\n  instance_type = "m5.xlarge"\n}\nresource "aws_iam_role" "r" {}\n',
};
const ONLY_SMALL =
  '$count(resource_changes[type = "aws_instance" and change.after.instance_type != "t3.micro"]) = 0';

let t: TestApp;
let flow: Flow;
beforeAll(async () => {
  t = await startTestApp();
  flow = new Flow(t);
});
afterAll(async () => {
  await t.close();
});

async function policy(org: string, ws: string, enforcement: string, query = ONLY_SMALL) {
  const set = await flow.call(
    'POST',
    `/organizations/${org}/policy-sets`,
    {
      data: {
        type: 'policy-sets',
        attributes: { name: `set-${enforcement}` },
        relationships: { workspaces: { data: [{ id: ws, type: 'workspaces' }] } },
      },
    },
    201,
  );
  await flow.call(
    'POST',
    `/organizations/${org}/policies`,
    {
      data: {
        type: 'policies',
        attributes: { name: 'only-small', query, 'enforcement-level': enforcement },
        relationships: { 'policy-sets': { data: [{ id: set.doc.data.id, type: 'policy-sets' }] } },
      },
    },
    201,
  );
}

/**
 * The event types of each command decided inside `atomically` while `fn` runs, so a test can tell
 * events committed together from events of separate commands (which another request may see apart).
 */
async function commandsDuring(fn: () => Promise<void>): Promise<string[][]> {
  const handler = t.app.core.handler;
  const atomically = handler.atomically.bind(handler);
  const handleSync = handler.handleSync.bind(handler);
  const commands: string[][] = [];
  let current: string[] | null = null;
  handler.atomically = <T>(f: () => T): Promise<T> =>
    atomically(() => {
      const own: string[] = [];
      commands.push(own);
      current = own;
      try {
        return f();
      } finally {
        current = null;
      }
    });
  handler.handleSync = (stream, decider, decide, metadata, options) => {
    const handled = handleSync(stream, decider, decide, metadata, options);
    current?.push(...handled.events.map((e) => e.type));
    return handled;
  };
  try {
    await fn();
  } finally {
    handler.atomically = atomically;
    handler.handleSync = handleSync;
  }
  return commands;
}

/** Whether one command of `commands` holds every type of `types`. */
const together = (commands: string[][], ...types: string[]) =>
  commands.some((c) => types.every((type) => c.includes(type)));

async function planned(
  attributes: Record<string, unknown> = {},
  setup?: (org: string, ws: string) => Promise<void>,
) {
  const { org, ws } = await flow.workspace();
  await setup?.(org, ws);
  const cv = await flow.upload(ws, TWO_INSTANCES);
  const run = await flow.run(ws, attributes, cv);
  await t.settle();
  return { org, ws, run };
}

describe('cost estimation', () => {
  it('estimates a run when the organization enables it: cost_estimating, then cost_estimated', async () => {
    const { run } = await planned({}, async (org) => {
      await flow.call(
        'PATCH',
        `/organizations/${org}/execution-settings`,
        { data: { attributes: { 'cost-estimation-enabled': true } } },
        200,
      );
    });
    const details = await flow.get(run);
    expect(details.attributes.status).toBe('cost_estimated');
    expect(details.attributes['status-timestamps']).toHaveProperty('cost-estimating-at');
    expect(details.attributes.actions).toMatchObject({ 'is-confirmable': true });
    const estimate = await flow.call('GET', `/runs/${run}/cost-estimate`, undefined, 200);
    expect(estimate.doc.data.attributes).toMatchObject({
      status: 'finished',
      'prior-monthly-cost': '0.00',
      'proposed-monthly-cost': '147.75',
      'delta-monthly-cost': '147.75',
      'matched-resources-count': 2,
      'unmatched-resources-count': 1,
      'resources-count': 3,
    });
    await flow.call('GET', `/cost-estimates/${estimate.doc.data.id}`, undefined, 200);
    await flow.action(run, 'apply');
    await t.settle();
    expect(await flow.status(run)).toBe('applied');
  });

  it('completes the plan stage in the same command as the estimate when no check or task follows it', async () => {
    const enable = async (org: string) => {
      await flow.call(
        'PATCH',
        `/organizations/${org}/execution-settings`,
        { data: { attributes: { 'cost-estimation-enabled': true } } },
        200,
      );
    };
    // The CLI reads the run once the estimate is finished and asks to apply only if confirmable.
    const alone = await commandsDuring(async () => {
      await planned({}, enable);
    });
    expect(together(alone, 'RunCostEstimated', 'RunPlanStageCompleted')).toBe(true);
    // A policy check follows: the check's command completes the stage instead.
    const checked = await commandsDuring(async () => {
      await planned({}, async (org, ws) => {
        await enable(org);
        await policy(org, ws, 'advisory');
      });
    });
    expect(together(checked, 'RunCostEstimated', 'RunPlanStageCompleted')).toBe(false);
    expect(together(checked, 'RunPolicyChecked', 'RunPlanStageCompleted')).toBe(true);
  });

  it('answers 404 for an unknown estimate and 422 for bad settings', async () => {
    await flow.call('GET', '/cost-estimates/ce-nothing', undefined, 404);
    const { org } = await flow.workspace();
    await flow.call(
      'PATCH',
      `/organizations/${org}/execution-settings`,
      { data: { attributes: { 'cost-estimation-enabled': 'yes' } } },
      422,
    );
  });
});

describe('policy checks', () => {
  it('a soft-mandatory failure waits in policy_override until overridden, then applies', async () => {
    const { run } = await planned({}, (org, ws) => policy(org, ws, 'soft-mandatory'));
    expect(await flow.status(run)).toBe('policy_override');
    expect((await flow.get(run)).attributes['status-timestamps']).toHaveProperty(
      'policy-checking-at',
    );
    const checks = await flow.call<ListDoc>('GET', `/runs/${run}/policy-checks`, undefined, 200);
    const check = checks.doc.data[0];
    expect(check?.attributes).toMatchObject({
      status: 'soft_failed',
      result: {
        result: false,
        passed: 0,
        'total-failed': 1,
        'soft-failed': 1,
        'hard-failed': 0,
        'advisory-failed': 0,
      },
      actions: { 'is-overridable': true },
    });
    await flow.action(run, 'apply', 409);
    let overridden = { doc: { data: { attributes: {} as Record<string, unknown> } } };
    const commands = await commandsDuring(async () => {
      overridden = await flow.call(
        'POST',
        `/policy-checks/${check?.id ?? ''}/actions/override`,
        { comment: 'approved' },
        200,
      );
    });
    expect(together(commands, 'RunPolicyOverridden', 'RunPlanStageCompleted')).toBe(true);
    expect(overridden.doc.data.attributes.status).toBe('overridden');
    // Confirmable as soon as the override answers, before any reactor runs: the CLI reads the run
    // right after overriding and, finding it not confirmable, ends without asking to apply.
    expect((await flow.get(run)).attributes.actions).toMatchObject({ 'is-confirmable': true });
    // The run names its check, and the check's output is the text the CLI prints.
    const listed: unknown = (await flow.get(run)).relationships['policy-checks'];
    expect(listed).toMatchObject({ data: [{ type: 'policy-checks', id: check?.id }] });
    const output = await flow.call(
      'GET',
      `/policy-checks/${check?.id ?? ''}/output`,
      undefined,
      200,
    );
    expect(output.text).toContain('## Policy 1: set-soft-mandatory/only-small (soft-mandatory)');
    await t.settle();
    expect(await flow.status(run)).toBe('policy_checked');
    const after = await flow.call('GET', `/policy-checks/${check?.id ?? ''}`, undefined, 200);
    expect(after.doc.data.attributes.status).toBe('overridden');
    await flow.call('POST', `/policy-checks/${check?.id ?? ''}/actions/override`, {}, 409);
    await flow.action(run, 'apply');
    await t.settle();
    expect(await flow.status(run)).toBe('applied');
  });

  it('a soft-mandatory failure ends a plan-only run as policy_soft_failed', async () => {
    const { run } = await planned({ 'plan-only': true }, (org, ws) =>
      policy(org, ws, 'soft-mandatory'),
    );
    expect(await flow.status(run)).toBe('policy_soft_failed');
  });

  it('a hard-mandatory failure errors the run', async () => {
    const { run } = await planned({}, (org, ws) => policy(org, ws, 'hard-mandatory'));
    expect(await flow.status(run)).toBe('errored');
  });

  it('an advisory failure is reported and the run continues to policy_checked', async () => {
    let run = '';
    const commands = await commandsDuring(async () => {
      ({ run } = await planned({}, (org, ws) => policy(org, ws, 'advisory')));
    });
    expect(await flow.status(run)).toBe('policy_checked');
    // Confirmable in the check's own command: the CLI reads the run once the check has passed.
    expect(together(commands, 'RunPolicyChecked', 'RunPlanStageCompleted')).toBe(true);
    expect((await flow.get(run)).attributes.actions).toMatchObject({ 'is-confirmable': true });
    const checks = await flow.call<ListDoc>('GET', `/runs/${run}/policy-checks`, undefined, 200);
    expect(checks.doc.data[0]?.attributes).toMatchObject({
      status: 'passed',
      result: { 'advisory-failed': 1 },
    });
  });

  it('refuses a policy whose expression does not compile, and unknown policy sets', async () => {
    const { org, ws } = await flow.workspace();
    await policy(org, ws, 'advisory', 'true');
    const sets = await flow.call<ListDoc>(
      'GET',
      `/organizations/${org}/policy-sets`,
      undefined,
      200,
    );
    const bad = await flow.call(
      'POST',
      `/organizations/${org}/policies`,
      {
        data: {
          type: 'policies',
          attributes: {
            name: 'broken',
            query: 'resource_changes[',
            'enforcement-level': 'advisory',
          },
          relationships: {
            'policy-sets': { data: [{ id: sets.doc.data[0]?.id ?? '', type: 'policy-sets' }] },
          },
        },
      },
      422,
    );
    expect(bad.doc.errors?.[0]?.detail).toContain('/data/attributes/query');
    await flow.call(
      'POST',
      `/organizations/${org}/policies`,
      {
        data: {
          type: 'policies',
          attributes: { name: 'x', query: 'true', 'enforcement-level': 'advisory' },
          relationships: { 'policy-sets': { data: [{ id: 'polset-none', type: 'policy-sets' }] } },
        },
      },
      422,
    );
    await flow.call('GET', '/policy-checks/polchk-nothing', undefined, 404);
  });
});
