import { ConflictError, KeelError, NotFoundError, ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { RunsPrincipal } from '../../http/types.js';
import { NO_RUN } from '../../../machines/run.machine.js';
import type { RunCreated, Requester } from '../events.js';
import { isFinalStatus, statusOf, type RunSnapshot, type WorkspaceAccess } from '../lifecycle.js';
import type { RunsModel } from '../model.js';
import { workspaceDecider, unlockForRun } from '../workspaces/decider.js';
import type { WorkspaceRow } from '../workspaces/projection.js';
import { createRun, discardRun, requestForceExecute, runDecider } from './commands.js';
import type { RunRow } from './projection.js';
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
  // The reference plans such a run with that terraform version; Keel's engines are the binaries
  // the operator configured, and a plan made by another version would answer another question.
  if (engineVersion !== null)
    throw new ValidationError(
      `/data/attributes/engine-version: Keel does not switch terraform versions per run (got ${JSON.stringify(engineVersion)}): the workspace's execution-engine plans every run`,
    );
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
 * the workspace, and leave the target at the head of the queue. All in one command, decided from
 * the streams' folds inside it: the target's and the holder's runs, and the workspace's lock.
 */
export async function forceExecute(
  model: RunsModel,
  target: Pick<RunRow, 'id' | 'seq' | 'workspaceId'>,
  metadata: AuditMetadata,
): Promise<void> {
  const { handler } = model.core;
  await handler.atomically(() => {
    const run = (id: string) => handler.load(id, runDecider).state;
    const status = (s: RunSnapshot) => (s.value === NO_RUN ? null : statusOf(s));
    const targetStatus = status(run(target.id));
    if (targetStatus === null) throw new NotFoundError(`run ${target.id} not found`);
    if (targetStatus !== 'pending')
      throw forbidden(`run ${target.id} is not pending (status ${targetStatus})`);
    const ws = handler.load(target.workspaceId, workspaceDecider).state;
    if (!ws.exists || ws.deleted) throw new NotFoundError(`run ${target.id} not found`);
    if (ws.lock?.kind !== 'run' || ws.lock.id === target.id)
      throw forbidden(`workspace ${target.workspaceId} is not locked by another run`);
    const holderId = ws.lock.id;
    const holder = run(holderId);
    const holderStatus = status(holder);
    if (holderStatus === null)
      throw forbidden(`workspace ${target.workspaceId} is locked by a run that does not exist`);
    if (!holder.can({ type: 'RunDiscarded', data: {} })) {
      throw new ConflictError(
        `run ${holderId} holding workspace ${target.workspaceId} is not in a discardable state (status ${holderStatus})`,
        { title: 'transition not allowed' },
      );
    }
    handler.handleSync(target.id, runDecider, requestForceExecute(target.id), metadata);
    // Which runs wait ahead of the target is the queue's order; whether each is discarded, its fold.
    const earlier = model.runs
      .queued(target.workspaceId)
      .filter((r) => r.seq < target.seq)
      .map((r) => r.id);
    for (const id of [holderId, ...earlier]) {
      const s = status(run(id));
      if (s !== null && !isFinalStatus(s))
        handler.handleSync(id, runDecider, discardRun(id, null, 'force_execute'), metadata);
    }
    handler.handleSync(target.workspaceId, workspaceDecider, unlockForRun(holderId), metadata);
  });
}
