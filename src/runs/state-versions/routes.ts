import type Router from '@koa/router';
import type { Context } from 'koa';
import { NotFoundError, ValidationError } from '../../core/errors.js';
import { pageOf, paginate, queryValue, send } from '../jsonapi.js';
import { need, type RunsModel } from '../model.js';
import type { WorkspaceAccess } from '../lifecycle.js';
import { outputId, outputsOf, parseOutputId, presentOutput } from './outputs.js';
import { presentPendingStateVersion, presentStateVersion, stateDocument } from './record.js';
import { stateUploadUrls } from './upload.js';

/**
 * State version routes: show, list by workspace, the current one, download, and the outputs (of
 * a version, of the workspace's current one, one by id).
 */
/** Whether the access reads whole state versions, or (`outputsOnly`) at least their outputs. */
export const stateReadable = (access: WorkspaceAccess, outputsOnly = false): boolean =>
  access.stateVersions === 'read' ||
  access.stateVersions === 'write' ||
  (outputsOnly && access.stateVersions === 'read-outputs');

export function stateVersionRoutes(router: Router, model: RunsModel): void {
  const queries = model.states;
  /** A state version the caller may read: whole (`state-versions` read), or only its outputs. */
  const readable = (ctx: Context, id: string, outputsOnly = false) => {
    const sv = queries.get(id);
    if (sv === null) throw new NotFoundError(`state version ${id} not found`);
    const { access } = model.workspace(ctx, sv.workspaceId);
    need(stateReadable(access, outputsOnly), `state version ${id}`);
    return sv;
  };
  /** The workspace, when the caller may read its state (or only its outputs). */
  const stateOf = (ctx: Context, id: string, outputsOnly = false) => {
    const { ws, access } = model.workspace(ctx, id);
    need(stateReadable(access, outputsOnly), `state versions of workspace ${ws.id}`);
    return ws;
  };
  /** A version's outputs; sensitive values are left out of lists unless `reveal`. */
  const outputs = (svId: string, reveal: boolean) =>
    outputsOf(stateDocument(model, svId) ?? '{}').map((o, i) =>
      presentOutput(outputId(svId, i), o, reveal),
    );

  router.get('/state-versions/:id', (ctx) => {
    const id = ctx.params.id!;
    const pending = queries.pending(id);
    if (pending !== null) {
      stateOf(ctx, pending.workspaceId);
      send(ctx, 200, { data: presentPendingStateVersion(pending, stateUploadUrls(model, id)) });
      return;
    }
    send(ctx, 200, { data: presentStateVersion(readable(ctx, id)) });
  });

  router.get('/state-versions/:id/download', (ctx) => {
    const sv = readable(ctx, ctx.params.id!);
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = stateDocument(model, sv.id) ?? '';
  });

  router.get('/state-versions/:id/outputs', (ctx) => {
    const sv = readable(ctx, ctx.params.id!, true);
    const all = outputs(sv.id, false);
    const page = pageOf(ctx);
    const start = (page.number - 1) * page.size;
    send(ctx, 200, {
      data: all.slice(start, start + page.size),
      ...paginate(ctx, page, { total: all.length }),
    });
  });

  router.get('/workspaces/:id/current-state-version-outputs', (ctx) => {
    const ws = stateOf(ctx, ctx.params.id!, true);
    const sv = queries.current(ws.id);
    if (sv === null) throw new NotFoundError(`workspace ${ws.id} has no state version`);
    send(ctx, 200, { data: outputs(sv.id, false) });
  });

  /** One output, its value shown even when sensitive (the reference's rule for this route). */
  router.get('/state-version-outputs/:id', (ctx) => {
    const id = ctx.params.id!;
    const parsed = parseOutputId(id);
    const output =
      parsed === null
        ? undefined
        : outputs(readable(ctx, parsed.svId, true).id, true)[parsed.index];
    if (output === undefined) throw new NotFoundError(`state version output ${id} not found`);
    send(ctx, 200, { data: output });
  });

  router.get('/workspaces/:id/current-state-version', (ctx) => {
    const ws = stateOf(ctx, ctx.params.id!);
    const sv = queries.current(ws.id);
    if (sv === null) throw new NotFoundError(`workspace ${ws.id} has no state version`);
    send(ctx, 200, { data: presentStateVersion(sv) });
  });

  /** `GET /state-versions?filter[workspace][name]=…&filter[organization][name]=…`, newest first. */
  /** One page of a workspace's state versions, newest first. */
  const list = (ctx: Context, wsId: string) => {
    const page = pageOf(ctx);
    const { rows, total } = queries.list(wsId, page.size, (page.number - 1) * page.size);
    send(ctx, 200, { data: rows.map(presentStateVersion), ...paginate(ctx, page, { total }) });
  };
  router.get('/workspaces/:id/state-versions', (ctx) => list(ctx, stateOf(ctx, ctx.params.id!).id));
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
    list(ctx, stateOf(ctx, found.id).id);
  });
}
