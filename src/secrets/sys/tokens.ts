import { multierror } from '../../http/errors.js';
import type { RouterContext } from '@koa/router';
import type { Context } from 'koa';
import { ForbiddenError, KeelError, ValidationError } from '../../core/errors.js';
import type { CommandHandler } from '../../core/command-handler.js';
import type { AuditMetadata } from '../../core/events.js';
import { systemMetadata } from '../../core/events.js';
import type { Timer } from '../../core/schedule.js';
import type { SecretsToken } from '../../http/types.js';
import { requestData, sendVault } from '../../http/vault.js';
import { formatGoDuration } from '../duration.js';
import { CONTROL_CHARACTER, checkPolicyName } from '../names.js';
import type { SysCommands } from './commands.js';
import type { TokenRevocationReason } from './events.js';
import { TIMER_TOKEN_EXPIRY } from './events.js';
import type { SysQueries, TokenRow } from './projection.js';
import { sysRoute, type SysRoute, type SysRouteDeps, type SysScope } from './routes.js';
import { parseFields, segmentsOnly } from '../fields.js';
import { createTtl, renewTtl, rolePolicies, smallestSet } from './token-roles.js';
import { authTtls, tokenTtls } from './auth-tune.js';
import {
  TOKEN_CREATE,
  TOKEN_CREATE_ORPHAN,
  TOKEN_CREATE_ROLE,
  TOKEN_RENEW,
  TOKEN_RENEW_ACCESSOR,
  TOKEN_RENEW_SELF,
  TOKEN_LOOKUP,
  TOKEN_LOOKUP_ACCESSOR,
  TOKEN_REVOKE,
  TOKEN_REVOKE_ACCESSOR,
  TOKEN_REVOKE_ORPHAN,
} from './paths.js';

/**
 * Token hierarchy, as the reference keeps it (docs/security.md, "Token hierarchy"): a child
 * never outlives its parent (its TTL is capped by the parent's remaining TTL, and revoking or
 * expiring a token revokes its descendants first, deepest first); orphans need root or sudo.
 * The leases a token obtained are revoked by the engines' reactors on `SecretsTokenRevoked`.
 */
export function tokenHierarchy(
  handler: CommandHandler,
  commands: SysCommands,
  queries: SysQueries,
) {
  /**
   * Revoke a token and every descendant (each before its parent), or make its children orphans;
   * inside `atomically`, where the descendants are read as the batch has left them.
   */
  const revokeSync = (
    accessor: string,
    metadata: AuditMetadata,
    reason: TokenRevocationReason,
    orphanChildren = false,
  ): void => {
    if (!orphanChildren)
      for (const child of queries.descendants(accessor))
        commands.revokeTokenSync(child, metadata, 'parent revoked');
    commands.revokeTokenSync(accessor, metadata, reason, orphanChildren);
  };
  return {
    revokeSync,
    /** The same as one command: the token and its descendants are revoked together or not at all. */
    revoke(
      accessor: string,
      metadata: AuditMetadata,
      reason: TokenRevocationReason,
      orphanChildren = false,
    ): Promise<void> {
      return handler.atomically(() => revokeSync(accessor, metadata, reason, orphanChildren));
    },
  };
}

export type TokenHierarchy = ReturnType<typeof tokenHierarchy>;

/** The expiry timer: a token whose TTL ran out is revoked with its descendants. */
export const tokenExpiryTimer = (hierarchy: TokenHierarchy): Timer => ({
  kind: TIMER_TOKEN_EXPIRY,
  fire: (entry) => {
    const { accessor } = entry.data as { accessor: string };
    return hierarchy.revoke(accessor, systemMetadata('token expiry'), 'expired');
  },
});

/** The reference's limits on custom metadata (sdk/helper/custommetadata). */
export const META_LIMITS = { keys: 64, keyBytes: 128, valueBytes: 512 } as const;

/** `meta`: a map of printable strings within the reference's limits. */
export function parseMeta(v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (
    typeof v !== 'object' ||
    Array.isArray(v) ||
    !Object.values(v).every((x) => typeof x === 'string')
  )
    throw new ValidationError(
      'Field validation failed: error converting input for field "meta": expected a map of strings',
    );
  const meta = v as Record<string, string>;
  const problems: string[] = [];
  const keys = Object.keys(meta);
  if (keys.length > META_LIMITS.keys)
    problems.push(`meta has ${keys.length} keys; at most ${META_LIMITS.keys} are allowed`);
  for (const [k, value] of Object.entries(meta)) {
    const shown = JSON.stringify(k.length > 32 ? `${k.slice(0, 32)}…` : k);
    if (k === '') problems.push('meta keys must not be empty');
    if (Buffer.byteLength(k) > META_LIMITS.keyBytes)
      problems.push(`meta key ${shown} is longer than ${META_LIMITS.keyBytes} bytes`);
    if (Buffer.byteLength(value) > META_LIMITS.valueBytes)
      problems.push(`meta value of ${shown} is longer than ${META_LIMITS.valueBytes} bytes`);
    if (CONTROL_CHARACTER.test(k) || CONTROL_CHARACTER.test(value))
      problems.push(`meta key ${shown} or its value holds a control character`);
  }
  if (problems.length > 0) throw new ValidationError(problems.slice(0, 5).join('; '));
  return meta;
}

const secondsLeft = (deps: SysRouteDeps, expiresAt: string) =>
  Math.floor((Date.parse(expiresAt) - deps.core.clock.now().getTime()) / 1000);

const tokenView = (deps: SysRouteDeps, t: TokenRow, id?: string) => {
  const ttl = t.expiresAt === null ? 0 : Math.max(0, secondsLeft(deps, t.expiresAt));
  return {
    accessor: t.accessor,
    ...(t.boundCidrs.length > 0 ? { bound_cidrs: t.boundCidrs } : {}),
    creation_time: Math.floor(Date.parse(t.createdAt) / 1000),
    creation_ttl: t.ttlSeconds,
    display_name: t.displayName,
    entity_id: '',
    expire_time: t.expiresAt,
    explicit_max_ttl: t.explicitMaxTtl,
    ...(id === undefined ? {} : { id }),
    issue_time: t.createdAt,
    ...(t.lastRenewal === null
      ? {}
      : {
          last_renewal: t.lastRenewal,
          last_renewal_time: Math.floor(Date.parse(t.lastRenewal) / 1000),
        }),
    meta: Object.keys(t.meta).length === 0 ? null : t.meta,
    num_uses: t.usesLeft,
    orphan: t.parentAccessor === null,
    path: t.path ?? (t.role === null ? 'auth/token/create' : `auth/token/create/${t.role}`),
    ...(t.period > 0 ? { period: t.period } : {}),
    policies: t.policies,
    renewable: t.renewable,
    ...(t.role === null ? {} : { role: t.role }),
    ttl,
    type: 'service',
  };
};

/** The `auth` block of a create or renew answer. */
const authBlock = (t: TokenRow, token: string, leaseDuration: number) => ({
  client_token: token,
  accessor: t.accessor,
  policies: t.policies,
  token_policies: t.policies,
  metadata: Object.keys(t.meta).length === 0 ? null : t.meta,
  lease_duration: leaseDuration,
  renewable: t.renewable,
  entity_id: '',
  token_type: 'service',
  orphan: t.parentAccessor === null,
  mfa_requirement: null,
  num_uses: t.numUses,
});

/** The TTL a child gets: what it asked for, never past its parent's expiry. */
const childTtl = (
  deps: SysRouteDeps,
  parent: SecretsToken,
  requested: number,
  warnings: string[],
): number => {
  if (parent.expiresAt === null) return requested;
  const left = secondsLeft(deps, parent.expiresAt);
  if (left < 1) throw new ValidationError('the parent token expires in less than a second');
  if (requested > 0 && requested <= left) return requested;
  if (requested > 0)
    warnings.push(
      `TTL of "${formatGoDuration(requested)}" exceeded the parent token's remaining TTL; capped to "${formatGoDuration(left)}"`,
    );
  return left;
};

const create = (orphanPath: boolean) => async (ctx: RouterContext, deps: SysScope) => {
  const parent = ctx.state.token!;
  // A token with limited uses would escape its count through children, as the reference says.
  if ((deps.queries.tokenByAccessor(parent.accessor)?.numUses ?? 0) !== 0)
    throw new ValidationError('restricted use token cannot generate child tokens');
  const inPath = ctx.params.role_name;
  const fields =
    inPath === undefined
      ? parseFields(TOKEN_CREATE, requestData(ctx))
      : parseFields(TOKEN_CREATE_ROLE, requestData(ctx), { role_name: inPath });
  // Role names are case-insensitive, as in the reference.
  const roleName = fields.get('role_name')?.toLowerCase() || undefined;
  const role = roleName === undefined ? undefined : deps.queries.tokenRole(roleName);
  if (roleName !== undefined && role === undefined)
    throw new ValidationError(`unknown role ${roleName}`);
  const asked = fields.get('num_uses') ?? 0;
  if (asked < 0) throw new ValidationError('number of uses cannot be negative');
  // A role's count is a ceiling on what is asked, as the reference sets it.
  const numUses = smallestSet(asked, role?.token_num_uses);
  const type = fields.get('type') ?? '';
  if (!['', 'service', 'default-service', 'default'].includes(type))
    throw new ValidationError(`token type ${JSON.stringify(type)} is not supported by Keel`);
  const parentIsRoot = parent.policies.includes('root');
  const policiesAsked = fields.get('policies');
  const requested = role
    ? rolePolicies(role, policiesAsked, parent.policies)
    : (policiesAsked ?? [...parent.policies]);
  requested.forEach(checkPolicyName);
  if (!parentIsRoot && role === undefined) {
    const extra = requested.filter((p) => p !== 'default' && !parent.policies.includes(p));
    if (extra.length > 0) throw new ValidationError('child policies must be subset of parent');
  }
  // create-orphan needs sudo on its own path (checked with the ACL); no_parent needs it here; a
  // role's orphan setting needs neither.
  const orphan = orphanPath || (role?.orphan ?? false) || fields.get('no_parent');
  if (orphan && !orphanPath && !role?.orphan && !parentIsRoot && ctx.state.sudo !== true)
    throw new ValidationError('root or sudo privileges required to create orphan token');
  const policies =
    requested.includes('root') || fields.get('no_default_policy')
      ? requested
      : ['default', ...requested];
  const warnings: string[] = [];
  const explicitMaxTtl = smallestSet(fields.get('explicit_max_ttl'), role?.explicit_max_ttl);
  const period = role && role.period > 0 ? role.period : (fields.get('period') ?? 0);
  const isRoot = policies.includes('root');
  const ttl = createTtl(
    fields.get('ttl') ?? 0,
    { explicitMaxTtl, period, isRoot, mount: authTtls(deps.queries, 'token/') },
    warnings,
  );
  const ttlSeconds = orphan ? ttl : childTtl(deps, parent, ttl, warnings);
  const displayName = fields.get('display_name');
  const meta = parseMeta(fields.get('meta'));
  const created = await deps.commands.createToken(
    {
      policies,
      displayName:
        displayName === undefined || displayName === '' ? 'token' : `token-${displayName}`,
      ttlSeconds,
      parentAccessor: orphan ? null : parent.accessor,
      meta,
      renewable: fields.get('renewable') !== false && (role?.renewable ?? true),
      explicitMaxTtl,
      period,
      numUses,
      boundCidrs: role?.token_bound_cidrs ?? [],
      ...(roleName === undefined
        ? {}
        : {
            role: roleName,
            path: `auth/token/create/${roleName}${role?.path_suffix ? `/${role.path_suffix}` : ''}`,
          }),
    },
    deps.metadata(ctx),
  );
  const row = deps.queries.tokenByAccessor(created.data.accessor)!;
  sendVault(ctx, null, {
    warnings: [...warnings, ...fields.warnings],
    auth: authBlock(row, created.token, ttlSeconds),
  });
};
const listAccessors = (ctx: RouterContext, deps: SysScope) => {
  if (ctx.state.list !== true)
    throw new KeelError('unsupported', multierror('unsupported operation'));
  sendVault(ctx, { keys: deps.queries.accessors() });
};

const self = (ctx: Context, deps: SysRouteDeps): TokenRow => {
  const row = deps.queries.tokenByAccessor(ctx.state.token!.accessor);
  if (row === undefined) throw new ValidationError('bad token');
  return row;
};
const lookupSelf = (ctx: Context, deps: SysScope) =>
  sendVault(ctx, tokenView(deps, self(ctx, deps), presentedToken(ctx)));
const tokenOf = (ctx: Context, path: typeof TOKEN_LOOKUP, missing: string): string => {
  const token = parseFields(path, requestData(ctx)).get('token');
  if (token === undefined || token === '') throw new ValidationError(missing);
  return token;
};
const byToken = (deps: SysRouteDeps, token: string): TokenRow | undefined =>
  deps.queries.tokenByHmac(deps.core.sealer.hmac(token));
const lookup = (ctx: RouterContext, deps: SysScope) => {
  const token = tokenOf(ctx, TOKEN_LOOKUP, 'missing token to look up');
  const row = byToken(deps, token);
  // The reference answers 403 for a token it does not know.
  if (row === undefined) throw new ForbiddenError('bad token');
  sendVault(ctx, tokenView(deps, row, token));
};
const byAccessor = (
  ctx: Context,
  deps: SysRouteDeps,
  path: typeof TOKEN_LOOKUP_ACCESSOR,
): TokenRow => {
  const accessor = parseFields(path, requestData(ctx)).get('accessor');
  const row = accessor === undefined ? undefined : deps.queries.tokenByAccessor(accessor);
  if (row === undefined) throw new ValidationError('invalid accessor');
  return row;
};

/**
 * Renewal as the reference computes it: a periodic token gets its period again; any other the
 * increment asked for, else its creation TTL, capped by its explicit max TTL and the system
 * maximum counted from its creation. A token without expiry has nothing to renew.
 */
const renew = async (
  ctx: Context,
  deps: SysRouteDeps,
  row: TokenRow,
  token: string,
  increment: number | undefined,
) => {
  if (row.expiresAt === null) return sendVault(ctx, null, { auth: authBlock(row, token, 0) });
  if (!row.renewable) throw new ValidationError('lease is not renewable');
  const warnings: string[] = [];
  const ttl = renewTtl(
    row,
    increment ?? 0,
    deps.core.clock.now(),
    warnings,
    tokenTtls(deps.queries, row),
  );
  await deps.commands.renewToken(row.accessor, ttl, deps.metadata(ctx));
  const renewed = deps.queries.tokenByAccessor(row.accessor) ?? row;
  sendVault(ctx, null, { warnings, auth: authBlock(renewed, token, ttl) });
};
const renewToken = async (ctx: RouterContext, deps: SysScope) => {
  const d = parseFields(TOKEN_RENEW, requestData(ctx));
  const token = d.get('token');
  if (token === undefined || token === '') throw new ValidationError('missing token');
  const row = byToken(deps, token);
  if (row === undefined) throw new ValidationError('invalid token');
  await renew(ctx, deps, row, token, d.get('increment'));
};
const renewSelf = async (ctx: RouterContext, deps: SysScope) => {
  const d = parseFields(TOKEN_RENEW_SELF, requestData(ctx));
  await renew(ctx, deps, self(ctx, deps), presentedToken(ctx) ?? '', d.get('increment'));
};
const renewAccessor = async (ctx: RouterContext, deps: SysScope) => {
  const d = parseFields(TOKEN_RENEW_ACCESSOR, requestData(ctx));
  const accessor = d.get('accessor');
  const row = accessor ? deps.queries.tokenByAccessor(accessor) : undefined;
  if (row === undefined) throw new ValidationError('invalid accessor');
  // Renewed by accessor, the answer does not carry the token, as in the reference.
  await renew(ctx, deps, row, '', d.get('increment'));
};
const tidy = (ctx: RouterContext) => {
  sendVault(ctx, null, {
    warnings: [
      'Tidy operation successfully started. Keel keeps no revoked tokens or their leases, so there is nothing to clean.',
    ],
  });
  ctx.status = 202;
};
const revokeSelf = async (ctx: RouterContext, deps: SysScope) => {
  await deps.hierarchy.revoke(ctx.state.token!.accessor, deps.metadata(ctx), 'revoked');
  sendVault(ctx, undefined);
};
const revokeToken = async (ctx: RouterContext, deps: SysScope) => {
  const row = byToken(deps, tokenOf(ctx, TOKEN_REVOKE, 'missing token'));
  if (row !== undefined) await deps.hierarchy.revoke(row.accessor, deps.metadata(ctx), 'revoked');
  sendVault(ctx, undefined);
};
const revokeAccessor = async (ctx: RouterContext, deps: SysScope) => {
  await deps.hierarchy.revoke(
    byAccessor(ctx, deps, TOKEN_REVOKE_ACCESSOR).accessor,
    deps.metadata(ctx),
    'revoked',
  );
  sendVault(ctx, undefined);
};
const revokeOrphan = async (ctx: RouterContext, deps: SysScope) => {
  const row = byToken(deps, tokenOf(ctx, TOKEN_REVOKE_ORPHAN, 'missing token'));
  if (row !== undefined)
    await deps.hierarchy.revoke(row.accessor, deps.metadata(ctx), 'revoked', true);
  sendVault(ctx, undefined);
};

/** `auth/token/*`: create (child or orphan, against a role), look up, renew and revoke. */
export const TOKEN_ROUTES: readonly SysRoute[] = [
  sysRoute(TOKEN_CREATE, { update: create(false) }),
  sysRoute(TOKEN_CREATE_ORPHAN, { update: create(true) }, { sudo: true }),
  // LIST auth/token/accessors: every live token's accessor, never the tokens themselves.
  sysRoute(
    segmentsOnly('auth/token/accessors', 'List token accessors', ['list']),
    { list: listAccessors },
    { sudo: true, getAsList: true },
  ),
  sysRoute(
    segmentsOnly('auth/token/lookup-self', 'Look up the calling token', ['read', 'update']),
    {
      read: lookupSelf,
      update: lookupSelf,
    },
  ),
  sysRoute(TOKEN_LOOKUP, { update: lookup }),
  // The token itself is never shown for an accessor: `id` is empty, as in the reference.
  sysRoute(TOKEN_LOOKUP_ACCESSOR, {
    update: (ctx, deps) =>
      sendVault(ctx, tokenView(deps, byAccessor(ctx, deps, TOKEN_LOOKUP_ACCESSOR), '')),
  }),
  sysRoute(segmentsOnly('auth/token/revoke-self', 'Revoke the calling token', ['update']), {
    update: revokeSelf,
  }),
  sysRoute(TOKEN_REVOKE, { update: revokeToken }),
  sysRoute(TOKEN_REVOKE_ACCESSOR, { update: revokeAccessor }),
  // The children live on as orphans.
  sysRoute(TOKEN_REVOKE_ORPHAN, { update: revokeOrphan }, { sudo: true }),
  sysRoute(TOKEN_CREATE_ROLE, { update: create(false) }),
  sysRoute(TOKEN_RENEW, { update: renewToken }),
  sysRoute(TOKEN_RENEW_SELF, { update: renewSelf }),
  sysRoute(TOKEN_RENEW_ACCESSOR, { update: renewAccessor }),
];

// Nothing outlives its revocation in Keel (a revoked token's row and its leases go at once,
// children first), so there is nothing to tidy; the answer is the reference's.
export const TOKEN_TIDY_ROUTE = sysRoute(
  segmentsOnly('auth/token/tidy', 'Tidy the token store', ['update']),
  { update: tidy },
);

/** The token as the caller sent it (lookup-self shows it back as `id`). */
export function presentedToken(ctx: Context): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'))?.[1];
  return ctx.get('x-secrets-token') || ctx.get('x-vault-token') || bearer || undefined;
}
