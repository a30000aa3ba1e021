import type Router from '@koa/router';
import type { Context } from 'koa';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import { readRawBody } from '../../http/body.js';
import type { StateVersionUploadRequested } from '../events.js';
import { send } from '../jsonapi.js';
import { need, type RunsModel } from '../model.js';
import { announcerOf, archivistUrl, secretMatches } from '../run/logs.js';
import { requestMetadata } from '../../http/request-id.js';
import { validate } from '../run/schema.js';
import { requestStateUpload, stateVersionDecider } from './projection.js';
import { stateFacts } from './facts.js';
import { presentPendingStateVersion, presentStateVersion, recordStateVersion } from './record.js';

/**
 * Creating state versions from outside a run, as the terraform CLI does in local execution mode
 * and for `state push`: the caller holds the workspace lock; the serial must not go down, unless
 * `force`. The state comes inline (`state`, base64) or, as go-tfe sends it, in a
 * `PUT` to the `hosted-state-upload-url` the answer gives (the JSON rendering goes to
 * `hosted-json-state-upload-url`).
 */

const createBody = z.object({
  data: z.object({
    type: z.literal('state-versions').optional(),
    attributes: z.object({
      serial: z.number().int().min(0),
      md5: z.string().regex(/^[0-9a-f]{32}$/, 'must be 32 lowercase hex digits'),
      lineage: z.string().min(1).optional(),
      state: z.string().optional().describe('base64 of the state; or PUT it to the upload address'),
      'json-state': z.string().optional(),
      'json-state-outputs': z.string().optional(),
      force: z.boolean().optional(),
    }),
    relationships: z
      .object({ run: z.object({ data: z.object({ id: z.string() }).nullable() }).optional() })
      .optional(),
  }),
});

const md5Of = (text: string) => createHash('md5').update(text).digest('hex');

/** Check an uploaded document against what its version announced; 422 when it differs. */
function checkDocument(state: string, announced: StateVersionUploadRequested['data']): void {
  if (md5Of(state) !== announced.md5)
    throw new ValidationError(`the state's md5 is ${md5Of(state)}, not ${announced.md5}`);
  const facts = stateFacts(state);
  if (facts.serial !== null && facts.serial !== announced.serial)
    throw new ValidationError(`the state's serial is ${facts.serial}, not ${announced.serial}`);
  if (facts.lineage !== null && announced.lineage !== null && facts.lineage !== announced.lineage)
    throw new ValidationError(`the state's lineage is ${facts.lineage}, not ${announced.lineage}`);
}

export function stateUploadRoutes(router: Router, model: RunsModel): void {
  const queries = model.states;

  router.post('/workspaces/:id/state-versions', async (ctx) => {
    const principal = model.principal(ctx);
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    need(access.stateVersions === 'write', `creating state versions in workspace ${ws.id}`);
    const body = validate(createBody, ctx.request.body).data;
    const a = body.attributes;
    const runId = body.relationships?.run?.data?.id ?? null;
    const lockedByCaller =
      ws.lock !== null &&
      ((ws.lock.kind === principal.kind && ws.lock.id === principal.id) ||
        (ws.lock.kind === 'run' && ws.lock.id === runId));
    if (!lockedByCaller)
      throw new ConflictError(
        `workspace ${ws.id} must be locked by the caller to create a state version`,
        { title: 'conflict' },
      );
    if (runId !== null && model.runs.get(runId)?.workspaceId !== ws.id)
      throw new NotFoundError(`run ${runId} not found in workspace ${ws.id}`);
    const current = queries.current(ws.id);
    // Lower serials are refused unless forced. The lineage is the client's to check: terraform
    // refuses another lineage before it pushes, and sends `force: false` even for `state push
    // -force`, so a server-side lineage check would break the forced push.
    if (current !== null && a.force !== true && a.serial < current.serial)
      throw new ConflictError(
        `serial ${a.serial} is lower than the current state's serial ${current.serial}`,
        { title: 'conflict' },
      );
    const announced: StateVersionUploadRequested['data'] = {
      id: model.core.ids.id('sv'),
      workspaceId: ws.id,
      runId,
      serial: a.serial,
      lineage: a.lineage ?? null,
      md5: a.md5,
    };
    const metadata = model.metadata(ctx);
    if (a.state !== undefined) {
      const state = Buffer.from(a.state, 'base64').toString('utf8');
      checkDocument(state, announced);
      const recorded = await recordStateVersion(model, { ...announced, state }, metadata);
      send(ctx, 201, { data: presentStateVersion(queries.get(recorded.id)!) });
      return;
    }
    await model.core.handler.handle(
      announced.id,
      stateVersionDecider,
      requestStateUpload(announced),
      metadata,
      { newStream: true },
    );
    send(ctx, 201, {
      data: presentPendingStateVersion(
        queries.pending(announced.id)!,
        stateUploadUrls(model, announced.id),
      ),
    });
  });
}

/** The secret addresses a pending state version takes its state and its JSON rendering at. */
export const stateUploadUrls = (model: RunsModel, id: string) => ({
  state: archivistUrl(model, 'state-versions', 'state-upload', id),
  json: archivistUrl(model, 'state-versions-json', 'json-state-upload', id),
});

/** The two secret upload addresses; no token. */
export function stateArchivistRoutes(router: Router, model: RunsModel): void {
  const queries = model.states;
  // The addresses carry no token: the upload is recorded as the pending version's announcer's.
  const metadata = (ctx: Context, id: string): AuditMetadata =>
    requestMetadata(ctx, announcerOf(model, id));

  router.put('/archivist/state-versions/:id/:secret', async (ctx) => {
    const id = ctx.params.id!;
    if (!secretMatches(model, 'state-upload', id, ctx.params.secret!))
      throw new NotFoundError('upload address not found');
    const pending = queries.pending(id);
    if (pending === null) {
      if (queries.get(id) === null) throw new NotFoundError('upload address not found');
      throw new ConflictError(`state version ${id} is already uploaded`, {
        title: 'transition not allowed',
      });
    }
    const state = (await readRawBody(ctx, model.core.config.uploadLimitBytes)).toString('utf8');
    checkDocument(state, pending);
    await recordStateVersion(model, { ...pending, state }, metadata(ctx, id));
    ctx.body = null;
    ctx.status = 200;
  });

  /**
   * The JSON rendering of the state: checked to be JSON and not kept, since Keel reads outputs
   * and resources from the state itself.
   */
  router.put('/archivist/state-versions-json/:id/:secret', async (ctx) => {
    const id = ctx.params.id!;
    if (
      !secretMatches(model, 'json-state-upload', id, ctx.params.secret!) ||
      (queries.pending(id) === null && queries.get(id) === null)
    )
      throw new NotFoundError('upload address not found');
    const text = (await readRawBody(ctx, model.core.config.uploadLimitBytes)).toString('utf8');
    try {
      JSON.parse(text);
    } catch {
      throw new ValidationError('the JSON state is not JSON');
    }
    ctx.body = null;
    ctx.status = 200;
  });
}
