import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { presentConfigurationVersion } from '../configuration-versions/presenters.js';
import { includesOf, pageOf, paginate, send, type Resource } from '../jsonapi.js';
import type { WorkspaceAccess } from '../lifecycle.js';
import { need, type RunsModel } from '../model.js';
import { presentUser } from '../organizations/presenters.js';
import { presentWorkspace } from '../workspaces/presenters.js';
import {
  confirmRun,
  discardRun,
  forceCancel,
  requestCancel,
  runDecider,
  type Decide,
} from './commands.js';
import { runFilters } from './list-params.js';
import type { RunRow } from './projection.js';
import { presentPlan, presentRun, RUN_INCLUDES, type RunInclude } from './presenters.js';
import { actionBody, checkVariables, createRunBody, validate } from './schema.js';
import { forceExecute, newRun, requesterOf } from './service.js';
import { applyResource, logUrl } from './logs.js';
import { StateVersionQueries } from '../state-versions/projection.js';

/** What the executor records about a run, for its relationships and `include` (none without it). */
export interface RunRecords {
  /** A run's task stages as resources, for `include=task_stages`. */
  taskStages(runId: string): Resource[];
  /** A run's cost estimate as a resource, once it has one. */
  costEstimate(runId: string): Resource | null;
}

/** Run routes: create, show, the two lists and the five actions. */
export function runRoutes(
  router: Router,
  model: RunsModel,
  runListLimit: Middleware,
  records: RunRecords,
): void {
  const { handler, clock } = model.core;
  const states = new StateVersionQueries(model.core.db);

  /** The `included` resources a request asked for. */
  const included = (
    run: RunRow,
    include: Set<RunInclude>,
    access: WorkspaceAccess,
    estimate: Resource | null,
  ): Resource[] => {
    const out: Resource[] = [];
    for (const inc of include) {
      switch (inc) {
        case 'plan':
          out.push(presentPlan(run, logUrl(model, 'plan', run.id)));
          break;
        case 'apply':
          out.push(applyResource(model, states, run));
          break;
        case 'created_by': {
          const user =
            run.attrs.createdBy?.kind === 'user'
              ? model.identity.user(run.attrs.createdBy.id)
              : undefined;
          if (user !== undefined) out.push(presentUser(user));
          break;
        }
        case 'configuration_version': {
          const cv = model.cvs.get(run.attrs.configurationVersionId);
          if (cv !== null) out.push(presentConfigurationVersion(cv));
          break;
        }
        case 'workspace': {
          const ws = model.workspaces.get(run.workspaceId);
          if (ws !== null) out.push(presentWorkspace(ws, access, model.core.config));
          break;
        }
        case 'task_stages':
          out.push(...records.taskStages(run.id));
          break;
        case 'cost_estimate':
          if (estimate !== null) out.push(estimate);
          break;
        // Keel has no version-control ingress: nothing to include.
        case 'configuration_version.ingress_attributes':
          break;
        default: {
          const _never: never = inc;
          return _never;
        }
      }
    }
    return out;
  };

  const document = (
    ctx: Context,
    runs: RunRow[],
    access: (r: RunRow) => WorkspaceAccess,
    details: boolean,
  ) => {
    const include = includesOf(ctx, RUN_INCLUDES);
    const now = clock.now();
    // The estimate names the relationship and is what `include=cost_estimate` adds: read it once.
    const estimates = runs.map((r) => records.costEstimate(r.id));
    const data = runs.map((r, i) =>
      presentRun(r, access(r), now, { details, costEstimateId: estimates[i]?.id ?? null }),
    );
    const inc =
      include.size === 0
        ? []
        : runs.flatMap((r, i) => included(r, include, access(r), estimates[i] ?? null));
    const unique = [...new Map(inc.map((r) => [`${r.type}/${r.id}`, r])).values()];
    return { data, ...(include.size === 0 ? {} : { included: unique }) };
  };

  router.post('/runs', async (ctx) => {
    const principal = model.userOrTeam(ctx, 'creating a run');
    const body = validate(createRunBody, ctx.request.body);
    const { ws, access } = model.workspace(ctx, body.data.relationships.workspace.data.id);
    need(access.queuePlans, `queueing plans in workspace ${ws.id}`);
    const attributes = body.data.attributes ?? {};
    await checkVariables(attributes.variables ?? []);
    const created = await newRun(
      model,
      {
        ws,
        access,
        createdBy: requesterOf(principal),
        attributes,
        configurationVersionId: body.data.relationships['configuration-version']?.data?.id ?? null,
        source: 'engine-api',
      },
      model.metadata(ctx),
    );
    const run = model.runs.get(created.id)!;
    send(ctx, 201, { data: presentRun(run, access, clock.now(), { details: true }) });
  });

  router.get('/runs/:id', (ctx) => {
    const { run, access } = model.run(ctx, ctx.params.id!);
    const doc = document(ctx, [run], () => access, true);
    send(ctx, 200, { ...doc, data: doc.data[0] });
  });

  router.get('/workspaces/:id/runs', runListLimit, (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    const page = pageOf(ctx);
    const { rows, total } = model.runs.listInWorkspace(
      ws.id,
      runFilters(ctx, clock.now(), 'workspace'),
      page,
    );
    send(ctx, 200, {
      ...document(ctx, rows, () => access, false),
      ...paginate(ctx, page, { total }),
    });
  });

  router.get('/organizations/:org/runs', runListLimit, (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    const principal = model.principal(ctx);
    const page = pageOf(ctx);
    const filters = runFilters(ctx, clock.now(), 'organization');
    const ids =
      filters.workspaceNames === null
        ? null
        : model.workspaces.idsByNames(org.name, filters.workspaceNames);
    const { rows, hasNext } = model.runs.listInOrganization(org.name, ids, filters, page);
    // Access is per workspace; a caller sees the runs of the workspaces it can read.
    const accessOf = new Map<string, WorkspaceAccess>();
    const access = (r: RunRow) => {
      let a = accessOf.get(r.workspaceId);
      if (a === undefined) {
        a = model.orgs.accessTo(principal, { id: r.workspaceId, organization: r.organization });
        accessOf.set(r.workspaceId, a);
      }
      return a;
    };
    const visible = rows.filter((r) => access(r).read);
    send(ctx, 200, {
      ...document(ctx, visible, access, false),
      ...paginate(ctx, page, { hasNext }),
    });
  });

  /** The five actions: 202 and no body; the machine decides, the spec words the refusals. */
  const action = (
    path: string,
    run: (ctx: Context, r: RunRow, access: WorkspaceAccess) => Promise<void>,
  ) =>
    router.post(`/runs/:id/actions/${path}`, async (ctx) => {
      model.userOrTeam(ctx, `${path} on a run`);
      const { run: r, access } = model.run(ctx, ctx.params.id!);
      await run(ctx, r, access);
      ctx.body = null;
      ctx.status = 202; // after the body: an empty body would otherwise turn it into 204
    });

  /** An action the run machine decides: who may, and the command given the optional comment. */
  const decided = (
    path: string,
    permission: 'applyRuns' | 'admin',
    doing: string,
    decide: (id: string, comment: string | null) => Decide,
  ) =>
    action(path, async (ctx, r, access) => {
      need(access[permission], `${doing} run ${r.id}`);
      const comment = validate(actionBody, ctx.request.body);
      await handler.handle(r.id, runDecider, decide(r.id, comment), model.metadata(ctx));
    });

  decided('apply', 'applyRuns', 'applying', confirmRun);
  decided('discard', 'applyRuns', 'discarding', discardRun);
  decided('cancel', 'applyRuns', 'canceling', (id, comment) =>
    requestCancel(id, comment, clock.now(), model.core.config.forceCancelCooloffMs),
  );
  decided('force-cancel', 'admin', 'force-canceling', (id, comment) =>
    forceCancel(id, comment, clock.now()),
  );
  action('force-execute', async (ctx, r, access) => {
    need(access.applyRuns, `force-executing run ${r.id}`);
    await forceExecute(model, r, model.metadata(ctx));
  });
}
