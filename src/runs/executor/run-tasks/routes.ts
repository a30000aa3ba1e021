import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Core } from '../../../context.js';
import { ConflictError, KeelError, NotFoundError, ValidationError } from '../../../core/errors.js';
import { parseBody, readRawBody } from '../../../http/body.js';
import type { RunsContext } from '../../index.js';
import { API, send } from '../../jsonapi.js';
import { validate } from '../../run/schema.js';
import { organizationReadRoutes } from '../org-reads.js';
import { callbackTokenMatches, parseTaskCallback } from '../tasks.js';
import type { RunTaskQueries, RunTaskRow, TaskStageRow, WorkspaceTaskRow } from './projection.js';
import type { TaskStages } from './stage.js';
import { tokenHash } from './stage.js';

const NAME = /^[A-Za-z0-9_-]{1,90}$/;
const taskBody = z.object({
  data: z.object({
    type: z.literal('tasks'),
    attributes: z.object({
      name: z.string().regex(NAME, 'letters, digits, - and _ only (at most 90)'),
      url: z.url({ protocol: /^https?$/ }).describe('where Keel POSTs the task payload'),
      description: z.string().max(512).nullable().optional(),
      'hmac-key': z
        .string()
        .min(1)
        .max(1024)
        .nullable()
        .optional()
        .describe('signs each request (X-TFC-Task-Signature)'),
      category: z.literal('task').optional(),
    }),
  }),
});
const attachBody = z.object({
  data: z.object({
    type: z.literal('workspace-tasks'),
    attributes: z.object({
      'enforcement-level': z.enum(['advisory', 'mandatory']),
      stage: z
        .enum(['pre_plan', 'post_plan'])
        .optional()
        .describe('when the task runs (default post_plan)'),
    }),
    relationships: z.object({
      task: z.object({ data: z.object({ id: z.string(), type: z.literal('tasks') }) }),
    }),
  }),
});

const presentTask = (t: RunTaskRow) => ({
  id: t.id,
  type: 'tasks',
  attributes: {
    name: t.name,
    url: t.url,
    description: t.description,
    category: 'task',
    enabled: true,
    'hmac-key': null,
    'created-at': t.createdAt,
  },
  relationships: { organization: { data: { id: t.organization, type: 'organizations' } } },
  links: { self: `${API}/tasks/${t.id}` },
});

const presentAttached = (w: WorkspaceTaskRow) => ({
  id: w.id,
  type: 'workspace-tasks',
  attributes: { 'enforcement-level': w.enforcement, stage: w.stage },
  relationships: {
    task: { data: { id: w.taskId, type: 'tasks' } },
    workspace: { data: { id: w.workspaceId, type: 'workspaces' } },
  },
  links: { self: `${API}/workspaces/${w.workspaceId}/tasks/${w.id}` },
});

/** The `task-stages` resource with its results inline (as `task-results` with attributes). */
export const presentStage = (s: TaskStageRow) => ({
  id: s.id,
  type: 'task-stages',
  attributes: {
    stage: s.stage,
    status: s.status,
    'status-timestamps': {
      'running-at': s.createdAt,
      ...(s.status === 'running' ? {} : { [`${s.status}-at`]: s.updatedAt }),
    },
    'created-at': s.createdAt,
    'updated-at': s.updatedAt,
  },
  relationships: {
    run: { data: { id: s.runId, type: 'runs' } },
    'task-results': { data: s.results.map((r) => ({ id: r.id, type: 'task-results' })) },
  },
  included: s.results.map((r) => ({
    id: r.id,
    type: 'task-results',
    attributes: {
      message: r.message,
      status: r.status,
      url: r.resultUrl,
      'task-id': r.taskId,
      'task-name': r.taskName,
      'task-url': r.url,
      'workspace-task-enforcement-level': r.enforcement,
      stage: s.stage,
      'updated-at': r.updatedAt,
    },
  })),
  links: { self: `${API}/task-stages/${s.id}` },
});

export function runTaskRoutes(
  router: Router,
  core: Core,
  runs: RunsContext,
  queries: RunTaskQueries,
): void {
  const { model } = runs;
  const owned = (ctx: Context, name: string) => {
    const org = model.organization(ctx, name);
    if (!model.orgs.owns(model.principal(ctx), org.name))
      throw new NotFoundError(`organization ${name} not found`);
    return org;
  };

  router.post('/organizations/:org/tasks', async (ctx) => {
    const org = owned(ctx, ctx.params.org ?? '');
    const a = validate(taskBody, ctx.request.body).data.attributes;
    const unique = () => {
      if (queries.tasks(org.name).some((t) => t.name === a.name)) {
        throw new ValidationError(`/data/attributes/name: ${a.name} has already been taken`, {
          title: 'invalid attribute',
        });
      }
    };
    unique();
    const id = core.ids.id('task');
    const key = a['hmac-key'] ?? null;
    const hmacKey = key === null ? null : core.sealer.seal(key);
    // The name is checked again where the command is decided: another request may have taken it.
    await core.handler.handle(
      id,
      { initialState: () => null, evolve: () => null },
      () => {
        unique();
        return [
          {
            type: 'RunTaskCreated',
            data: {
              id,
              organization: org.name,
              name: a.name,
              url: a.url,
              description: a.description ?? null,
              hmacKey,
            },
          },
        ];
      },
      model.metadata(ctx),
    );
    send(ctx, 201, { data: presentTask(queries.task(id) as RunTaskRow) });
  });
  organizationReadRoutes(router, model, {
    path: 'tasks',
    noun: 'task',
    list: (organization) => queries.tasks(organization),
    one: (id) => queries.task(id),
    present: presentTask,
  });

  router.post('/workspaces/:id/tasks', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id ?? '');
    if (!access.runTasks) throw new NotFoundError(`workspace ${ws.id} not found`);
    const d = validate(attachBody, ctx.request.body).data;
    const task = queries.task(d.relationships.task.data.id);
    if (task?.organization !== ws.organization) {
      throw new ValidationError(
        `/data/relationships/task: task ${d.relationships.task.data.id} not found in ${ws.organization}`,
        { title: 'invalid attribute' },
      );
    }
    const id = core.ids.id('wstask');
    const data: WorkspaceTaskRow = {
      id,
      workspaceId: ws.id,
      taskId: task.id,
      stage: d.attributes.stage ?? 'post_plan',
      enforcement: d.attributes['enforcement-level'],
    };
    await core.handler.handle(
      id,
      { initialState: () => null, evolve: () => null },
      () => [{ type: 'WorkspaceTaskAttached', data }],
      model.metadata(ctx),
    );
    send(ctx, 201, { data: presentAttached(data) });
  });
  router.get('/workspaces/:id/tasks', (ctx) => {
    const { ws } = model.workspace(ctx, ctx.params.id ?? '');
    send(ctx, 200, { data: queries.attached(ws.id).map(presentAttached) });
  });

  router.get('/runs/:id/task-stages', (ctx) => {
    const { run } = model.run(ctx, ctx.params.id ?? '');
    send(ctx, 200, { data: queries.stagesOfRun(run.id).map(presentStage) });
  });
  router.get('/task-stages/:id', (ctx) => {
    const stage = queries.stage(ctx.params.id ?? '');
    if (stage === null) throw new NotFoundError(`task stage ${ctx.params.id ?? ''} not found`);
    model.run(ctx, stage.runId);
    send(ctx, 200, { data: presentStage(stage) });
  });
}

/**
 * `PATCH /task-results/:id/callback`: the task reports, authenticated by the access token it was
 * sent (not a user token), so this route is public and parses its own body.
 */
export function taskCallbackRoutes(
  router: Router,
  core: Core,
  queries: RunTaskQueries,
  stages: TaskStages,
): void {
  router.patch('/task-results/:id/callback', async (ctx) => {
    const id = ctx.params.id ?? '';
    const stage = queries.stageOfResult(id);
    const result = stage?.results.find((r) => r.id === id);
    const token = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
    if (token === undefined)
      throw new KeelError('unauthenticated', 'missing bearer token', { title: 'unauthorized' });
    if (!stage || !result || !callbackTokenMatches(tokenHash(token), result.tokenHash)) {
      throw new NotFoundError(`task result ${id} not found`);
    }
    const raw = await readRawBody(ctx, core.config.bodyLimitBytes);
    const callback = parseTaskCallback(parseBody(raw, ctx.get('content-type'), 'jsonapi'));
    if (result.status !== 'running') {
      throw new ConflictError(`task result ${id} is already ${result.status}`, {
        title: 'transition not allowed',
      });
    }
    await stages.update(stage.id, stage.runId, id, callback.status, callback.message, callback.url);
    ctx.status = 200;
    ctx.body = '';
  });
}
