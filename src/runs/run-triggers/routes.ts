import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Decider } from '../../core/command-handler.js';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import type { StoredEvent } from '../../core/events.js';
import { systemMetadata } from '../../core/events.js';
import type { Reactor } from '../../core/reactors.js';
import type { Logger } from '../../core/logger.js';
import type { RunCreated } from '../events.js';
import { API, queryValue, send, toOne, type Resource } from '../jsonapi.js';
import { NO_ACCESS } from '../lifecycle.js';
import { need, type RunsModel } from '../model.js';
import { validate } from '../run/schema.js';
import { newRunSync } from '../run/service.js';
import type { RunTriggerEvent } from './events.js';
import type { RunTriggerQueries, RunTriggerRow } from './projection.js';

/** `/workspaces/:id/run-triggers` and `/run-triggers/:id`, and the reactor that follows applies. */

/** The reference's limit: a workspace follows at most 20 sources. */
export const MAX_SOURCES = 20;

/** The `source` of a run a run trigger queued. */
export const RUN_TRIGGER_SOURCE = 'tfe-run-trigger';

const existence: Decider<{ exists: boolean }, RunTriggerEvent> = {
  initialState: () => ({ exists: false }),
  evolve: (_s, e) => ({ exists: e.type === 'RunTriggerCreated' }),
};

const createBody = z.object({
  data: z.object({
    type: z.literal('run-triggers').optional(),
    relationships: z.object({
      sourceable: z.object({
        data: z.object({ type: z.literal('workspaces'), id: z.string().min(1) }),
      }),
    }),
  }),
});

const invalid = (detail: string) =>
  new ConflictError(detail, { status: 422, title: 'invalid attribute' });

export function runTriggerRoutes(router: Router, model: RunsModel, triggers: RunTriggerQueries) {
  const present = (t: RunTriggerRow): Resource => ({
    id: t.id,
    type: 'run-triggers',
    attributes: {
      'workspace-name': model.workspaces.get(t.workspaceId)?.name ?? null,
      'sourceable-name': model.workspaces.get(t.sourceableId)?.name ?? null,
      'created-at': t.createdAt,
    },
    relationships: {
      workspace: toOne('workspaces', t.workspaceId),
      sourceable: toOne('workspaces', t.sourceableId),
    },
    links: { self: `${API}/run-triggers/${t.id}` },
  });

  router.post('/workspaces/:id/run-triggers', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    need(access.admin, `adding run triggers to workspace ${ws.id}`);
    const sourceId = validate(createBody, ctx.request.body).data.relationships.sourceable.data.id;
    const { ws: source } = model.workspace(ctx, sourceId);
    if (source.organization !== ws.organization)
      throw new NotFoundError(`workspace ${sourceId} not found in ${ws.organization}`);
    const id = model.core.ids.id('rt');
    await model.core.handler.atomically(() => {
      if (source.id === ws.id) throw invalid(`workspace ${ws.id} cannot trigger its own runs`);
      const inbound = triggers.inbound(ws.id);
      if (inbound.some((t) => t.sourceableId === source.id))
        throw invalid(`workspace ${ws.id} already follows ${source.id}`);
      if (inbound.length >= MAX_SOURCES)
        throw invalid(`workspace ${ws.id} already follows ${MAX_SOURCES} workspaces, the limit`);
      if (triggers.reaches(ws.id, source.id))
        throw invalid(
          `workspace ${source.id} already follows ${ws.id}, directly or through others; a run trigger from it would make a cycle`,
        );
      model.core.handler.handleSync(
        id,
        existence,
        (): RunTriggerEvent[] => [
          {
            type: 'RunTriggerCreated',
            data: {
              id,
              organization: ws.organization,
              workspaceId: ws.id,
              sourceableId: source.id,
            },
          },
        ],
        model.metadata(ctx),
      );
    });
    send(ctx, 201, { data: present(triggers.get(id)!) });
  });

  router.get('/workspaces/:id/run-triggers', (ctx) => {
    const { ws } = model.workspace(ctx, ctx.params.id!);
    const type = queryValue(ctx, 'filter[run-trigger][type]');
    if (type !== 'inbound' && type !== 'outbound')
      throw new ValidationError('filter[run-trigger][type] is required: inbound or outbound', {
        status: 400,
        title: 'invalid filter',
      });
    const rows = type === 'inbound' ? triggers.inbound(ws.id) : triggers.outbound(ws.id);
    send(ctx, 200, { data: rows.map(present) });
  });

  const trigger = (ctx: Context, id: string) => {
    const t = triggers.get(id);
    if (t === null) throw new NotFoundError(`run trigger ${id} not found`);
    const { access } = model.workspace(ctx, t.workspaceId);
    return { t, access };
  };
  router.get('/run-triggers/:id', (ctx) =>
    send(ctx, 200, { data: present(trigger(ctx, ctx.params.id!).t) }),
  );
  router.delete('/run-triggers/:id', async (ctx) => {
    const { t, access } = trigger(ctx, ctx.params.id!);
    need(access.admin, `deleting run trigger ${t.id}`);
    await model.core.handler.handle(
      t.id,
      existence,
      (s): RunTriggerEvent[] =>
        s.exists ? [{ type: 'RunTriggerDeleted', data: { id: t.id } }] : [],
      model.metadata(ctx),
    );
    ctx.status = 204;
  });
}

/**
 * After a successful apply, a run in each workspace that follows the run's workspace, on that
 * workspace's current configuration; the new run names the source run and workspace. A follower
 * with no configuration yet, or running operations locally, gets none. Delivery is at least once:
 * a follower that already has a run from this source run gets no second one.
 */
export function runTriggerReactor(
  model: RunsModel,
  triggers: RunTriggerQueries,
  logger: Logger,
): Reactor {
  const metadata = systemMetadata('run-trigger');
  return {
    name: 'runs-run-triggers',
    types: ['RunApplyFinished'],
    async react(event: StoredEvent) {
      const run = model.runs.get(event.stream);
      if (run === null) return;
      const source = model.workspaces.get(run.workspaceId);
      if (source === null) return;
      for (const t of triggers.outbound(source.id)) {
        const follower = model.workspaces.get(t.workspaceId);
        if (follower === null || follower.executionMode === 'local') continue;
        const cv = follower.currentConfigurationVersionId;
        if (cv === null || triggers.queuedBy(follower.id, run.id)) continue;
        const triggeredBy: NonNullable<RunCreated['data']['triggeredBy']> = {
          runId: run.id,
          workspaceId: source.id,
          workspaceName: source.name,
        };
        try {
          // Checked again with the run's creation: delivery is at least once.
          await model.core.handler.atomically(() => {
            if (triggers.queuedBy(follower.id, run.id)) return;
            newRunSync(
              model,
              {
                ws: follower,
                // The run applies on its own only when the follower says so
                // (`auto-apply-run-trigger`, false by default); otherwise it waits for confirmation.
                access: { ...NO_ACCESS, applyRuns: follower.autoApplyRunTrigger },
                createdBy: null,
                attributes: {
                  message: `Triggered by a run in ${source.organization}/${source.name} (${run.id})`,
                  'auto-apply': follower.autoApplyRunTrigger,
                },
                configurationVersionId: cv,
                source: RUN_TRIGGER_SOURCE,
                triggeredBy,
              },
              metadata,
            );
          });
        } catch (err) {
          logger.warn({ err, trigger: t.id, runId: run.id }, 'a run trigger queued no run');
        }
      }
    },
  };
}
