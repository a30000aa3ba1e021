import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Core } from '../../../context.js';
import { ConflictError, NotFoundError, ValidationError } from '../../../core/errors.js';
import type { RunsContext } from '../../index.js';
import { API, send } from '../../jsonapi.js';
import { validate } from '../../run/schema.js';
import { PolicySyntaxError, compilePolicy, type PolicyCheckResult } from '../policy.js';
import { isFinalStatus } from '../../lifecycle.js';
import { organizationReadRoutes } from '../org-reads.js';
import { appendOnly } from '../port.js';
import { executionSettingsStream, type CheckEvent } from './events.js';
import type {
  CheckQueries,
  CostEstimateRow,
  PolicyCheckRow,
  PolicyRow,
  PolicySetRow,
} from './projection.js';
import { costEstimateIdOf, endsPlanStage } from './stages.js';
import type { TaskStages } from '../run-tasks/stage.js';

/**
 * Organization execution settings, policy sets and policies, and the cost estimates and policy
 * checks of runs (`/cost-estimates/:id`, `/runs/:id/policy-checks`, override).
 */

const NAME = /^[A-Za-z0-9_-]{1,90}$/;
const settingsBody = z.object({
  data: z.object({
    type: z.literal('execution-settings').optional(),
    attributes: z.object({ 'cost-estimation-enabled': z.boolean() }),
  }),
});
const relIds = (type: string) =>
  z.object({ data: z.array(z.object({ id: z.string(), type: z.literal(type) })) });
const policySetBody = z.object({
  data: z.object({
    type: z.literal('policy-sets'),
    attributes: z.object({
      name: z.string().regex(NAME, 'letters, digits, - and _ only (at most 90)'),
      description: z.string().max(512).nullable().optional(),
      global: z.boolean().optional(),
      kind: z.literal('jsonata').optional(),
    }),
    relationships: z.object({ workspaces: relIds('workspaces').optional() }).optional(),
  }),
});
const policyBody = z.object({
  data: z.object({
    type: z.literal('policies'),
    attributes: z.object({
      name: z.string().regex(NAME, 'letters, digits, - and _ only (at most 90)'),
      description: z.string().max(512).nullable().optional(),
      kind: z.literal('jsonata').optional(),
      query: z
        .string()
        .min(1)
        .max(64 * 1024)
        .describe('a JSONata expression over the plan JSON that must be true'),
      'enforcement-level': z.enum(['advisory', 'soft-mandatory', 'hard-mandatory']),
    }),
    relationships: z.object({ 'policy-sets': relIds('policy-sets') }),
  }),
});
const overrideBody = z.object({ comment: z.string().max(4096).nullable().optional() }).optional();

const presentSet = (s: PolicySetRow) => ({
  id: s.id,
  type: 'policy-sets',
  attributes: {
    name: s.name,
    description: s.description,
    global: s.global,
    kind: 'jsonata',
    'workspace-count': s.workspaceIds.length,
    'created-at': s.createdAt,
  },
  relationships: {
    organization: { data: { id: s.organization, type: 'organizations' } },
    workspaces: { data: s.workspaceIds.map((id) => ({ id, type: 'workspaces' })) },
  },
  links: { self: `${API}/policy-sets/${s.id}` },
});

const presentPolicy = (p: PolicyRow) => ({
  id: p.id,
  type: 'policies',
  attributes: {
    name: p.name,
    description: p.description,
    kind: 'jsonata',
    query: p.query,
    'enforcement-level': p.enforcement,
    'policy-set-count': p.policySetIds.length,
    'updated-at': p.createdAt,
  },
  relationships: {
    organization: { data: { id: p.organization, type: 'organizations' } },
    'policy-sets': { data: p.policySetIds.map((id) => ({ id, type: 'policy-sets' })) },
  },
  links: { self: `${API}/policies/${p.id}` },
});

/** The `cost-estimates` resource, as the reference shapes it. */
export const presentCostEstimate = (c: CostEstimateRow) => ({
  id: c.id,
  type: 'cost-estimates',
  attributes: {
    'delta-monthly-cost': c.estimate.deltaMonthlyCost,
    'prior-monthly-cost': c.estimate.priorMonthlyCost,
    'proposed-monthly-cost': c.estimate.proposedMonthlyCost,
    'matched-resources-count': c.estimate.matchedResourcesCount,
    'unmatched-resources-count': c.estimate.unmatchedResourcesCount,
    'resources-count': c.estimate.resourcesCount,
    'error-message': null,
    status: 'finished',
    'status-timestamps': { 'queued-at': c.createdAt, 'finished-at': c.createdAt },
  },
  relationships: { run: { data: { id: c.runId, type: 'runs' } } },
  links: { self: `${API}/cost-estimates/${c.id}` },
});

/** The `policy-checks` resource. */
export const presentPolicyCheck = (c: PolicyCheckRow, canOverride: boolean) => ({
  id: c.id,
  type: 'policy-checks',
  attributes: {
    result: c.result,
    scope: 'organization',
    status: c.status,
    'status-timestamps': {
      'queued-at': c.createdAt,
      [`${c.status === 'overridden' ? 'soft-failed' : c.status.replace('_', '-')}-at`]: c.createdAt,
      ...(c.overriddenAt ? { 'overridden-at': c.overriddenAt } : {}),
    },
    actions: { 'is-overridable': c.status === 'soft_failed' },
    permissions: { 'can-override': canOverride },
  },
  relationships: { run: { data: { id: c.runId, type: 'runs' } } },
  links: { output: `${API}/policy-checks/${c.id}/output` },
});

/** A policy check the run's relationship names before (or without) its result. */
const presentPendingCheck = (id: string, runId: string, status: 'queued' | 'unreachable') => ({
  id,
  type: 'policy-checks',
  attributes: {
    result: null,
    scope: 'organization',
    status,
    'status-timestamps': {},
    actions: { 'is-overridable': false },
    permissions: { 'can-override': false },
  },
  relationships: { run: { data: { id: runId, type: 'runs' } } },
  links: { output: `${API}/policy-checks/${id}/output` },
});

/**
 * A policy check's result as text: the verdict, then each policy with its enforcement level,
 * result, and description or evaluation error (the reference's output is Sentinel's own text; the
 * CLI prints whatever the output is).
 */
export function policyCheckOutput(result: PolicyCheckResult): string {
  const lines = [
    `Policy check result: ${String(result.result)}`,
    '',
    `${result.policies.length} ${result.policies.length === 1 ? 'policy' : 'policies'} evaluated: ${result.passed} passed, ${result['hard-failed']} hard-mandatory, ${result['soft-failed']} soft-mandatory and ${result['advisory-failed']} advisory failed.`,
  ];
  result.policies.forEach((p, i) => {
    lines.push('', `## Policy ${i + 1}: ${p.policy} (${p['enforcement-level']})`, '');
    lines.push(`Result: ${String(p.result)}`);
    if (p.description) lines.push('', p.description);
    if (p.error) lines.push('', `Error: ${p.error}`);
  });
  return `${lines.join('\n')}\n`;
}

export function checkRoutes(
  router: Router,
  core: Core,
  runs: RunsContext,
  checks: CheckQueries,
  tasks: TaskStages,
): void {
  const { model } = runs;
  const record = (ctx: Context, stream: string, event: CheckEvent) =>
    core.handler.handle(stream, appendOnly, () => [event], model.metadata(ctx));
  /** {@link record} inside `core.handler.atomically` only. */
  const recordSync = (ctx: Context, stream: string, event: CheckEvent) =>
    core.handler.handleSync(stream, appendOnly, () => [event], model.metadata(ctx));
  /** Organization-level resources are managed by the organization's owners. */
  const owned = (ctx: Context, name: string) => {
    const org = model.organization(ctx, name);
    if (!model.orgs.owns(model.principal(ctx), org.name))
      throw new NotFoundError(`organization ${name} not found`);
    return org;
  };
  const settings = (organization: string) => ({
    id: organization,
    type: 'execution-settings',
    attributes: { 'cost-estimation-enabled': checks.costEstimationEnabled(organization) },
  });

  router.get('/organizations/:org/execution-settings', (ctx) => {
    const org = model.organization(ctx, ctx.params.org ?? '');
    send(ctx, 200, { data: settings(org.name) });
  });
  router.patch('/organizations/:org/execution-settings', async (ctx) => {
    const org = owned(ctx, ctx.params.org ?? '');
    const a = validate(settingsBody, ctx.request.body).data.attributes;
    await record(ctx, executionSettingsStream(org.name), {
      type: 'ExecutionSettingsUpdated',
      data: { organization: org.name, costEstimationEnabled: a['cost-estimation-enabled'] },
    });
    send(ctx, 200, { data: settings(org.name) });
  });

  router.post('/organizations/:org/policy-sets', async (ctx) => {
    const org = owned(ctx, ctx.params.org ?? '');
    const d = validate(policySetBody, ctx.request.body).data;
    const workspaceIds = (d.relationships?.workspaces?.data ?? []).map((w) => w.id);
    for (const id of workspaceIds) {
      if (model.workspaces.get(id)?.organization !== org.name) {
        throw new ValidationError(
          `/data/relationships/workspaces: workspace ${id} not found in ${org.name}`,
          { title: 'invalid attribute' },
        );
      }
    }
    if (checks.policySets(org.name).some((s) => s.name === d.attributes.name)) {
      throw new ValidationError(
        `/data/attributes/name: ${d.attributes.name} has already been taken`,
        { title: 'invalid attribute' },
      );
    }
    const id = core.ids.id('polset');
    await record(ctx, id, {
      type: 'PolicySetCreated',
      data: {
        id,
        organization: org.name,
        name: d.attributes.name,
        description: d.attributes.description ?? null,
        global: d.attributes.global ?? false,
        workspaceIds,
      },
    });
    send(ctx, 201, { data: presentSet(checks.policySet(id) as PolicySetRow) });
  });
  organizationReadRoutes(router, model, {
    path: 'policy-sets',
    noun: 'policy set',
    list: (organization) => checks.policySets(organization),
    one: (id) => checks.policySet(id),
    present: presentSet,
  });

  router.post('/organizations/:org/policies', async (ctx) => {
    const org = owned(ctx, ctx.params.org ?? '');
    const d = validate(policyBody, ctx.request.body).data;
    try {
      compilePolicy(d.attributes.query);
    } catch (error) {
      if (error instanceof PolicySyntaxError)
        throw new ValidationError(`/data/attributes/query: ${error.message}`, {
          title: 'invalid attribute',
        });
      throw error;
    }
    const policySetIds = d.relationships['policy-sets'].data.map((s) => s.id);
    for (const id of policySetIds) {
      if (checks.policySet(id)?.organization !== org.name) {
        throw new ValidationError(
          `/data/relationships/policy-sets: policy set ${id} not found in ${org.name}`,
          { title: 'invalid attribute' },
        );
      }
    }
    const id = core.ids.id('pol');
    await record(ctx, id, {
      type: 'PolicyCreated',
      data: {
        id,
        organization: org.name,
        name: d.attributes.name,
        description: d.attributes.description ?? null,
        query: d.attributes.query,
        enforcement: d.attributes['enforcement-level'],
        policySetIds,
      },
    });
    send(ctx, 201, { data: presentPolicy(checks.policy(id) as PolicyRow) });
  });
  organizationReadRoutes(router, model, {
    path: 'policies',
    noun: 'policy',
    one: (id) => checks.policy(id),
    present: presentPolicy,
  });

  const estimateOf = (ctx: Context, id: string) => {
    const estimate = checks.costEstimate(id);
    if (estimate === null) throw new NotFoundError(`cost estimate ${id} not found`);
    model.run(ctx, estimate.runId);
    return estimate;
  };
  router.get('/cost-estimates/:id', (ctx) =>
    send(ctx, 200, { data: presentCostEstimate(estimateOf(ctx, ctx.params.id ?? '')) }),
  );
  router.get('/runs/:id/cost-estimate', (ctx) => {
    const { run } = model.run(ctx, ctx.params.id ?? '');
    send(ctx, 200, { data: presentCostEstimate(estimateOf(ctx, costEstimateIdOf(run.id))) });
  });

  const canOverride = (ctx: Context, organization: string) =>
    model.orgs.owns(model.principal(ctx), organization);
  router.get('/runs/:id/policy-checks', (ctx) => {
    const { run } = model.run(ctx, ctx.params.id ?? '');
    send(ctx, 200, {
      data: checks
        .policyChecksOfRun(run.id)
        .map((c) => presentPolicyCheck(c, canOverride(ctx, run.organization))),
    });
  });
  /**
   * A policy check, or, for a run that entered policy checking without one being recorded (the
   * check failed inside Keel, or is about to be recorded), none yet: the run's relationship lists
   * it, so it answers as `queued`, or `unreachable` once the run is over.
   */
  const checkOf = (ctx: Context, id: string) => {
    const check = checks.policyCheck(id);
    if (check !== null) return { check, run: model.run(ctx, check.runId).run };
    const runId = `run-${id.slice('polchk-'.length)}`;
    if (!id.startsWith('polchk-') || model.runs.get(runId) === null)
      throw new NotFoundError(`policy check ${id} not found`);
    const { run } = model.run(ctx, runId);
    if (run.statusTimestamps['policy-checking-at'] === undefined)
      throw new NotFoundError(`policy check ${id} not found`);
    return { check: null, run };
  };
  const present = (ctx: Context, id: string) => {
    const { check, run } = checkOf(ctx, id);
    return check !== null
      ? presentPolicyCheck(check, canOverride(ctx, run.organization))
      : presentPendingCheck(id, run.id, isFinalStatus(run.status) ? 'unreachable' : 'queued');
  };
  router.get('/policy-checks/:id', (ctx) => {
    send(ctx, 200, { data: present(ctx, ctx.params.id ?? '') });
  });
  // The text the terraform CLI prints under "Organization Policy Check:".
  router.get('/policy-checks/:id/output', (ctx) => {
    const { check } = checkOf(ctx, ctx.params.id ?? '');
    ctx.status = 200;
    ctx.type = 'text/plain';
    ctx.body = check === null ? '' : policyCheckOutput(check.result);
  });
  router.post('/policy-checks/:id/actions/override', async (ctx) => {
    const { check, run } = checkOf(ctx, ctx.params.id ?? '');
    if (check === null)
      throw new ConflictError(`policy check ${ctx.params.id ?? ''} has no result to override`, {
        title: 'transition not allowed',
      });
    model.userOrTeam(ctx, 'overriding a policy check');
    if (!canOverride(ctx, run.organization))
      throw new NotFoundError(`policy check ${check.id} not found`);
    const comment = validate(overrideBody, ctx.request.body)?.comment ?? null;
    if (check.status !== 'soft_failed' || run.status !== 'policy_override') {
      throw new ConflictError(
        `policy check ${check.id} is ${check.status} and run ${run.id} is ${run.status}; only a soft-failed check of a run in policy_override can be overridden`,
        {
          title: 'transition not allowed',
        },
      );
    }
    await core.handler.atomically(() => {
      recordSync(ctx, check.id, { type: 'PolicyCheckOverridden', data: { id: check.id, comment } });
      runs.executorSync.policyOverridden(run.id, comment);
      // Confirmable (or applying) once the override answers: the CLI reads the run right after.
      if (endsPlanStage(checks, tasks, run, 'check')) runs.executorSync.planStageCompleted(run.id);
    });
    // As the reference: 200 with the check (go-tfe's Override, and so the CLI, reads it back).
    const overridden = checks.policyCheck(check.id) ?? check;
    send(ctx, 200, { data: presentPolicyCheck(overridden, true) });
  });
}
