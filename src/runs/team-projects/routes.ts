import type { RouterContext } from '@koa/router';
import type Router from '@koa/router';
import { z } from 'zod';
import type { Decider } from '../../core/command-handler.js';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import { API, queryValue, send, toOne, type Resource } from '../jsonapi.js';
import type { RunsModel } from '../model.js';
import { validate } from '../run/schema.js';
import { PROJECT_LEVELS, type TeamProjectEvent, type TeamProjectRow } from './projection.js';

/**
 * `/team-projects`: a team's access to every workspace of a project. Organization owners manage
 * the grants. The `custom` level is refused by name.
 */

const existence: Decider<{ exists: boolean }, TeamProjectEvent> = {
  initialState: () => ({ exists: false }),
  evolve: (s, e) =>
    e.type === 'TeamProjectAccessGranted'
      ? { exists: true }
      : e.type === 'TeamProjectAccessRevoked'
        ? { exists: false }
        : s,
};

const access = z.string().transform((level, ctx) => {
  if ((PROJECT_LEVELS as readonly string[]).includes(level))
    return level as (typeof PROJECT_LEVELS)[number];
  ctx.addIssue({
    code: 'custom',
    message:
      level === 'custom'
        ? 'custom project access is not available in Keel; one of read, write, maintain, admin'
        : `one of ${PROJECT_LEVELS.join(', ')}`,
  });
  return z.NEVER;
});
const grantBody = z.object({
  data: z.object({
    type: z.literal('team-projects').optional(),
    attributes: z.object({ access }).strict(),
    relationships: z.object({
      team: z.object({ data: z.object({ id: z.string() }) }),
      project: z.object({ data: z.object({ id: z.string() }) }),
    }),
  }),
});
const changeBody = z.object({
  data: z.object({ attributes: z.object({ access }).strict() }),
});

export function teamProjectRoutes(router: Router, model: RunsModel): void {
  const { handler, ids } = model.core;
  const present = (g: TeamProjectRow): Resource => ({
    id: g.id,
    type: 'team-projects',
    attributes: { access: g.access },
    relationships: { team: toOne('teams', g.teamId), project: toOne('projects', g.projectId) },
    links: { self: `${API}/team-projects/${g.id}` },
  });
  /** A project of an organization the caller owns; otherwise not found. */
  const ownedProject = (ctx: RouterContext, id: string) => {
    const p = model.projects.get(id);
    if (p === null || !model.orgs.owns(model.principal(ctx), p.organization))
      throw new NotFoundError(`project ${id} not found`);
    return p;
  };
  const grant = (ctx: RouterContext) => {
    const g = model.orgs.teamProject(ctx.params.id!);
    if (g === null) throw new NotFoundError(`team project access ${ctx.params.id} not found`);
    ownedProject(ctx, g.projectId);
    return g;
  };

  router.post('/team-projects', async (ctx) => {
    const d = validate(grantBody, ctx.request.body).data;
    const p = ownedProject(ctx, d.relationships.project.data.id);
    const team = model.orgs.team(d.relationships.team.data.id);
    if (team === null || team.organization !== p.organization)
      throw new NotFoundError(`team ${d.relationships.team.data.id} not found`);
    const once = () => {
      if (model.orgs.teamProjectsOn(p.id).some((g) => g.teamId === team.id))
        throw new ConflictError(`team ${team.id} already has access to project ${p.id}`, {
          status: 422,
          title: 'invalid attribute',
        });
    };
    once();
    const id = ids.id('tprj');
    await handler.handle(
      id,
      existence,
      (): TeamProjectEvent[] => {
        once();
        return [
          {
            type: 'TeamProjectAccessGranted',
            data: { id, teamId: team.id, projectId: p.id, access: d.attributes.access },
          },
        ];
      },
      model.metadata(ctx),
    );
    send(ctx, 201, { data: present(model.orgs.teamProject(id)!) });
  });

  router.get('/team-projects', (ctx) => {
    const projectId = queryValue(ctx, 'filter[project][id]');
    if (projectId === undefined)
      throw new ValidationError('filter[project][id] is required', { status: 400 });
    const p = ownedProject(ctx, projectId);
    send(ctx, 200, { data: model.orgs.teamProjectsOn(p.id).map(present) });
  });

  router.get('/team-projects/:id', (ctx) => send(ctx, 200, { data: present(grant(ctx)) }));

  router.patch('/team-projects/:id', async (ctx) => {
    const g = grant(ctx);
    const level = validate(changeBody, ctx.request.body).data.attributes.access;
    await handler.handle(
      g.id,
      existence,
      (): TeamProjectEvent[] =>
        level === g.access
          ? []
          : [{ type: 'TeamProjectAccessChanged', data: { id: g.id, access: level } }],
      model.metadata(ctx),
    );
    send(ctx, 200, { data: present(model.orgs.teamProject(g.id)!) });
  });

  router.delete('/team-projects/:id', async (ctx) => {
    const g = grant(ctx);
    await handler.handle(
      g.id,
      existence,
      (s): TeamProjectEvent[] =>
        s.exists ? [{ type: 'TeamProjectAccessRevoked', data: { id: g.id } }] : [],
      model.metadata(ctx),
    );
    ctx.status = 204;
  });
}
