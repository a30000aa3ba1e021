import type Router from '@koa/router';
import type { Context } from 'koa';
import { createHash } from 'node:crypto';
import { NotFoundError, ValidationError } from '../../core/errors.js';
import { systemMetadata } from '../../core/events.js';
import type { StateVersionCreated } from '../events.js';
import { API, pageOf, paginate, queryValue, send, toOne, type Resource } from '../jsonapi.js';
import type { RunsModel } from '../model.js';
import {
  createStateVersion,
  stateVersionDecider,
  StateVersionQueries,
  type StateVersionRow,
} from './projection.js';

function presentStateVersion(sv: StateVersionRow): Resource {
  const self = `${API}/state-versions/${sv.id}`;
  return {
    id: sv.id,
    type: 'state-versions',
    attributes: {
      'created-at': sv.createdAt,
      serial: sv.serial,
      lineage: sv.lineage,
      md5: sv.md5,
      size: sv.size,
      status: 'finalized',
      'resources-processed': true,
      'terraform-version': sv.engineVersion,
      'hosted-state-download-url': `${self}/download`,
    },
    relationships: { run: toOne('runs', sv.runId), workspace: toOne('workspaces', sv.workspaceId) },
    links: { self },
  };
}

/**
 * Record a new state for a workspace (the executor calls this after an apply): serial one above
 * the current one, the lineage kept, the document stored in the log.
 */
export function recordStateVersion(
  model: RunsModel,
  input: {
    workspaceId: string;
    runId: string | null;
    state: string;
    engineVersion?: string | null;
  },
): StateVersionCreated['data'] {
  let parsed: { resources?: unknown[]; lineage?: unknown };
  try {
    parsed = JSON.parse(input.state) as typeof parsed;
  } catch {
    throw new ValidationError('the state is not JSON');
  }
  const current = new StateVersionQueries(model.core.db).current(input.workspaceId);
  const data: StateVersionCreated['data'] = {
    id: model.core.ids.id('sv'),
    workspaceId: input.workspaceId,
    runId: input.runId,
    serial: (current?.serial ?? 0) + 1,
    lineage:
      current?.lineage ??
      (typeof parsed.lineage === 'string' ? parsed.lineage : model.core.ids.uuid()),
    md5: createHash('md5').update(input.state).digest('hex'),
    state: model.core.sealer.seal(input.state),
    size: Buffer.byteLength(input.state),
    resources: Array.isArray(parsed.resources) ? parsed.resources.length : 0,
    engineVersion: input.engineVersion ?? null,
  };
  model.core.handler.handle(
    data.id,
    stateVersionDecider,
    createStateVersion(data),
    systemMetadata('executor'),
  );
  return data;
}

/** State version routes: show, list by workspace, the current one, download. */
export function stateVersionRoutes(router: Router, model: RunsModel): void {
  const queries = new StateVersionQueries(model.core.db);
  const readable = (ctx: Context, id: string) => {
    const sv = queries.get(id);
    if (sv === null) throw new NotFoundError(`state version ${id} not found`);
    model.workspace(ctx, sv.workspaceId);
    return sv;
  };

  router.get('/state-versions/:id', (ctx) =>
    send(ctx, 200, { data: presentStateVersion(readable(ctx, ctx.params.id!)) }),
  );

  router.get('/state-versions/:id/download', (ctx) => {
    const sv = readable(ctx, ctx.params.id!);
    const event = model.core.store.readStream(sv.id)[0];
    ctx.status = 200;
    ctx.type = 'application/json';
    const state = (event?.data as StateVersionCreated['data'] | undefined)?.state;
    ctx.body = state === undefined ? '' : model.core.sealer.open(state);
  });

  router.get('/workspaces/:id/current-state-version', (ctx) => {
    const { ws } = model.workspace(ctx, ctx.params.id!);
    const sv = queries.current(ws.id);
    if (sv === null) throw new NotFoundError(`workspace ${ws.id} has no state version`);
    send(ctx, 200, { data: presentStateVersion(sv) });
  });

  /** `GET /state-versions?filter[workspace][name]=…&filter[organization][name]=…`, newest first. */
  router.get('/state-versions', (ctx) => {
    const org = queryValue(ctx, 'filter[organization][name]');
    const name = queryValue(ctx, 'filter[workspace][name]');
    if (org === undefined || name === undefined)
      throw new ValidationError(
        'filter[organization][name] and filter[workspace][name] are required',
      );
    model.organization(ctx, org);
    const found = model.workspaces.byName(org, name);
    if (found === null) throw new NotFoundError(`workspace ${org}/${name} not found`);
    const { ws } = model.workspace(ctx, found.id);
    const page = pageOf(ctx);
    const { rows, total } = queries.list(ws.id, page.size, (page.number - 1) * page.size);
    send(ctx, 200, { data: rows.map(presentStateVersion), ...paginate(ctx, page, { total }) });
  });
}
