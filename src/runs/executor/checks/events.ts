import { streamName } from '../../../core/streams.js';
import type { CostEstimate } from '../cost.js';
import type { Enforcement, PolicyCheckResult, PolicyCheckStatus } from '../policy.js';

/** The stream of an organization's execution settings. */
export const executionSettingsStream = streamName`settings-${'organization'}`;

/** An organization's execution settings (the reference keeps them on the organization). */
export type ExecutionSettingsUpdated = {
  type: 'ExecutionSettingsUpdated';
  data: { organization: string; costEstimationEnabled: boolean };
};

/** A policy set: global (every workspace of the organization) or attached to workspaces. */
export type PolicySetCreated = {
  type: 'PolicySetCreated';
  data: {
    id: string;
    organization: string;
    name: string;
    description: string | null;
    global: boolean;
    workspaceIds: string[];
  };
};

/** A policy: a JSONata rule over the plan JSON, in one or more policy sets. */
export type PolicyCreated = {
  type: 'PolicyCreated';
  data: {
    id: string;
    organization: string;
    name: string;
    description: string | null;
    query: string;
    enforcement: Enforcement;
    policySetIds: string[];
  };
};

/** The cost estimate of a run's plan. */
export type CostEstimateRecorded = {
  type: 'CostEstimateRecorded';
  data: { id: string; runId: string; estimate: CostEstimate };
};

/** The policy check of a run's plan. */
export type PolicyCheckRecorded = {
  type: 'PolicyCheckRecorded';
  data: { id: string; runId: string; status: PolicyCheckStatus; result: PolicyCheckResult };
};

/** A user overrode a soft-failed policy check. */
export type PolicyCheckOverridden = {
  type: 'PolicyCheckOverridden';
  data: { id: string; comment: string | null };
};

export type CheckEvent =
  | ExecutionSettingsUpdated
  | PolicySetCreated
  | PolicyCreated
  | CostEstimateRecorded
  | PolicyCheckRecorded
  | PolicyCheckOverridden;
