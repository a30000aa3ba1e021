import { abilitiesOf, type WorkspaceAccess } from '../lifecycle.js';
import { API, linkOnly, toOne, type Resource } from '../jsonapi.js';
import type { Phase, RunRow } from './projection.js';

/** The wire shape of runs, plans and applies. */

const suffix = (runId: string) => runId.slice('run-'.length);
export const planIdOf = (runId: string) => `plan-${suffix(runId)}`;
export const applyIdOf = (runId: string) => `apply-${suffix(runId)}`;
export const runIdOfPhase = (phaseId: string) => `run-${phaseId.slice(phaseId.indexOf('-') + 1)}`;
/** A run's policy check (`polchk-…`): one per run, recorded by the executor's checks stage. */
export const policyCheckIdOf = (runId: string) => `polchk-${suffix(runId)}`;

/** Values the run `include` parameter accepts. */
export const RUN_INCLUDES = [
  'plan',
  'apply',
  'created_by',
  'cost_estimate',
  'configuration_version',
  'configuration_version.ingress_attributes',
  'workspace',
  'task_stages',
] as const;
export type RunInclude = (typeof RUN_INCLUDES)[number];

/**
 * The run document's `data`. `now` decides `is-force-cancelable`; `access` the permissions;
 * `costEstimateId` names the run's cost estimate once it has one.
 */
export function presentRun(
  run: RunRow,
  access: WorkspaceAccess,
  now: Date,
  options: { details?: boolean; costEstimateId?: string | null } = {},
): Resource {
  const { actions, permissions } = abilitiesOf(run, access, now);
  const a = run.attrs;
  const self = `${API}/runs/${run.id}`;
  const forceCancelAt = run.forceCancelAvailableAt;
  const canceledAt =
    run.cancelRequestedAt ??
    run.statusTimestamps['canceled-at'] ??
    run.statusTimestamps['force-canceled-at'] ??
    null;
  const createdBy = a.createdBy?.kind === 'user' ? a.createdBy.id : null;
  return {
    id: run.id,
    type: 'runs',
    attributes: {
      actions,
      'allow-config-generation': a.allowConfigGeneration,
      'allow-empty-apply': a.allowEmptyApply,
      'auto-apply': a.autoApply,
      'canceled-at': canceledAt,
      'created-at': run.createdAt,
      'debugging-mode': a.debuggingMode,
      'engine-version': a.engineVersion,
      'terraform-version': a.engineVersion,
      'has-changes': run.plan.hasChanges ?? false,
      'is-destroy': a.isDestroy,
      message: a.message,
      permissions,
      'plan-only': a.planOnly,
      refresh: a.refresh,
      'refresh-only': a.refreshOnly,
      'replace-addrs': a.replaceAddrs,
      'save-plan': a.savePlan,
      source: a.source,
      status: run.status,
      'status-timestamps': run.statusTimestamps,
      'target-addrs': a.targetAddrs,
      'trigger-reason': a.triggerReason,
      ...(a.triggeredBy === undefined
        ? {}
        : { 'triggering-source-name': a.triggeredBy.workspaceName }),
      variables: a.variables,
      // Both spellings: the spec's and the one every client reads.
      ...(forceCancelAt === null
        ? {}
        : { force_cancel_available_at: forceCancelAt, 'force-cancel-available-at': forceCancelAt }),
    },
    relationships: {
      apply: toOne('applies', applyIdOf(run.id), `${self}/apply`),
      comments: linkOnly(`${self}/comments`),
      'configuration-version': toOne(
        'configuration-versions',
        a.configurationVersionId,
        `${self}/configuration-version`,
      ),
      'cost-estimate': toOne('cost-estimates', options.costEstimateId ?? null),
      'created-by': toOne('users', createdBy),
      'input-state-version': toOne('state-versions', null),
      plan: toOne('plans', planIdOf(run.id), `${self}/plan`),
      'run-events': linkOnly(`${self}/run-events`),
      // The terraform CLI reads a run's checks from this relationship's data: a run that went
      // through policy checking has its one.
      'policy-checks': {
        data:
          run.statusTimestamps['policy-checking-at'] === undefined
            ? []
            : [{ type: 'policy-checks', id: policyCheckIdOf(run.id) }],
        links: { related: `${self}/policy-checks` },
      },
      workspace: toOne('workspaces', run.workspaceId),
      ...(a.triggeredBy === undefined
        ? {}
        : {
            'triggering-source': toOne('workspaces', a.triggeredBy.workspaceId),
            'triggering-run': toOne('runs', a.triggeredBy.runId),
          }),
      'workspace-run-alerts': linkOnly(`${self}/workspace-run-alerts`),
      ...(options.details === true ? { 'task-stages': linkOnly(`${self}/task-stages`) } : {}),
    },
    links: { self },
  };
}

const counts = (phase: Phase) => ({
  'resource-additions': phase.counts?.additions ?? 0,
  'resource-changes': phase.counts?.changes ?? 0,
  'resource-destructions': phase.counts?.destructions ?? 0,
  'resource-imports': phase.counts?.imports ?? 0,
});

/** A plan resource; `logUrl` is the secret, unauthenticated log address. */
export function presentPlan(run: RunRow, logUrl: string): Resource {
  const id = planIdOf(run.id);
  return {
    id,
    type: 'plans',
    attributes: {
      'execution-details': { mode: 'remote' },
      'generated-configuration': false,
      'has-changes': run.plan.hasChanges ?? false,
      ...counts(run.plan),
      status: run.plan.status,
      'status-timestamps': run.plan.timestamps,
      'log-read-url': logUrl,
    },
    relationships: { run: toOne('runs', run.id), 'state-versions': { data: [] } },
    links: {
      self: `${API}/plans/${id}`,
      'json-output': `${API}/plans/${id}/json-output`,
      'json-output-redacted': `${API}/plans/${id}/json-output-redacted`,
    },
  };
}

/** An apply resource, with the state versions it recorded. */
export function presentApply(
  run: RunRow,
  logUrl: string,
  stateVersionIds: readonly string[] = [],
): Resource {
  const id = applyIdOf(run.id);
  return {
    id,
    type: 'applies',
    attributes: {
      'execution-details': { mode: 'remote' },
      ...counts(run.apply),
      status: run.apply.status,
      'status-timestamps': run.apply.timestamps,
      'log-read-url': logUrl,
    },
    relationships: {
      run: toOne('runs', run.id),
      'state-versions': { data: stateVersionIds.map((sv) => ({ type: 'state-versions', id: sv })) },
    },
    links: { self: `${API}/applies/${id}` },
  };
}

/** The log as the archivist serves it: STX, text, ETX once the phase is over. */
export function framedLog(text: string, phaseDone: boolean): string {
  return `\u0002${text}${phaseDone ? '\u0003' : ''}`;
}

export const isPhaseDone = (phase: Phase) =>
  !['pending', 'queued', 'running'].includes(phase.status);
