import type Router from '@koa/router';
import type { Context } from 'koa';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { machineDecider } from '../../core/machine-decider.js';
import type { AuditMetadata } from '../../core/events.js';
import { readRawBody } from '../../http/body.js';
import { configurationVersionMachine } from '../../../machines/configuration-version.machine.js';
import type { ConfigurationVersionCreated, ConfigurationVersionEvent } from '../events.js';
import { pageOf, paginate, send } from '../jsonapi.js';
import { need, type RunsModel } from '../model.js';
import { announcerOf, secretMatches, uploadUrl } from '../run/logs.js';
import { validate } from '../run/schema.js';
import { newRun, requesterOf, UPLOAD_MESSAGE } from '../run/service.js';
import { readArchive } from './archive.js';
import { presentConfigurationVersion } from './presenters.js';
import type { ConfigurationVersionRow } from './projection.js';
import { requestMetadata } from '../../http/request-id.js';

export const configurationVersionDecider = machineDecider(configurationVersionMachine);

const createBody = z.object({
  data: z.object({
    type: z.literal('configuration-versions').optional(),
    attributes: z
      .object({
        'auto-queue-runs': z.boolean().optional().describe('default true: an upload queues a run'),
        speculative: z.boolean().optional().describe('default false: runs are plan-only'),
        provisional: z
          .boolean()
          .optional()
          .describe('default false: current only once a run applies it'),
      })
      .optional(),
  }),
});

/** Configuration version routes that need a token. */
export function configurationVersionRoutes(router: Router, model: RunsModel): void {
  const { handler } = model.core;

  const readable = (ctx: Context, id: string): ConfigurationVersionRow => {
    const cv = model.cvs.get(id);
    if (cv === null) throw new NotFoundError(`configuration version ${id} not found`);
    model.workspace(ctx, cv.workspaceId);
    return cv;
  };
  const download = (ctx: Context, cv: ConfigurationVersionRow) => {
    if (cv.status !== 'uploaded' && cv.status !== 'archived')
      throw new NotFoundError(`configuration version ${cv.id} has no uploaded configuration`);
    const archive = model.cvs.archive(cv.id);
    if (archive === null)
      throw new NotFoundError(`configuration version ${cv.id} has no uploaded configuration`);
    ctx.status = 200;
    ctx.type = 'application/octet-stream';
    ctx.body = archive;
  };

  router.post('/workspaces/:id/configuration-versions', async (ctx) => {
    const principal = model.userOrTeam(ctx, 'creating a configuration version');
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    need(access.queuePlans, `creating configuration versions in workspace ${ws.id}`);
    const a = validate(createBody, ctx.request.body).data.attributes ?? {};
    const data: ConfigurationVersionCreated['data'] = {
      id: model.core.ids.id('cv'),
      workspaceId: ws.id,
      organization: ws.organization,
      autoQueueRuns: a['auto-queue-runs'] ?? true,
      speculative: a.speculative ?? false,
      provisional: a.provisional ?? false,
      source: 'engine-api',
      createdBy: requesterOf(principal),
    };
    await handler.handle(
      data.id,
      configurationVersionDecider,
      (): ConfigurationVersionEvent[] => [{ type: 'ConfigurationVersionCreated', data }],
      model.metadata(ctx),
    );
    send(ctx, 201, {
      data: presentConfigurationVersion(model.cvs.get(data.id)!, uploadUrl(model, data.id)),
    });
  });

  router.get('/workspaces/:id/configuration-versions', (ctx) => {
    const { ws } = model.workspace(ctx, ctx.params.id!);
    const page = pageOf(ctx);
    const { rows, total } = model.cvs.list(ws.id, page.size, (page.number - 1) * page.size);
    send(ctx, 200, {
      data: rows.map((cv) => presentConfigurationVersion(cv)),
      ...paginate(ctx, page, { total }),
    });
  });

  router.get('/configuration-versions/:id', (ctx) =>
    send(ctx, 200, { data: presentConfigurationVersion(readable(ctx, ctx.params.id!)) }),
  );
  router.get('/configuration-versions/:id/download', (ctx) =>
    download(ctx, readable(ctx, ctx.params.id!)),
  );
  router.get('/runs/:id/configuration-version', (ctx) => {
    const { run } = model.run(ctx, ctx.params.id!);
    send(ctx, 200, {
      data: presentConfigurationVersion(readable(ctx, run.attrs.configurationVersionId)),
    });
  });
  router.get('/runs/:id/configuration-version/download', (ctx) => {
    const { run } = model.run(ctx, ctx.params.id!);
    download(ctx, readable(ctx, run.attrs.configurationVersionId));
  });

  router.post('/configuration-versions/:id/actions/archive', async (ctx) => {
    const cv = readable(ctx, ctx.params.id!);
    const { ws, access } = model.workspace(ctx, cv.workspaceId);
    need(access.admin, `archiving configuration version ${cv.id}`);
    if (ws.currentConfigurationVersionId === cv.id || ws.latestConfigurationVersionId === cv.id) {
      throw new ConflictError(
        `configuration version ${cv.id} could not be archived because it is current`,
        { title: 'transition not allowed' },
      );
    }
    await handler.handle(
      cv.id,
      configurationVersionDecider,
      (): ConfigurationVersionEvent[] => [{ type: 'ConfigurationVersionArchived', data: {} }],
      model.metadata(ctx),
    );
    ctx.body = null;
    ctx.status = 202; // after the body: an empty body would otherwise turn it into 204
  });
}

/**
 * The upload address: `PUT` with the archive as the body and no token (the secret is in the
 * address). A valid archive makes the version `uploaded` and, with `auto-queue-runs`, queues a run;
 * an invalid one makes it `errored`. Too large a body is refused and changes nothing.
 */
export function archivistUploadRoutes(router: Router, model: RunsModel): void {
  const { handler } = model.core;
  router.put('/archivist/uploads/:id/:secret', async (ctx) => {
    const id = ctx.params.id!;
    const cv = model.cvs.get(id);
    if (cv === null || !secretMatches(model, 'upload', id, ctx.params.secret!))
      throw new NotFoundError('upload address not found');
    if (cv.status !== 'pending')
      throw new ConflictError(`configuration version ${id} is ${cv.status}; it takes one upload`, {
        title: 'transition not allowed',
      });
    const archive = await readRawBody(ctx, model.core.config.uploadLimitBytes);
    // The address carries no token: the upload and the run it queues are the version creator's.
    const metadata: AuditMetadata = requestMetadata(ctx, announcerOf(model, id));
    let files: string[];
    try {
      files = [...(await readArchive(archive, { keep: false })).paths];
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      await handler.handle(
        id,
        configurationVersionDecider,
        () =>
          [
            { type: 'ConfigurationVersionErrored', data: { message } },
          ] satisfies ConfigurationVersionEvent[],
        metadata,
      );
      throw err;
    }
    const sha256 = createHash('sha256').update(archive).digest('hex');
    await handler.handle(
      id,
      configurationVersionDecider,
      () =>
        [
          {
            type: 'ConfigurationVersionUploaded',
            data: { size: archive.length, sha256, archive: archive.toString('base64'), files },
          },
        ] satisfies ConfigurationVersionEvent[],
      metadata,
    );
    if (cv.autoQueueRuns) await queueUploadedRun(model, cv, metadata);
    ctx.body = null;
    ctx.status = 200; // after the body: an empty body would otherwise turn it into 204
  });
}

/**
 * The run an upload queues: created by the version's creator, with that creator's access now, so
 * it auto-applies (from the workspace setting) only when the creator may apply runs.
 */
async function queueUploadedRun(
  model: RunsModel,
  cv: ConfigurationVersionRow,
  metadata: AuditMetadata,
): Promise<void> {
  const ws = model.workspaces.get(cv.workspaceId);
  if (ws === null) return;
  const by = cv.createdBy;
  await newRun(
    model,
    {
      ws,
      access: model.accessOf(by, ws),
      createdBy: by,
      attributes: { 'plan-only': cv.speculative, message: UPLOAD_MESSAGE },
      configurationVersionId: cv.id,
      source: 'engine-configuration-version',
    },
    metadata,
  );
}
