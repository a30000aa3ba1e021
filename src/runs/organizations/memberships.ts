import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Decider } from '../../core/command-handler.js';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import type { OrganizationEvent } from '../events.js';
import { API, pageOf, paginate, queryValue, send, toOne, type Resource } from '../jsonapi.js';
import { need, type RunsModel } from '../model.js';
import { validate } from '../run/schema.js';
import { membershipId, type MembershipRow } from './projection.js';

/**
 * Organization memberships (`/organizations/:org/organization-memberships`,
 * `/organization-memberships/:id`): who belongs to an organization, and the way users join its
 * teams. Keel sends no email, so an invitation names an existing Keel user by email and is active
 * at once; there is no `invited` status to accept.
 */

/** A membership's stream: created by an invitation (or by joining a team), deleted by removal. */
const membership: Decider<{ exists: boolean }, OrganizationEvent> = {
  initialState: () => ({ exists: false }),
  evolve: (s, e) =>
    e.type === 'OrganizationMembershipCreated'
      ? { exists: true }
      : e.type === 'OrganizationMembershipDeleted'
        ? { exists: false }
        : s,
};

const teamsRelationship = z
  .object({
    data: z.array(z.object({ type: z.literal('teams').optional(), id: z.string().min(1) })),
  })
  .optional();
const inviteBody = z.object({
  data: z.object({
    type: z.literal('organization-memberships').optional(),
    attributes: z.object({ email: z.string().email() }).strict(),
    relationships: z.object({ teams: teamsRelationship }).optional(),
  }),
});
const joinBody = z.object({
  data: z.array(
    z.object({ type: z.literal('organization-memberships').optional(), id: z.string().min(1) }),
  ),
});

export function membershipRoutes(router: Router, model: RunsModel): void {
  const { handler } = model.core;

  const present = (m: MembershipRow): Resource => ({
    id: m.id,
    type: 'organization-memberships',
    attributes: {
      status: 'active',
      email: model.identity.user(m.userId)?.email ?? null,
      'created-at': m.createdAt,
    },
    relationships: {
      teams: {
        data: model.orgs.teamsOf(m.organization, m.userId).map((id) => ({ type: 'teams', id })),
      },
      user: toOne('users', m.userId),
      organization: toOne('organizations', m.organization),
    },
    links: { self: `${API}/organization-memberships/${m.id}` },
  });

  /** A membership of an organization the caller belongs to; otherwise not found. */
  const visible = (ctx: Context, id: string): MembershipRow => {
    const m = model.orgs.membership(id);
    if (m === null || !model.orgs.belongs(model.principal(ctx), m.organization))
      throw new NotFoundError(`organization membership ${id} not found`);
    return m;
  };

  /** Teams of the organization named in a body, each checked. */
  const teamsOf = (organization: string, refs: { id: string }[]): string[] =>
    refs.map(({ id }) => {
      const t = model.orgs.team(id);
      if (t === null || t.organization !== organization)
        throw new NotFoundError(`team ${id} not found`);
      return t.id;
    });

  router.post('/organizations/:org/organization-memberships', async (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    need(model.orgs.owns(model.principal(ctx), org.name), `inviting users to ${org.name}`);
    const d = validate(inviteBody, ctx.request.body).data;
    const user = model.identity.userByEmail(d.attributes.email);
    if (user === undefined)
      throw new ValidationError(
        `/data/attributes/email: no Keel user has the email ${d.attributes.email}; Keel sends no invitations, so create the user first`,
        { title: 'invalid attribute' },
      );
    const teamIds = teamsOf(org.name, d.relationships?.teams?.data ?? []);
    const id = membershipId(org.name, user.id);
    if (model.orgs.membership(id) !== null)
      throw new ConflictError(`${d.attributes.email} is already a member of ${org.name}`, {
        status: 422,
        title: 'invalid attribute',
      });
    await handler.handle(
      id,
      membership,
      (s): OrganizationEvent[] =>
        s.exists
          ? []
          : [
              {
                type: 'OrganizationMembershipCreated',
                data: { id, organization: org.name, userId: user.id, teamIds },
              },
            ],
      model.metadata(ctx),
    );
    send(ctx, 201, { data: present(model.orgs.membership(id)!) });
  });

  router.get('/organizations/:org/organization-memberships', (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    const email = queryValue(ctx, 'filter[email]')
      ?.split(',')
      .map((e) => e.toLowerCase());
    const status = queryValue(ctx, 'filter[status]');
    const q = queryValue(ctx, 'q')?.toLowerCase();
    const all = model.orgs.memberships({ organization: org.name }).filter((m) => {
      const user = model.identity.user(m.userId);
      if (email !== undefined && !email.includes(user?.email.toLowerCase() ?? '')) return false;
      if (status !== undefined && status !== 'active') return false;
      if (
        q !== undefined &&
        !(user?.email.toLowerCase().includes(q) ?? false) &&
        !(user?.username.toLowerCase().includes(q) ?? false)
      )
        return false;
      return true;
    });
    const page = pageOf(ctx);
    const rows = all.slice((page.number - 1) * page.size, page.number * page.size);
    send(ctx, 200, { data: rows.map(present), ...paginate(ctx, page, { total: all.length }) });
  });

  /** The caller's own memberships (user tokens). */
  router.get('/organization-memberships', (ctx) => {
    const p = model.principal(ctx);
    if (p.kind !== 'user')
      throw new NotFoundError('listing your organization memberships needs a user token');
    const all = model.orgs.memberships({ userId: p.id });
    const page = pageOf(ctx);
    const rows = all.slice((page.number - 1) * page.size, page.number * page.size);
    send(ctx, 200, { data: rows.map(present), ...paginate(ctx, page, { total: all.length }) });
  });

  router.get('/organization-memberships/:id', (ctx) =>
    send(ctx, 200, { data: present(visible(ctx, ctx.params.id!)) }),
  );

  router.delete('/organization-memberships/:id', async (ctx) => {
    const m = visible(ctx, ctx.params.id!);
    need(model.orgs.owns(model.principal(ctx), m.organization), `removing member ${m.id}`);
    const owners = model.orgs.organization(m.organization)?.ownersTeamId;
    if (owners !== undefined) {
      const left = model.orgs.members(owners).filter((u) => u !== m.userId);
      if (left.length === 0 && model.orgs.members(owners).includes(m.userId))
        throw new ConflictError(
          `the last member of the owners team cannot be removed from ${m.organization}`,
          { status: 422, title: 'invalid attribute' },
        );
    }
    await handler.handle(
      m.id,
      membership,
      (): OrganizationEvent[] => [
        {
          type: 'OrganizationMembershipDeleted',
          data: { id: m.id, organization: m.organization, userId: m.userId },
        },
      ],
      model.metadata(ctx),
    );
    ctx.status = 204;
  });

  /** Users join a team through their memberships (owners). */
  router.post('/teams/:id/relationships/organization-memberships', async (ctx) => {
    const t = model.orgs.team(ctx.params.id!);
    if (t === null || !model.orgs.belongs(model.principal(ctx), t.organization))
      throw new NotFoundError(`team ${ctx.params.id} not found`);
    need(model.orgs.owns(model.principal(ctx), t.organization), `managing team ${t.id}`);
    const users = validate(joinBody, ctx.request.body).data.map(({ id }) => {
      const m = model.orgs.membership(id);
      if (m === null || m.organization !== t.organization)
        throw new NotFoundError(`organization membership ${id} not found`);
      return m.userId;
    });
    await handler.handle(
      t.id,
      membership,
      (): OrganizationEvent[] =>
        users.map((userId) => ({ type: 'TeamMemberAdded', data: { teamId: t.id, userId } })),
      model.metadata(ctx),
    );
    ctx.status = 204;
  });
}
