import type { RouterContext } from '@koa/router';
import { multierror } from '../../http/errors.js';
import { KeelError, NotFoundError, ValidationError } from '../../core/errors.js';
import { requestData, sendVault } from '../../http/vault.js';
import { formatGoDuration } from '../duration.js';
import { parseFields, segmentsOnly } from '../fields.js';
import { checkPolicyName } from '../names.js';
import type { TokenRoleSettings } from './events.js';
import { TOKEN_ROLE } from './paths.js';
import { SYSTEM_LEASE_TTL, type MountTtls, type TokenRow } from './projection.js';
import { cidrList } from './approle.js';
import { sysRoute, type SysRoute, type SysScope } from './routes.js';

/** The smaller of two caps where each is set (> 0); 0 when neither is. */
export const smallestSet = (a: number | undefined, b: number | undefined): number => {
  const set = [a ?? 0, b ?? 0].filter((n) => n > 0);
  return set.length === 0 ? 0 : Math.min(...set);
};

const SYSTEM_TTLS: MountTtls = { defaultTtl: SYSTEM_LEASE_TTL, maxTtl: SYSTEM_LEASE_TTL };

/**
 * A new token's TTL as the reference sets it: a periodic token gets its period; any other the
 * TTL asked for, else the default of the method that makes it (the token store's or the auth
 * method's tune, else the system's 768h) unless it is a root token (which then never expires);
 * then the explicit max TTL and the method's maximum cap it (a period only by the explicit max),
 * with a warning.
 */
export function createTtl(
  asked: number,
  t: { explicitMaxTtl: number; period: number; isRoot: boolean; mount?: MountTtls },
  warnings: string[],
): number {
  const ttls = t.mount ?? SYSTEM_TTLS;
  const max = t.period > 0 ? t.explicitMaxTtl : smallestSet(ttls.maxTtl, t.explicitMaxTtl);
  let ttl = t.period > 0 ? t.period : asked;
  if (ttl === 0 && !t.isRoot) ttl = ttls.defaultTtl;
  if (max > 0 && ttl > max) {
    warnings.push(
      `TTL of "${formatGoDuration(ttl)}" exceeded the effective max_ttl of "${formatGoDuration(max)}"; TTL value is capped accordingly`,
    );
    ttl = max;
  }
  return ttl;
}

/**
 * A renewal's TTL (see `renew` in tokens.ts), capped by the maximum of the method that made the
 * token; refuses a token already at its maximum.
 */
export function renewTtl(
  row: TokenRow,
  increment: number,
  now: Date,
  warnings: string[],
  mount: MountTtls = SYSTEM_TTLS,
): number {
  const periodic = row.period > 0;
  const max = periodic ? row.explicitMaxTtl : smallestSet(mount.maxTtl, row.explicitMaxTtl);
  const ttl = periodic ? row.period : increment > 0 ? increment : row.ttlSeconds;
  if (max === 0) return ttl;
  const left = Math.floor((Date.parse(row.createdAt) + max * 1000 - now.getTime()) / 1000);
  if (left <= 0) throw new ValidationError('past the max TTL, cannot renew');
  if (left >= ttl) return ttl;
  warnings.push(
    `TTL of "${formatGoDuration(ttl)}" exceeded the effective max_ttl of "${formatGoDuration(left)}"; TTL value is capped accordingly`,
  );
  return left;
}

/**
 * The policies of a token created against a role: those asked for (a subset of the role's
 * allowed policies when it lists any), else the role's allowed policies, else the parent's; none
 * may be among the role's disallowed policies.
 */
export function rolePolicies(
  role: TokenRoleSettings,
  asked: string[] | undefined,
  parent: readonly string[],
): string[] {
  const strip = (ps: readonly string[]) => ps.filter((p) => p !== 'default');
  let policies: string[];
  if (role.allowed_policies.length > 0) {
    policies = asked ?? role.allowed_policies;
    const outside = strip(policies).filter((p) => !role.allowed_policies.includes(p));
    if (outside.length > 0)
      throw new ValidationError(
        `token policies (${JSON.stringify(strip(policies))}) must be subset of the role's allowed policies (${JSON.stringify(role.allowed_policies)})`,
      );
  } else {
    policies = asked ?? strip(parent).filter((p) => !role.disallowed_policies.includes(p));
  }
  const banned = policies.filter((p) => role.disallowed_policies.includes(p));
  if (banned.length > 0)
    throw new ValidationError(
      `token policies (${JSON.stringify(policies)}) contains disallowed policies (${JSON.stringify(role.disallowed_policies)})`,
    );
  return policies;
}

const roleView = (name: string, r: TokenRoleSettings) => ({
  name,
  allowed_policies: r.allowed_policies,
  disallowed_policies: r.disallowed_policies,
  orphan: r.orphan,
  renewable: r.renewable,
  path_suffix: r.path_suffix,
  explicit_max_ttl: r.explicit_max_ttl,
  token_explicit_max_ttl: r.explicit_max_ttl,
  period: r.period,
  token_period: r.period,
  token_bound_cidrs: r.token_bound_cidrs,
  token_num_uses: r.token_num_uses ?? 0,
  token_type: 'default-service',
});

const NEW_ROLE: TokenRoleSettings = {
  allowed_policies: [],
  disallowed_policies: [],
  orphan: false,
  renewable: true,
  path_suffix: '',
  explicit_max_ttl: 0,
  period: 0,
  token_bound_cidrs: [],
};

const listTokenRoles = (ctx: RouterContext, deps: SysScope) => {
  if (ctx.state.list !== true)
    throw new KeelError('unsupported', multierror('unsupported operation'));
  const keys = deps.queries.tokenRoleNames();
  if (keys.length === 0) throw new NotFoundError('');
  sendVault(ctx, { keys });
};
const readTokenRole = (ctx: RouterContext, deps: SysScope) => {
  const name = ctx.params.role_name!.toLowerCase();
  const role = deps.queries.tokenRole(name);
  if (role === undefined) throw new NotFoundError('');
  sendVault(ctx, roleView(name, role));
};
const writeTokenRole = async (ctx: RouterContext, deps: SysScope) => {
  const name = ctx.params.role_name!.toLowerCase();
  const d = parseFields(TOKEN_ROLE, requestData(ctx), { role_name: name });
  // A write changes what it names and keeps the rest, as the reference updates a role.
  const s: TokenRoleSettings = { ...(deps.queries.tokenRole(name) ?? NEW_ROLE) };
  const list = (k: 'allowed_policies' | 'disallowed_policies') => {
    const v = d.get(k);
    if (v === undefined) return;
    v.forEach(checkPolicyName);
    s[k] = [...new Set(v.map((p) => p.toLowerCase()))].sort();
  };
  list('allowed_policies');
  list('disallowed_policies');
  s.orphan = d.get('orphan') ?? s.orphan;
  s.renewable = d.get('renewable') ?? s.renewable;
  s.path_suffix = d.get('path_suffix') ?? s.path_suffix;
  if (s.path_suffix.includes('..'))
    throw new ValidationError('error: invalid path suffix: must not contain ".."');
  s.explicit_max_ttl =
    d.get('token_explicit_max_ttl') ?? d.get('explicit_max_ttl') ?? s.explicit_max_ttl;
  s.period = d.get('token_period') ?? d.get('period') ?? s.period;
  const cidrs = d.get('token_bound_cidrs');
  if (cidrs !== undefined) s.token_bound_cidrs = cidrList('token_bound_cidrs', cidrs);
  const uses = d.get('token_num_uses');
  if (uses !== undefined && uses < 0)
    throw new ValidationError('token_num_uses cannot be negative');
  if (uses !== undefined) s.token_num_uses = uses;
  const type = d.get('token_type') ?? '';
  if (!['', 'service', 'default-service', 'default'].includes(type))
    throw new ValidationError(`token_type ${JSON.stringify(type)} is not supported by Keel`);
  await deps.commands.writeTokenRole(name, s, deps.metadata(ctx));
  sendVault(ctx, undefined, d.warnings.length > 0 ? { warnings: d.warnings } : {});
};
const deleteTokenRole = async (ctx: RouterContext, deps: SysScope) => {
  await deps.commands.deleteTokenRole(ctx.params.role_name!, deps.metadata(ctx));
  sendVault(ctx, undefined);
};

/** `auth/token/roles/*`: what tokens created against a role may be. */
export const TOKEN_ROLE_ROUTES: readonly SysRoute[] = [
  sysRoute(
    segmentsOnly('auth/token/roles', 'List token roles', ['list']),
    { list: listTokenRoles },
    { getAsList: true },
  ),
  sysRoute(TOKEN_ROLE, {
    read: readTokenRole,
    update: writeTokenRole,
    delete: deleteTokenRole,
  }),
];
