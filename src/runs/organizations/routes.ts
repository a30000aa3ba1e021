import type { RouterContext } from '@koa/router';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Decider } from '../../core/command-handler.js';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import { createIdentityCommands } from '../identity/commands.js';
import {
  organizationStream,
  type CustomPermissions,
  type OrganizationEvent,
  type TeamAccessLevel,
} from '../events.js';
import { customPermissions } from './projection.js';
import { pageOf, paginate, queryValue, send } from '../jsonapi.js';
import { need, type RunsModel } from '../model.js';
import { validate } from '../run/schema.js';
import {
  presentEntitlements,
  presentOrganization,
  presentTeam,
  presentTeamAccess,
  presentToken,
} from './presenters.js';

/** Organizations, teams, team and organization tokens, and team access on workspaces. */

/** Streams of organizations, teams and grants only need to know whether they exist. */
const existence: Decider<{ exists: boolean }, OrganizationEvent> = {
  initialState: () => ({ exists: false }),
  evolve: (s, e) =>
    e.type === 'OrganizationCreated' || e.type === 'TeamCreated' || e.type === 'TeamAccessGranted'
      ? { exists: true }
      : e.type === 'TeamAccessRevoked'
        ? { exists: false }
        : s,
};

const NAME = /^[A-Za-z0-9_-]{1,90}$/;
const LEVELS = [
  'read',
  'plan',
  'write',
  'admin',
  'custom',
] as const satisfies readonly TeamAccessLevel[];

/** The access attributes of a team-workspaces body: a level and, with `custom`, its permissions. */
const accessAttributes = z
  .object({
    access: z.enum(LEVELS),
    runs: z.enum(['read', 'plan', 'apply']).optional(),
    variables: z.enum(['none', 'read', 'write']).optional(),
    'state-versions': z.enum(['none', 'read-outputs', 'read', 'write']).optional(),
    'sentinel-mocks': z.enum(['none', 'read']).optional(),
    'workspace-locking': z.boolean().optional(),
    'run-tasks': z.boolean().optional(),
  })
  .strict();
type AccessAttributes = z.infer<typeof accessAttributes>;
const PERMISSIONS = [
  'runs',
  'variables',
  'state-versions',
  'sentinel-mocks',
  'workspace-locking',
  'run-tasks',
] as const;

/** The level and custom permissions a body asks for; permissions with a fixed level are refused. */
function accessOf(
  a: AccessAttributes,
  before: CustomPermissions | null,
): { access: TeamAccessLevel; custom?: CustomPermissions } {
  if (a.access !== 'custom') {
    const named = PERMISSIONS.find((k) => a[k] !== undefined);
    if (named !== undefined)
      throw new ValidationError(
        `/data/attributes/${named}: permissions are set only with access custom`,
        { title: 'invalid attribute' },
      );
    return { access: a.access };
  }
  return { access: 'custom', custom: customPermissions(a, before) };
}

const orgBody = z.object({
  data: z.object({
    type: z.literal('organizations').optional(),
    attributes: z.object({ name: z.string().regex(NAME), email: z.string().email() }),
  }),
});
const orgUpdateBody = z.object({
  data: z.object({
    type: z.literal('organizations').optional(),
    attributes: z.object({ 'cost-estimation-enabled': z.boolean().optional() }).strict(),
  }),
});
const teamBody = z.object({
  data: z.object({
    type: z.literal('teams').optional(),
    attributes: z.object({ name: z.string().regex(NAME) }),
  }),
});
const membersBody = z.object({
  data: z.array(z.object({ type: z.literal('users').optional(), id: z.string().min(1) })),
});
const tokenBody = z
  .object({
    data: z
      .object({
        attributes: z
          .object({
            description: z.string().optional(),
            'expired-at': z.iso.datetime().nullable().optional(),
          })
          .optional(),
      })
      .optional(),
  })
  .optional();
const grantBody = z.object({
  data: z.object({
    type: z.literal('team-workspaces').optional(),
    attributes: accessAttributes,
    relationships: z.object({
      team: z.object({ data: z.object({ id: z.string() }) }),
      workspace: z.object({ data: z.object({ id: z.string() }) }),
    }),
  }),
});
const changeBody = z.object({
  data: z.object({ attributes: accessAttributes }),
});

export function organizationRoutes(router: Router, model: RunsModel): void {
  const { handler, ids } = model.core;
  const identity = createIdentityCommands(model.core, model.identity);

  const owned = (ctx: Context, name: string) => {
    const org = model.organization(ctx, name);
    need(model.orgs.owns(model.principal(ctx), org.name), `managing organization ${org.name}`);
    return org;
  };
  const team = (ctx: Context, id: string) => {
    const t = model.orgs.team(id);
    if (t === null || !model.orgs.belongs(model.principal(ctx), t.organization))
      throw new NotFoundError(`team ${id} not found`);
    return t;
  };

  router.post('/organizations', async (ctx) => {
    const p = model.principal(ctx);
    if (p.kind !== 'user') throw new NotFoundError('creating an organization needs a user token');
    const a = validate(orgBody, ctx.request.body).data.attributes;
    const unique = () => {
      if (model.orgs.organization(a.name) !== null)
        throw new ConflictError(`name ${a.name} has already been taken`, {
          status: 422,
          title: 'invalid attribute',
        });
    };
    unique();
    const ownersTeamId = ids.id('team');
    const meta = model.metadata(ctx);
    await handler.atomically(() => {
      // Again where it is decided: another request may have taken the name meanwhile.
      unique();
      handler.handleSync(
        organizationStream(a.name),
        existence,
        (): OrganizationEvent[] => [
          {
            type: 'OrganizationCreated',
            data: { name: a.name, email: a.email, ownersTeamId, createdBy: p.id },
          },
        ],
        meta,
      );
      handler.handleSync(
        ownersTeamId,
        existence,
        (): OrganizationEvent[] => [
          {
            type: 'TeamCreated',
            data: { id: ownersTeamId, organization: a.name, name: 'owners', owners: true },
          },
          { type: 'TeamMemberAdded', data: { teamId: ownersTeamId, userId: p.id } },
        ],
        meta,
      );
    });
    send(ctx, 201, { data: presentOrganization(model.orgs.organization(a.name)!, true) });
  });

  router.get('/organizations', (ctx) => {
    const p = model.principal(ctx);
    const page = pageOf(ctx);
    const mine = model.orgs.organizations().filter((o) => model.orgs.belongs(p, o.name));
    const rows = mine.slice((page.number - 1) * page.size, page.number * page.size);
    send(ctx, 200, {
      data: rows.map((o) => presentOrganization(o, model.orgs.owns(p, o.name))),
      ...paginate(ctx, page, { total: mine.length }),
    });
  });

  router.get('/organizations/:org', (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    send(ctx, 200, {
      data: presentOrganization(org, model.orgs.owns(model.principal(ctx), org.name)),
    });
  });

  router.patch('/organizations/:org', async (ctx) => {
    const org = owned(ctx, ctx.params.org!);
    const a = validate(orgUpdateBody, ctx.request.body).data.attributes;
    const enabled = a['cost-estimation-enabled'];
    if (enabled !== undefined && enabled !== org.costEstimationEnabled) {
      await handler.handle(
        organizationStream(org.name),
        existence,
        (): OrganizationEvent[] => [
          { type: 'OrganizationUpdated', data: { name: org.name, costEstimationEnabled: enabled } },
        ],
        model.metadata(ctx),
      );
    }
    send(ctx, 200, { data: presentOrganization(model.orgs.organization(org.name)!, true) });
  });

  router.get('/organizations/:org/entitlement-set', (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    send(ctx, 200, { data: presentEntitlements(org.name) });
  });

  /** Team and organization tokens: the same body and answer, another owner. */
  const createOwnedToken = async (
    ctx: RouterContext,
    owner: {
      kind: 'team' | 'organization';
      ownerId: string;
      ownerName: string;
      organization: string;
    },
  ) => {
    const a = validate(tokenBody, ctx.request.body)?.data?.attributes ?? {};
    const { token, data } = await identity.replaceToken(
      {
        ...owner,
        description: a.description ?? null,
        expiredAt: a['expired-at'] ?? null,
        createdBy: model.principal(ctx).id,
      },
      model.metadata(ctx),
    );
    send(ctx, 201, { data: presentToken(data, token, model.core.clock.now().toISOString()) });
  };

  router.post('/organizations/:org/authentication-token', async (ctx) => {
    const org = owned(ctx, ctx.params.org!);
    await createOwnedToken(ctx, {
      kind: 'organization',
      ownerId: org.name,
      ownerName: org.name,
      organization: org.name,
    });
  });

  router.post('/organizations/:org/teams', async (ctx) => {
    const org = owned(ctx, ctx.params.org!);
    const { name } = validate(teamBody, ctx.request.body).data.attributes;
    const unique = () => {
      if (model.orgs.teamByName(org.name, name) !== null)
        throw new ConflictError(`team ${name} already exists in ${org.name}`, {
          status: 422,
          title: 'invalid attribute',
        });
    };
    unique();
    const id = ids.id('team');
    await handler.handle(
      id,
      existence,
      (): OrganizationEvent[] => {
        unique();
        return [{ type: 'TeamCreated', data: { id, organization: org.name, name, owners: false } }];
      },
      model.metadata(ctx),
    );
    send(ctx, 201, { data: presentTeam(model.orgs.team(id)!, []) });
  });

  router.get('/organizations/:org/teams', (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    const page = pageOf(ctx);
    const all = model.orgs.teams(org.name);
    const rows = all.slice((page.number - 1) * page.size, page.number * page.size);
    send(ctx, 200, {
      data: rows.map((t) => presentTeam(t, model.orgs.members(t.id))),
      ...paginate(ctx, page, { total: all.length }),
    });
  });

  router.get('/teams/:id', (ctx) => {
    const t = team(ctx, ctx.params.id!);
    send(ctx, 200, { data: presentTeam(t, model.orgs.members(t.id)) });
  });

  router.post('/teams/:id/relationships/users', async (ctx) => {
    const t = team(ctx, ctx.params.id!);
    owned(ctx, t.organization);
    const users = validate(membersBody, ctx.request.body).data;
    for (const u of users) {
      if (model.identity.user(u.id) === undefined)
        throw new NotFoundError(`user ${u.id} not found`);
    }
    await handler.handle(
      t.id,
      existence,
      () =>
        users.map((u) => ({
          type: 'TeamMemberAdded' as const,
          data: { teamId: t.id, userId: u.id },
        })),
      model.metadata(ctx),
    );
    ctx.status = 204;
  });

  router.post('/teams/:id/authentication-token', async (ctx) => {
    const t = team(ctx, ctx.params.id!);
    owned(ctx, t.organization);
    await createOwnedToken(ctx, {
      kind: 'team',
      ownerId: t.id,
      ownerName: t.name,
      organization: t.organization,
    });
  });

  const grant = (ctx: Context, id: string) => {
    const g = model.orgs.teamAccess(id);
    if (g === null) throw new NotFoundError(`team access ${id} not found`);
    const { ws, access } = model.workspace(ctx, g.workspaceId);
    return { g, ws, access };
  };

  router.post('/team-workspaces', async (ctx) => {
    const d = validate(grantBody, ctx.request.body).data;
    const { ws, access } = model.workspace(ctx, d.relationships.workspace.data.id);
    need(access.admin, `granting access to workspace ${ws.id}`);
    const t = model.orgs.team(d.relationships.team.data.id);
    if (t === null || t.organization !== ws.organization)
      throw new NotFoundError(`team ${d.relationships.team.data.id} not found`);
    const once = () => {
      if (model.orgs.teamAccessOn(ws.id).some((g) => g.teamId === t.id))
        throw new ConflictError(`team ${t.id} already has access to workspace ${ws.id}`, {
          status: 422,
          title: 'invalid attribute',
        });
    };
    once();
    const id = ids.id('tws');
    await handler.handle(
      id,
      existence,
      (): OrganizationEvent[] => {
        once();
        return [
          {
            type: 'TeamAccessGranted',
            data: { id, teamId: t.id, workspaceId: ws.id, ...accessOf(d.attributes, null) },
          },
        ];
      },
      model.metadata(ctx),
    );
    send(ctx, 201, { data: presentTeamAccess(model.orgs.teamAccess(id)!) });
  });

  router.get('/team-workspaces', (ctx) => {
    const wsId = queryValue(ctx, 'filter[workspace][id]');
    if (wsId === undefined) throw new NotFoundError('filter[workspace][id] is required');
    const { ws } = model.workspace(ctx, wsId);
    const page = pageOf(ctx);
    const all = model.orgs.teamAccessOn(ws.id);
    const rows = all.slice((page.number - 1) * page.size, page.number * page.size);
    send(ctx, 200, {
      data: rows.map(presentTeamAccess),
      ...paginate(ctx, page, { total: all.length }),
    });
  });

  router.get('/team-workspaces/:id', (ctx) =>
    send(ctx, 200, { data: presentTeamAccess(grant(ctx, ctx.params.id!).g) }),
  );

  router.patch('/team-workspaces/:id', async (ctx) => {
    const { g, access } = grant(ctx, ctx.params.id!);
    need(access.admin, `changing team access ${g.id}`);
    const a = validate(changeBody, ctx.request.body).data.attributes;
    const level = accessOf(a, g.access === 'custom' ? g.custom : null);
    await handler.handle(
      g.id,
      existence,
      (): OrganizationEvent[] => [{ type: 'TeamAccessChanged', data: { id: g.id, ...level } }],
      model.metadata(ctx),
    );
    send(ctx, 200, { data: presentTeamAccess(model.orgs.teamAccess(g.id)!) });
  });

  router.delete('/team-workspaces/:id', async (ctx) => {
    const { g, access } = grant(ctx, ctx.params.id!);
    need(access.admin, `removing team access ${g.id}`);
    await handler.handle(
      g.id,
      existence,
      (): OrganizationEvent[] => [{ type: 'TeamAccessRevoked', data: { id: g.id } }],
      model.metadata(ctx),
    );
    ctx.status = 204;
  });
}
