import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from '../../core/errors.js';
import { safeEqual } from '../../core/seal.js';

/** The stages at which a workspace runs its tasks. */
export type TaskStage = 'pre_plan' | 'post_plan';
/** A mandatory task that fails stops the run; an advisory one only reports. */
export type TaskEnforcement = 'advisory' | 'mandatory';
/** A task result's status, as on the `task-results` resource. */
export type TaskResultStatus =
  'pending' | 'running' | 'passed' | 'failed' | 'errored' | 'unreachable';

/** How long a task has to answer through its callback before its result is `errored`. */
export const DEFAULT_TASK_TIMEOUT_MS = 10 * 60 * 1000;

/** The run a task stage is for. */
export interface TaskRunContext {
  stage: TaskStage;
  /** Keel's external address, e.g. `http://127.0.0.1:8420` (no trailing slash). */
  baseUrl: string;
  runId: string;
  runMessage: string;
  runCreatedAt: string;
  runCreatedBy: string | null;
  isSpeculative: boolean;
  organizationName: string;
  workspaceId: string;
  workspaceName: string;
  workspaceWorkingDirectory: string;
  configurationVersionId: string;
  /** The run's plan id; only post-plan payloads link to the plan JSON. */
  planId: string | null;
}

/** One task result being requested. */
export interface TaskResultRequest {
  id: string;
  /** A token valid only for this result's callback. */
  accessToken: string;
  enforcement: TaskEnforcement;
}

/** The JSON body Keel POSTs to a task's URL, field for field as the reference system sends it. */
export interface TaskPayload {
  payload_version: 1;
  stage: TaskStage;
  access_token: string;
  capabilities: { outcomes: boolean };
  configuration_version_download_url: string;
  configuration_version_id: string;
  is_speculative: boolean;
  organization_name: string;
  plan_json_api_url?: string;
  run_app_url: string;
  run_created_at: string;
  run_created_by: string | null;
  run_id: string;
  run_message: string;
  task_result_callback_url: string;
  task_result_enforcement_level: TaskEnforcement;
  task_result_id: string;
  vcs_branch: null;
  vcs_commit_url: null;
  vcs_pull_request_url: null;
  vcs_repo_url: null;
  workspace_app_url: string;
  workspace_id: string;
  workspace_name: string;
  workspace_working_directory: string;
}

/** The callback address of a task result. */
export const callbackPath = (taskResultId: string): string =>
  `/api/v2/task-results/${taskResultId}/callback`;

/** Builds the request payload for one task of a stage. */
export function buildTaskPayload(run: TaskRunContext, result: TaskResultRequest): TaskPayload {
  const api = `${run.baseUrl}/api/v2`;
  const workspaceApp = `${run.baseUrl}/app/${encodeURIComponent(run.organizationName)}/workspaces/${encodeURIComponent(run.workspaceName)}`;
  return {
    payload_version: 1,
    stage: run.stage,
    access_token: result.accessToken,
    capabilities: { outcomes: false },
    configuration_version_download_url: `${api}/configuration-versions/${run.configurationVersionId}/download`,
    configuration_version_id: run.configurationVersionId,
    is_speculative: run.isSpeculative,
    organization_name: run.organizationName,
    ...(run.stage === 'post_plan' && run.planId
      ? { plan_json_api_url: `${api}/plans/${run.planId}/json-output` }
      : {}),
    run_app_url: `${workspaceApp}/runs/${run.runId}`,
    run_created_at: run.runCreatedAt,
    run_created_by: run.runCreatedBy,
    run_id: run.runId,
    run_message: run.runMessage,
    task_result_callback_url: `${run.baseUrl}${callbackPath(result.id)}`,
    task_result_enforcement_level: result.enforcement,
    task_result_id: result.id,
    vcs_branch: null,
    vcs_commit_url: null,
    vcs_pull_request_url: null,
    vcs_repo_url: null,
    workspace_app_url: workspaceApp,
    workspace_id: run.workspaceId,
    workspace_name: run.workspaceName,
    workspace_working_directory: run.workspaceWorkingDirectory,
  };
}

/** `X-TFC-Task-Signature`: the hex HMAC-SHA512 of the exact request body under the task's key. */
export function taskSignature(body: string, hmacKey: string): string {
  return createHmac('sha512', hmacKey).update(body).digest('hex');
}

/** The outcome of posting a payload: delivered means the task answered 200 and will call back. */
export type Delivery = { delivered: true } | { delivered: false; message: string };

/**
 * POSTs the payload to the task's URL, signed when the task has an HMAC key. Anything but a
 * 200 answer (or no answer at all) means the task cannot run, and its result is `errored`.
 */
export async function deliverTask(
  task: { url: string; hmacKey: string | null },
  payload: TaskPayload,
  fetcher: typeof fetch = fetch,
): Promise<Delivery> {
  const body = JSON.stringify(payload);
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'User-Agent': 'Keel run tasks',
  };
  if (task.hmacKey) headers['X-TFC-Task-Signature'] = taskSignature(body, task.hmacKey);
  try {
    const response = await fetcher(task.url, { method: 'POST', headers, body, redirect: 'error' });
    await response.arrayBuffer();
    if (response.status !== 200)
      return { delivered: false, message: `the task answered ${response.status} instead of 200` };
    return { delivered: true };
  } catch (error) {
    return {
      delivered: false,
      message: `the task could not be reached: ${(error as Error).message}`,
    };
  }
}

const callbackSchema = z.object({
  data: z.object({
    type: z.literal('task-results'),
    attributes: z.object({
      status: z.enum(['passed', 'failed', 'running']),
      message: z.string().max(4096).optional(),
      url: z.url({ protocol: /^https?$/ }).optional(),
    }),
  }),
});

/** What a task reports through its callback. */
export interface TaskCallback {
  status: 'passed' | 'failed' | 'running';
  message: string | null;
  url: string | null;
}

/** Validates a callback `PATCH` body; a malformed one is a ValidationError (422). */
export function parseTaskCallback(body: unknown): TaskCallback {
  const parsed = callbackSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ValidationError(
      `invalid task result: ${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  const { status, message, url } = parsed.data.data.attributes;
  return { status, message: message ?? null, url: url ?? null };
}

/** Compares a presented callback token with the stored one without leaking timing. */
export function callbackTokenMatches(presented: string, expected: string): boolean {
  return safeEqual(presented, expected);
}

/** When a task result started at `startedAt` times out. */
export const taskDeadline = (startedAt: Date, timeoutMs = DEFAULT_TASK_TIMEOUT_MS): Date =>
  new Date(startedAt.getTime() + timeoutMs);

/**
 * A stage is running while any result is unfinished; it fails when a mandatory task failed,
 * errored or was unreachable (advisory ones only report); otherwise it passes.
 */
export function stageOutcome(
  results: readonly { status: TaskResultStatus; enforcement: TaskEnforcement }[],
): 'running' | 'passed' | 'failed' {
  if (results.some((r) => r.status === 'pending' || r.status === 'running')) return 'running';
  const mandatoryFailure = results.some(
    (r) => r.enforcement === 'mandatory' && r.status !== 'passed',
  );
  return mandatoryFailure ? 'failed' : 'passed';
}
