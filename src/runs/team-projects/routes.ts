import type { RouterContext } from '@koa/router';
import type Router from '@koa/router';
import { z } from 'zod';
import type { Decider } from '../../core/command-handler.js';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import { API, queryValue, send, toOne, type Resource } from '../jsonapi.js';
import type { RunsModel } from '../model.js';
import { validate } from '../run/schema.js';
import type { CustomPermissions } from '../events.js';
import { CUSTOM_DEFAULTS, customPermissions } from '../organizations/projection.js';
import {
  PROJECT_LEVELS,
  type ProjectAccessLevel,
  type TeamProjectEvent,
  type TeamProjectRow,
} from './projection.js';

/**
 * `/team-projects`: a team's access to every workspace of a project. Organization owners manage
 * the grants. A `custom` grant sets the workspace permissions of team access `custom` on every
 * workspace of the project; its project permissions stay the reference's defaults.
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

const access = z.enum(PROJECT_LEVELS);
/**
 * A `custom` grant's project permissions: Keel lets only organization owners change, delete or
 * manage a project, its teams and its variable sets, so only the reference's defaults (read the
 * project, nothing else) are accepted; anything more is refused by name.
 */
const ownersOnly = <T extends string>(allowed: T, values: readonly [T, ...T[]]) =>
  z.enum(values).refine((v) => v === allowed, {
    message: `only ${allowed} is available in Keel: organization owners manage projects`,
  });
const projectAccess = z
  .object({
    settings: ownersOnly('read', ['read', 'update', 'delete']).optional(),
    teams: ownersOnly('none', ['none', 'read', 'manage']).optional(),
    'variable-sets': ownersOnly('none', ['none', 'read', 'write']).optional(),
  })
  .strict();
const ownersAction = z.boolean().refine((v) => !v, {
  message: 'only organization owners create, move and delete workspaces in Keel',
});
const workspaceAccess = z
  .object({
    create: ownersAction.optional(),
    move: ownersAction.optional(),
    delete: ownersAction.optional(),
    locking: z.boolean().optional(),
    runs: z.enum(['read', 'plan', 'apply']).optional(),
    variables: z.enum(['none', 'read', 'write']).optional(),
    'state-versions': z.enum(['none', 'read-outputs', 'read', 'write']).optional(),
    'sentinel-mocks': z.enum(['none', 'read']).optional(),
    'run-tasks': z.boolean().optional(),
  })
  .strict();
const accessAttributes = z
  .object({
    access,
    'project-access': projectAccess.optional(),
    'workspace-access': workspaceAccess.optional(),
  })
  .strict();

/** The level and, with `custom`, the workspace permissions a body asks for. */
function accessOf(
  a: z.infer<typeof accessAttributes>,
  before: CustomPermissions | null,
): { access: ProjectAccessLevel; custom?: CustomPermissions } {
  if (a.access !== 'custom') {
    if (a['project-access'] !== undefined || a['workspace-access'] !== undefined)
      throw new ValidationError(
        `/data/attributes/${a['project-access'] !== undefined ? 'project-access' : 'workspace-access'}: permissions are set only with access custom`,
        { title: 'invalid attribute' },
      );
    return { access: a.access };
  }
  const w = a['workspace-access'] ?? {};
  // The same permissions as team access custom's; workspace-locking is called locking here.
  return {
    access: 'custom',
    custom: customPermissions({ ...w, 'workspace-locking': w.locking }, before),
  };
}

const grantBody = z.object({
  data: z.object({
    type: z.literal('team-projects').optional(),
    attributes: accessAttributes,
    relationships: z.object({
      team: z.object({ data: z.object({ id: z.string() }) }),
      project: z.object({ data: z.object({ id: z.string() }) }),
    }),
  }),
});
const changeBody = z.object({
  data: z.object({ attributes: accessAttributes }),
});

export function teamProjectRoutes(router: Router, model: RunsModel): void {
  const { handler, ids } = model.core;
  const present = (g: TeamProjectRow): Resource => ({
    id: g.id,
    type: 'team-projects',
    attributes: {
      access: g.access,
      ...(g.access === 'custom'
        ? {
            'project-access': { settings: 'read', teams: 'none', 'variable-sets': 'none' },
            'workspace-access': {
              create: false,
              move: false,
              delete: false,
              locking: (g.custom ?? CUSTOM_DEFAULTS).workspaceLocking,
              runs: (g.custom ?? CUSTOM_DEFAULTS).runs,
              variables: (g.custom ?? CUSTOM_DEFAULTS).variables,
              'state-versions': (g.custom ?? CUSTOM_DEFAULTS).stateVersions,
              'sentinel-mocks': (g.custom ?? CUSTOM_DEFAULTS).sentinelMocks,
              'run-tasks': (g.custom ?? CUSTOM_DEFAULTS).runTasks,
            },
          }
        : {}),
    },
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
    const level = accessOf(d.attributes, null);
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
            data: { id, teamId: team.id, projectId: p.id, ...level },
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
    const a = validate(changeBody, ctx.request.body).data.attributes;
    const level = accessOf(a, g.access === 'custom' ? g.custom : null);
    const same =
      level.access === g.access &&
      JSON.stringify(level.custom ?? null) === JSON.stringify(g.custom ?? null);
    await handler.handle(
      g.id,
      existence,
      (): TeamProjectEvent[] =>
        same ? [] : [{ type: 'TeamProjectAccessChanged', data: { id: g.id, ...level } }],
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
