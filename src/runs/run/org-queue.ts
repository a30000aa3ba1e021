import type Router from '@koa/router';
import { pageOf, paginate, send } from '../jsonapi.js';
import type { RunsModel } from '../model.js';
import { presentRun } from './presenters.js';
import type { RunRecords } from './routes.js';

/**
 * The organization's run queue as the terraform CLI reads it while its run waits: the runs
 * waiting for the executor, oldest first, each with `position-in-queue` (how many queued runs of
 * the organization are ahead of it), and the organization's capacity (queued and running counts).
 */
export function organizationQueueRoutes(
  router: Router,
  model: RunsModel,
  records: Pick<RunRecords, 'costEstimate'>,
): void {
  const { clock } = model.core;

  router.get('/organizations/:org/runs/queue', (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    const principal = model.principal(ctx);
    const now = clock.now();
    const page = pageOf(ctx);
    const queue = model.runs.organizationQueue(org.name).map((run, position) => ({
      run,
      position,
      access: model.orgs.accessTo(principal, { id: run.workspaceId, organization: org.name }),
    }));
    const visible = queue.filter((q) => q.access.read);
    const start = (page.number - 1) * page.size;
    const data = visible.slice(start, start + page.size).map(({ run, position, access }) => {
      const resource = presentRun(run, access, now, {
        costEstimateId: records.costEstimate(run.id)?.id ?? null,
      });
      return { ...resource, attributes: { ...resource.attributes, 'position-in-queue': position } };
    });
    send(ctx, 200, { data, ...paginate(ctx, page, { total: visible.length }) });
  });

  router.get('/organizations/:org/capacity', (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    send(ctx, 200, {
      data: {
        id: org.name,
        type: 'organization-capacity',
        attributes: {
          pending: model.runs.organizationQueue(org.name).length,
          running: model.runs.runningIn(org.name),
        },
      },
    });
  });
}
