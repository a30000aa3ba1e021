import type Router from '@koa/router';
import type { Context } from 'koa';
import { NotFoundError } from '../../core/errors.js';
import type { Actor } from '../../core/events.js';
import { safeEqual } from '../../core/seal.js';
import { API, send, type Resource } from '../jsonapi.js';
import type { WorkspaceAccess } from '../lifecycle.js';
import { need, type RunsModel } from '../model.js';
import { redactPlan } from '../executor/redact.js';
import { withProviderSchemas } from '../executor/plan-schemas.js';
import type { Json, PlanJson } from '../executor/types.js';
import {
  applyIdOf,
  framedLog,
  isPhaseDone,
  planIdOf,
  presentApply,
  presentPlan,
  runIdOfPhase,
} from './presenters.js';
import type { RunRow } from './projection.js';
import { StateVersionQueries } from '../state-versions/projection.js';

/**
 * Plans, applies, their logs and the run's events. A log is read through a secret, unauthenticated
 * address (like the reference's archivist): the secret is a keyed hash of the phase id, so it needs
 * no storage and cannot be guessed.
 */

export const ARCHIVIST = `${API}/archivist`;

const secretOf = (model: RunsModel, purpose: string, id: string) =>
  model.core.sealer.hmac(`${purpose}:${id}`).slice(0, 40);

/** Compare a presented secret with the expected one in constant time. */
export function secretMatches(
  model: RunsModel,
  purpose: string,
  id: string,
  presented: string,
): boolean {
  return safeEqual(secretOf(model, purpose, id), presented);
}

/**
 * Who announced what a secret upload address fills in (a configuration version, a pending state
 * version): the actor of the stream's first event. The address carries no token, so the upload is
 * recorded as theirs; null only where the announcement itself recorded none.
 */
export function announcerOf(model: RunsModel, stream: string): Actor | null {
  return model.core.store.readStream(stream)[0]?.metadata.actor ?? null;
}

/** The absolute address a client can GET a phase's log from without a token. */
export function logUrl(model: RunsModel, phase: 'plan' | 'apply', runId: string): string {
  const id = phase === 'plan' ? planIdOf(runId) : applyIdOf(runId);
  return `${model.core.config.publicAddress}${ARCHIVIST}/logs/${id}/${secretOf(model, 'log', id)}`;
}

/** An absolute, secret archivist address: `/archivist/<path>/<id>/<secret for purpose and id>`. */
export function archivistUrl(model: RunsModel, path: string, purpose: string, id: string): string {
  return `${model.core.config.publicAddress}${ARCHIVIST}/${path}/${id}/${secretOf(model, purpose, id)}`;
}

/** The absolute, secret upload address of a configuration version. */
export function uploadUrl(model: RunsModel, cvId: string): string {
  return archivistUrl(model, 'uploads', 'upload', cvId);
}

/** A run's apply resource, with the state versions the run recorded. */
export function applyResource(
  model: RunsModel,
  states: StateVersionQueries,
  run: RunRow,
): Resource {
  const ids = states.ofRun(run.id).map((sv) => sv.id);
  return presentApply(run, logUrl(model, 'apply', run.id), ids);
}

/** Routes that need a token. */
export function phaseRoutes(router: Router, model: RunsModel): void {
  const states = new StateVersionQueries(model.core.db);
  const phase = (
    ctx: Context,
    kind: 'plan' | 'apply',
    runId: string,
  ): { run: RunRow; access: WorkspaceAccess; body: Resource } => {
    const { run, access } = model.run(ctx, runId);
    return {
      run,
      access,
      body:
        kind === 'plan'
          ? presentPlan(run, logUrl(model, 'plan', run.id))
          : applyResource(model, states, run),
    };
  };
  const byPhaseId = (ctx: Context, prefix: 'plan' | 'apply') => {
    const { id } = ctx.params as { id: string };
    if (!id.startsWith(`${prefix}-`)) throw new NotFoundError(`${prefix} ${id} not found`);
    try {
      return phase(ctx, prefix, runIdOfPhase(id));
    } catch (err) {
      if (err instanceof NotFoundError) throw new NotFoundError(`${prefix} ${id} not found`);
      throw err;
    }
  };

  router.get('/plans/:id', (ctx) => send(ctx, 200, { data: byPhaseId(ctx, 'plan').body }));
  router.get('/applies/:id', (ctx) => send(ctx, 200, { data: byPhaseId(ctx, 'apply').body }));
  router.get('/runs/:id/plan', (ctx) =>
    send(ctx, 200, { data: phase(ctx, 'plan', ctx.params.id!).body }),
  );
  router.get('/runs/:id/apply', (ctx) =>
    send(ctx, 200, { data: phase(ctx, 'apply', ctx.params.id!).body }),
  );

  /**
   * The plan in JSON (204 until the plan has finished): in full, sensitive values included, for
   * workspace admins only; redacted for anyone who can read the run.
   */
  const jsonOutput = (
    ctx: Context,
    found: { run: RunRow; access: WorkspaceAccess },
    form: 'full' | 'redacted',
  ) => {
    const { run, access } = found;
    if (form === 'full') need(access.admin, `the unredacted plan JSON of run ${run.id}`);
    if (run.plan.status !== 'finished') {
      ctx.status = 204;
      ctx.body = null;
      return;
    }
    const log = model.runs.log(run.id, 'plan');
    const plan = log?.jsonOutput ?? null;
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = JSON.stringify(
      form === 'full' || plan === null
        ? plan
        : withProviderSchemas(
            (log?.jsonOutputRedacted ?? redactPlan(plan as PlanJson, [])) as Json,
          ),
    );
  };
  for (const form of ['full', 'redacted'] as const) {
    const suffix = form === 'full' ? 'json-output' : 'json-output-redacted';
    router.get(`/plans/:id/${suffix}`, (ctx) => jsonOutput(ctx, byPhaseId(ctx, 'plan'), form));
    router.get(`/runs/:id/plan/${suffix}`, (ctx) =>
      jsonOutput(ctx, phase(ctx, 'plan', ctx.params.id!), form),
    );
  }

  /** Run events, from the run's history: one per event of its stream, oldest first. */
  router.get('/runs/:id/run-events', (ctx) => {
    const { run } = model.run(ctx, ctx.params.id!);
    const data = model.history.events(run.id).map((e) => ({
      id: `re-${run.id.slice(4)}-${e.version}`,
      type: 'run-events',
      attributes: {
        action: actionName(e.type),
        'created-at': e.createdAt,
        description: e.description,
      },
      relationships: { run: { data: { type: 'runs', id: run.id } } },
    }));
    send(ctx, 200, { data });
  });
}

/** `RunPlanQueued` → `plan_queued`: the action name of a run event. */
const actionName = (type: string) =>
  type
    .replace(/^Run/, '')
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase();

/** Routes that answer without a token: the secret is in the address. */
export function archivistLogRoutes(
  router: Router,
  model: RunsModel,
  liveLog: (phaseId: string) => string | null = () => null,
): void {
  router.get('/archivist/logs/:id/:secret', (ctx) => {
    const { id, secret } = ctx.params as { id: string; secret: string };
    const kind = id.startsWith('plan-') ? 'plan' : id.startsWith('apply-') ? 'apply' : null;
    if (kind === null || !secretMatches(model, 'log', id, secret))
      throw new NotFoundError('log not found');
    const run = model.runs.get(runIdOfPhase(id));
    if (run === null) throw new NotFoundError('log not found');
    // A running phase streams into the live log; a finished one has its log in the read model.
    const text = model.runs.log(run.id, kind)?.log ?? liveLog(id) ?? '';
    const full = framedLog(text, isPhaseDone(kind === 'plan' ? run.plan : run.apply));
    // go-tfe reads logs in chunks with ?limit=&offset=
    const offset = Number(ctx.query.offset ?? 0) || 0;
    const limit = Number(ctx.query.limit ?? 0) || full.length;
    ctx.status = 200;
    ctx.type = 'text/plain';
    ctx.body = full.slice(offset, offset + limit);
  });
}
