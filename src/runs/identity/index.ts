import Router from '@koa/router';
import type { Context } from 'koa';
import { KeelError, NotFoundError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import { ReadMemo } from '../../core/read-memo.js';
import type { RunsPrincipal } from '../../http/types.js';
import type { ContextModule, Core } from '../../context.js';
import { createIdentityCommands } from './commands.js';
import { IDENTITY_PROJECTION_EVENTS, identityProjection, identityQueries } from './projection.js';
import type { AuthTokenRow, UserRow } from './projection.js';
import { OrganizationQueries } from '../organizations/projection.js';
import { requestMetadata } from '../../http/request-id.js';

export type { IdentityCommands } from './commands.js';
export type { IdentityQueries, UserRow, AuthTokenRow } from './projection.js';
export { identityProjection } from './projection.js';

/** Audit metadata for an `/api/v2` request. */
export function runsMetadata(ctx: Context): AuditMetadata {
  const p = ctx.state.principal;
  return requestMetadata(ctx, p === undefined ? null : { accessor: p.tokenId, name: p.name });
}

const userResource = (u: UserRow) => ({
  id: u.id,
  type: 'users',
  attributes: {
    username: u.username,
    email: u.email,
    'is-service-account': false,
    'is-site-admin': u.admin,
    'avatar-url': '',
    'two-factor': { enabled: false, verified: false },
    permissions: {
      'can-create-organizations': true,
      'can-change-email': true,
      'can-change-username': true,
    },
  },
  relationships: {
    'authentication-tokens': { links: { related: `/api/v2/users/${u.id}/authentication-tokens` } },
  },
  links: { self: `/api/v2/users/${u.id}` },
});

const tokenResource = (t: AuthTokenRow, token?: string) => ({
  id: t.id,
  type: 'authentication-tokens',
  attributes: {
    'created-at': t.createdAt,
    'last-used-at': null,
    description: t.description,
    token: token ?? null,
    'expired-at': t.expiredAt,
  },
  relationships: {
    'created-by': { data: t.createdBy === null ? null : { id: t.createdBy, type: 'users' } },
  },
});

/** Users and user tokens: who can call the runs API. */
export function createIdentityContext(core: Core) {
  const queries = identityQueries(core.db);
  const commands = createIdentityCommands(core, queries);

  // Every request reads its token and user: remembered until an identity event (ReadMemo).
  const memo = new ReadMemo(core.db, { events: IDENTITY_PROJECTION_EVENTS });

  /** The principal behind a bearer token, or undefined when the token is unknown or expired. */
  const principal = (token: string): RunsPrincipal | undefined => {
    const hmac = core.sealer.hmac(token);
    const row = memo.get(`token\0${hmac}`, () => queries.tokenByHmac(hmac));
    if (row === undefined) return undefined;
    if (row.expiredAt !== null && Date.parse(row.expiredAt) <= core.clock.now().getTime())
      return undefined;
    const user =
      row.kind === 'user'
        ? memo.get(`user\0${row.ownerId}`, () => queries.user(row.ownerId))
        : undefined;
    return {
      kind: row.kind,
      id: row.ownerId,
      tokenId: row.id,
      name: user?.username ?? row.ownerName,
      organization: row.organization,
      admin: user?.admin ?? false,
    };
  };

  const requireUser = (ctx: Context): UserRow => {
    const p = ctx.state.principal;
    const user = p?.kind === 'user' ? queries.user(p.id) : undefined;
    if (user === undefined)
      throw new NotFoundError('account details are only available to user tokens');
    return user;
  };

  const routes = new Router();
  routes.get('/account/details', (ctx) => {
    ctx.body = { data: userResource(requireUser(ctx)) };
  });
  const orgs = new OrganizationQueries(core.db);
  routes.get('/users/:id', (ctx) => {
    const user = queries.user(ctx.params.id!);
    // A team or organization token sees the members of its organization only.
    const p = ctx.state.principal;
    const hidden =
      p !== undefined && p.kind !== 'user' && !orgs.isMember(p.organization ?? '', ctx.params.id!);
    if (user === undefined || hidden) throw new NotFoundError(`user ${ctx.params.id} not found`);
    ctx.body = { data: userResource(user) };
  });
  routes.get('/users/:id/authentication-tokens', (ctx) => {
    const me = requireUser(ctx);
    if (me.id !== ctx.params.id) throw new NotFoundError(`user ${ctx.params.id} not found`);
    ctx.body = { data: queries.tokensOf('user', me.id).map((t) => tokenResource(t)) };
  });
  routes.post('/users/:id/authentication-tokens', async (ctx) => {
    const me = requireUser(ctx);
    if (me.id !== ctx.params.id) throw new NotFoundError(`user ${ctx.params.id} not found`);
    const attrs =
      (ctx.request.body as { data?: { attributes?: Record<string, unknown> } } | undefined)?.data
        ?.attributes ?? {};
    const description = typeof attrs.description === 'string' ? attrs.description : null;
    const expiredAt = typeof attrs['expired-at'] === 'string' ? attrs['expired-at'] : null;
    if (expiredAt !== null && Number.isNaN(Date.parse(expiredAt))) {
      throw new KeelError('validation', 'expired-at must be an ISO 8601 time');
    }
    const created = await commands.createToken(
      {
        kind: 'user',
        ownerId: me.id,
        ownerName: me.username,
        organization: null,
        description,
        expiredAt,
        createdBy: me.id,
      },
      runsMetadata(ctx),
    );
    const row = queries.token(created.data.id)!;
    ctx.status = 201;
    ctx.body = { data: tokenResource(row, created.token) };
  });
  routes.get('/authentication-tokens/:id', (ctx) => {
    const me = requireUser(ctx);
    const t = queries.token(ctx.params.id!);
    if (t === undefined || t.kind !== 'user' || t.ownerId !== me.id)
      throw new NotFoundError(`token ${ctx.params.id} not found`);
    ctx.body = { data: tokenResource(t) };
  });
  routes.delete('/authentication-tokens/:id', async (ctx) => {
    const me = requireUser(ctx);
    const t = queries.token(ctx.params.id!);
    if (t === undefined || t.kind !== 'user' || t.ownerId !== me.id)
      throw new NotFoundError(`token ${ctx.params.id} not found`);
    await commands.deleteToken(t.id, runsMetadata(ctx));
    ctx.status = 204;
  });

  const module: ContextModule = {
    name: 'runs-identity',
    projections: [identityProjection(() => memo.clear())],
    runsRoutes: routes,
  };
  return { module, queries, commands, principal };
}

export type IdentityContext = ReturnType<typeof createIdentityContext>;
