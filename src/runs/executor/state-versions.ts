import type Router from '@koa/router';
import type { Context } from 'koa';
import { NotFoundError } from '../../core/errors.js';
import { API, pageOf, send } from '../jsonapi.js';
import type { RunsModel } from '../model.js';
import type { ExecutorQueries, StateVersionRow } from './projection.js';

/** The wire shape of a state version. */
export function presentStateVersion(sv: StateVersionRow) {
  const resources = sv.state.resources.map((r) => ({
    name: r.name,
    type: r.type,
    count: r.instances.length,
    module: 'root',
    provider: r.provider,
  }));
  return {
    id: sv.id,
    type: 'state-versions',
    attributes: {
      'created-at': sv.createdAt,
      serial: sv.serial,
      lineage: sv.lineage,
      md5: sv.md5,
      status: 'finalized',
      'terraform-version': sv.state.terraform_version,
      'state-version': sv.state.version,
      'resources-processed': true,
      resources,
      'hosted-state-download-url': `${API}/state-versions/${sv.id}/download`,
    },
    relationships: {
      run: { data: sv.runId === null ? null : { id: sv.runId, type: 'runs' } },
      workspace: { data: { id: sv.workspaceId, type: 'workspaces' } },
      outputs: {
        data: Object.keys(sv.state.outputs).map((name) => ({
          id: `wsout-${sv.id.slice(3)}-${name}`,
          type: 'state-version-outputs',
        })),
      },
    },
    links: { self: `${API}/state-versions/${sv.id}` },
  };
}

/** State version routes: the current one of a workspace, one by id, a workspace's list, download. */
export function stateVersionRoutes(
  router: Router,
  model: RunsModel,
  queries: ExecutorQueries,
): void {
  const readable = (ctx: Context, id: string): StateVersionRow => {
    const sv = queries.stateVersion(id);
    if (sv === null) throw new NotFoundError(`state version ${id} not found`);
    try {
      model.workspace(ctx, sv.workspaceId);
    } catch {
      throw new NotFoundError(`state version ${id} not found`);
    }
    return sv;
  };
  router.get('/workspaces/:id/current-state-version', (ctx) => {
    const { ws } = model.workspace(ctx, ctx.params.id ?? '');
    const sv = queries.currentState(ws.id);
    if (sv === null) throw new NotFoundError(`workspace ${ws.id} has no state version`);
    send(ctx, 200, { data: presentStateVersion(sv) });
  });
  router.get('/workspaces/:id/state-versions', (ctx) => {
    const { ws } = model.workspace(ctx, ctx.params.id ?? '');
    const page = pageOf(ctx);
    const { rows, total } = queries.stateVersions(ws.id, page.size, (page.number - 1) * page.size);
    const pages = Math.max(1, Math.ceil(total / page.size));
    send(ctx, 200, {
      data: rows.map(presentStateVersion),
      meta: {
        pagination: {
          'current-page': page.number,
          'next-page': page.number < pages ? page.number + 1 : null,
          'prev-page': page.number > 1 ? page.number - 1 : null,
          'page-size': page.size,
          'total-count': total,
          'total-pages': pages,
        },
      },
    });
  });
  router.get('/state-versions/:id', (ctx) => {
    send(ctx, 200, { data: presentStateVersion(readable(ctx, ctx.params.id ?? '')) });
  });
  router.get('/state-versions/:id/download', (ctx) => {
    const sv = readable(ctx, ctx.params.id ?? '');
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = JSON.stringify(sv.state);
  });
}
