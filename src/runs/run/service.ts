import { ConflictError, KeelError, NotFoundError, ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { RunsPrincipal } from '../../http/types.js';
import type { RunCreated, Requester } from '../events.js';
import { isFinalStatus, type WorkspaceAccess } from '../lifecycle.js';
import type { RunsModel } from '../model.js';
import { workspaceDecider, unlockForRun } from '../workspaces/decider.js';
import type { WorkspaceRow } from '../workspaces/projection.js';
import { createRun, discardRun, requestForceExecute, runDecider } from './commands.js';
import { snapshotOf, type RunRow } from './projection.js';
import type { CreateRunBody } from './schema.js';

/** The default run message, as the reference words it. */
export const DEFAULT_MESSAGE = 'Queued manually via the Keel API';
/** The message of a run a configuration-version upload queues (`auto-queue-runs`), as the reference records it. */
export const UPLOAD_MESSAGE = 'Triggered via API';

export const requesterOf = (p: RunsPrincipal): Requester => ({ kind: p.kind, id: p.id });

type NewRunInput = {
  ws: WorkspaceRow;
  access: WorkspaceAccess;
  createdBy: Requester | null;
  attributes: NonNullable<CreateRunBody['data']['attributes']>;
  configurationVersionId: string | null;
  source: string;
  triggeredBy?: RunCreated['data']['triggeredBy'];
};

/**
 * Build and record a new run (`POST /runs`, and the run an upload queues). The configuration
 * version is checked where the command is decided, so it cannot change in between.
 */
export function newRun(
  model: RunsModel,
  input: NewRunInput,
  metadata: AuditMetadata,
): Promise<RunCreated['data']> {
  return model.core.handler.atomically(() => newRunSync(model, input, metadata));
}

/** {@link newRun} inside `core.handler.atomically` only. */
export function newRunSync(
  model: RunsModel,
  input: NewRunInput,
  metadata: AuditMetadata,
): RunCreated['data'] {
  const { ws, access, attributes: a } = input;
  // `null` (or no relationship) means the workspace's most recently used configuration version.
  const cvId = input.configurationVersionId ?? ws.latestConfigurationVersionId;
  const cv = cvId === null ? null : model.cvs.get(cvId);
  if (cv === null)
    throw new NotFoundError(
      `configuration version ${cvId ?? '(latest)'} not found for workspace ${ws.id}`,
    );
  if (cv.organization !== ws.organization)
    throw new NotFoundError(`configuration version ${cv.id} not found`);
  if (cv.status !== 'uploaded') {
    throw new ValidationError(
      `/data/relationships/configuration-version: configuration version ${cv.id} is ${cv.status}, not uploaded`,
    );
  }
  if (a['is-destroy'] === true && a['refresh-only'] === true) {
    throw new ValidationError(
      '/data/attributes: is-destroy and refresh-only are mutually exclusive',
    );
  }
  if (a['is-destroy'] === true && !ws.settings.allowDestroyPlan)
    throw new ValidationError(
      `/data/attributes/is-destroy: workspace ${ws.id} does not allow destroy plans (allow-destroy-plan is false)`,
    );
  const planOnly = a['plan-only'] ?? cv.speculative;
  if (cv.speculative && !planOnly)
    throw new ValidationError(
      `/data/attributes/plan-only: configuration version ${cv.id} is speculative; its runs are plan-only`,
    );
  const engineVersion = a['engine-version'] ?? a['terraform-version'] ?? null;
  if (engineVersion !== null && !planOnly)
    throw new ValidationError('/data/attributes/engine-version: only valid for plan-only runs');
  const savePlan = a['save-plan'] ?? false;
  if (savePlan && planOnly)
    throw new ValidationError('/data/attributes: save-plan and plan-only are mutually exclusive');
  // Auto-apply needs a caller who may apply runs (the reference's rule for API-queued runs).
  const autoApply = (a['auto-apply'] ?? ws.autoApply) && access.applyRuns && !planOnly;
  const data: RunCreated['data'] = {
    id: model.core.ids.id('run'),
    workspaceId: ws.id,
    organization: ws.organization,
    configurationVersionId: cv.id,
    createdBy: input.createdBy,
    source: input.source,
    triggerReason: 'manual',
    message: a.message ?? DEFAULT_MESSAGE,
    isDestroy: a['is-destroy'] ?? false,
    refresh: a.refresh ?? true,
    refreshOnly: a['refresh-only'] ?? false,
    replaceAddrs: a['replace-addrs'] ?? null,
    targetAddrs: a['target-addrs'] ?? null,
    variables: a.variables ?? [],
    planOnly,
    savePlan,
    autoApply,
    allowEmptyApply: a['allow-empty-apply'] ?? false,
    allowConfigGeneration: a['allow-config-generation'] ?? false,
    debuggingMode: a['debugging-mode'] ?? false,
    engineVersion,
    ...(input.triggeredBy === undefined ? {} : { triggeredBy: input.triggeredBy }),
  };
  model.core.handler.handleSync(data.id, runDecider, createRun(data), metadata, {
    newStream: true,
  });
  return data;
}

const forbidden = (detail: string) =>
  new KeelError('forbidden', detail, { status: 403, title: 'forbidden' });

/**
 * `actions/force-execute`: discard the run holding the lock and every earlier pending run, unlock
 * the workspace, and leave the target at the head of the queue. All in one command.
 */
export async function forceExecute(
  model: RunsModel,
  target: RunRow,
  ws: WorkspaceRow,
  metadata: AuditMetadata,
): Promise<void> {
  if (target.status !== 'pending')
    throw forbidden(`run ${target.id} is not pending (status ${target.status})`);
  if (ws.lock?.kind !== 'run' || ws.lock.id === target.id)
    throw forbidden(`workspace ${ws.id} is not locked by another run`);
  const holder = model.runs.get(ws.lock.id);
  if (holder === null) throw forbidden(`workspace ${ws.id} is locked by a run that does not exist`);
  if (!snapshotOf(holder).can({ type: 'RunDiscarded', data: {} })) {
    throw new ConflictError(
      `run ${holder.id} holding workspace ${ws.id} is not in a discardable state (status ${holder.status})`,
      {
        title: 'transition not allowed',
      },
    );
  }
  const { handler } = model.core;
  await handler.atomically(() => {
    handler.handleSync(target.id, runDecider, requestForceExecute(target.id), metadata);
    const earlier = model.runs.queued(ws.id).filter((r) => r.seq < target.seq);
    for (const r of [holder, ...earlier]) {
      if (!isFinalStatus(r.status))
        handler.handleSync(r.id, runDecider, discardRun(r.id, null, 'force_execute'), metadata);
    }
    handler.handleSync(ws.id, workspaceDecider, unlockForRun(holder.id), metadata);
  });
}
