import type Router from '@koa/router';
import { z } from 'zod';
import { API, send, type Resource } from '../jsonapi.js';
import type { RunCommented } from '../events.js';
import type { RunsModel } from '../model.js';
import { commentOnRun, runDecider } from './commands.js';
import { requesterOf } from './service.js';
import { validate } from './schema.js';

/**
 * Comments on a run, and the run's other related lists. Comments live in the run's own stream and
 * are read from the run history read model; policy checks and task stages are recorded by the executor's
 * policy and run-task stages, and a run without those stages has none.
 */

const commentBody = z.object({
  data: z.object({
    type: z.literal('comments').optional(),
    attributes: z.object({ body: z.string().min(1) }),
  }),
});

function presentComment(runId: string, c: RunCommented['data'], createdAt: string): Resource {
  return {
    id: c.id,
    type: 'comments',
    attributes: { body: c.body, 'created-at': createdAt },
    relationships: {
      run: { data: { type: 'runs', id: runId } },
      author: { data: c.by?.kind === 'user' ? { type: 'users', id: c.by.id } : null },
    },
    links: { self: `${API}/comments/${c.id}` },
  };
}

export function commentRoutes(router: Router, model: RunsModel): void {
  router.get('/runs/:id/comments', (ctx) => {
    const { run } = model.run(ctx, ctx.params.id!);
    const comments = model.history
      .comments(run.id)
      .map((c) => presentComment(run.id, c.data, c.createdAt));
    send(ctx, 200, { data: comments });
  });

  router.post('/runs/:id/comments', async (ctx) => {
    const principal = model.userOrTeam(ctx, 'commenting on a run');
    const { run } = model.run(ctx, ctx.params.id!);
    const { body } = validate(commentBody, ctx.request.body).data.attributes;
    const comment = { id: model.core.ids.id('wsc'), body, by: requesterOf(principal) };
    const { events } = await model.core.handler.handle(
      run.id,
      runDecider,
      commentOnRun(run.id, comment),
      model.metadata(ctx),
    );
    send(ctx, 201, {
      data: presentComment(
        run.id,
        comment,
        events[0]?.time ?? model.core.clock.now().toISOString(),
      ),
    });
  });

  for (const list of ['policy-checks', 'task-stages', 'workspace-run-alerts']) {
    router.get(`/runs/:id/${list}`, (ctx) => {
      model.run(ctx, ctx.params.id!);
      send(ctx, 200, { data: [] });
    });
  }
}
