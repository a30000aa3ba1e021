import type { RouterContext } from '@koa/router';
import { BlockList, isIP } from 'node:net';
import type { Decider } from '../../core/command-handler.js';
import { ForbiddenError, KeelError, NotFoundError, ValidationError } from '../../core/errors.js';
import type { StoredEvent } from '../../core/events.js';
import { multierror } from '../../http/errors.js';
import { requestData, sendVault } from '../../http/vault.js';
import { parseFields, segmentsOnly } from '../fields.js';
import { checkPolicyName } from '../names.js';
import type { AppRoleSettings, AuthMethodType, LoginTokenSettings, SysEvent } from './events.js';
import { NO_TOKEN_SETTINGS, appRoleStream, secretIdStream } from './events.js';
import { appRoleDecider } from './commands.js';
import {
  APPROLE_ACCESSOR_LOOKUP,
  APPROLE_CUSTOM_SECRET_ID,
  APPROLE_LOGIN,
  APPROLE_ROLE,
  APPROLE_ROLE_ID,
  APPROLE_SECRET_ID,
  APPROLE_ACCESSOR_DESTROY,
  APPROLE_SECRET_DESTROY,
  APPROLE_SECRET_LOOKUP,
  JWT_CONFIG,
} from './paths.js';
import type { AuthMountRow, SecretIdRow } from './projection.js';
import { sysRoute, type SysRoute, type SysRouteDeps, type SysScope } from './routes.js';
import { createTtl, smallestSet } from './token-roles.js';
import { parseMeta } from './tokens.js';
import { authTtls } from './auth-tune.js';

const NEW_ROLE: AppRoleSettings = {
  bind_secret_id: true,
  secret_id_bound_cidrs: [],
  secret_id_num_uses: 0,
  secret_id_ttl: 0,
  ...NO_TOKEN_SETTINGS,
};

/** A secret ID's stream: whether it can still log in, and how many logins are left. */
interface SecretIdState {
  exists: boolean;
  limited: boolean;
  usesLeft: number;
}
const secretIdDecider: Decider<SecretIdState, SysEvent> = {
  initialState: () => ({ exists: false, limited: false, usesLeft: 0 }),
  evolve: (s, e: StoredEvent<SysEvent>) => {
    if (e.type === 'AppRoleSecretIdCreated')
      return { exists: true, limited: e.data.numUses > 0, usesLeft: e.data.numUses };
    if (e.type === 'AppRoleSecretIdUsed') return { ...s, usesLeft: e.data.usesLeft };
    if (e.type === 'AppRoleSecretIdDestroyed') return { ...s, exists: false };
    return s;
  },
};

/** CIDRs as the reference takes them: `a.b.c.d/n`, an IPv6 prefix, or one address. */
export function cidrList(field: string, values: readonly string[]): string[] {
  for (const v of values) {
    const [address = '', bits, extra] = v.split('/');
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    const n = bits === undefined ? max : Number(bits);
    if (family === 0 || extra !== undefined || !Number.isInteger(n) || n < 0 || n > max)
      throw new ValidationError(`invalid CIDR in ${field}: ${JSON.stringify(v)}`);
  }
  return [...values];
}

/** Whether `ip` falls in one of `cidrs` (an empty list allows every address). */
export function allowedFrom(ip: string, cidrs: readonly string[]): boolean {
  if (cidrs.length === 0) return true;
  const bare = ip.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
  const list = new BlockList();
  for (const c of cidrs) {
    const [address = '', bits] = c.split('/');
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    list.addSubnet(address, bits === undefined ? (type === 'ipv4' ? 32 : 128) : Number(bits), type);
  }
  return list.check(bare, isIP(bare) === 4 ? 'ipv4' : 'ipv6');
}

const refused = (what: string, why: string) =>
  new ValidationError(`${what} is not supported by Keel's AppRole: ${why}`);
const PER_SECRET_ID = 'set token_bound_cidrs on the role';

/** The auth method of `type` enabled at the request's `:mount`, if one is. */
export function authMountAt(
  queries: SysRouteDeps['queries'],
  ctx: RouterContext,
  type: AuthMethodType,
): AuthMountRow | undefined {
  const m = queries.authMount(`${ctx.params.mount ?? ''}/`);
  return m?.type === type ? m : undefined;
}

/** The auth method of `type` enabled at the request's `:mount`; else the path is unsupported. */
export function authMountOf(
  queries: SysRouteDeps['queries'],
  ctx: RouterContext,
  type: AuthMethodType,
): AuthMountRow {
  const m = authMountAt(queries, ctx, type);
  if (m === undefined) throw new KeelError('not_found', multierror('unsupported path'));
  return m;
}

const mountOf = (ctx: RouterContext, { queries }: SysRouteDeps) =>
  authMountOf(queries, ctx, 'approle');
/** The JWT method enabled at the request's mount, for a path both methods serve. */
const jwtAt = (ctx: RouterContext, { queries }: SysRouteDeps) => authMountAt(queries, ctx, 'jwt');
const roleOf = (ctx: RouterContext, { queries }: SysRouteDeps, mount: AuthMountRow) => {
  const role = queries.appRole(mount.accessor, ctx.params.role_name ?? '');
  if (role === undefined)
    throw new ValidationError(`role "${ctx.params.role_name ?? ''}" does not exist`);
  return role;
};
const live = (
  { core }: SysRouteDeps,
  row: SecretIdRow | undefined,
  role: string,
): SecretIdRow | undefined =>
  row !== undefined &&
  row.role === role &&
  (row.expiresAt === null || Date.parse(row.expiresAt) > core.clock.now().getTime())
    ? row
    : undefined;

const listRoles = (ctx: RouterContext, deps: SysScope) => {
  const j = jwtAt(ctx, deps);
  if (j !== undefined) return deps.jwt.listRoles(ctx, j);
  const m = mountOf(ctx, deps);
  if (ctx.state.list !== true)
    throw new KeelError('unsupported', multierror('unsupported operation'));
  const keys = deps.queries.appRoleNames(m.accessor);
  if (keys.length === 0) throw new NotFoundError('');
  sendVault(ctx, { keys });
};
const readRole = (ctx: RouterContext, deps: SysScope) => {
  const j = jwtAt(ctx, deps);
  if (j !== undefined) return deps.jwt.readRole(ctx, j);
  const m = mountOf(ctx, deps);
  const role = deps.queries.appRole(m.accessor, ctx.params.role_name!);
  if (role === undefined) throw new NotFoundError('');
  const s = role.settings;
  sendVault(ctx, {
    bind_secret_id: s.bind_secret_id,
    local_secret_ids: false,
    secret_id_bound_cidrs: s.secret_id_bound_cidrs,
    secret_id_num_uses: s.secret_id_num_uses,
    secret_id_ttl: s.secret_id_ttl,
    token_bound_cidrs: s.token_bound_cidrs ?? [],
    token_explicit_max_ttl: s.token_explicit_max_ttl,
    token_max_ttl: s.token_max_ttl,
    token_no_default_policy: s.token_no_default_policy,
    token_num_uses: s.token_num_uses ?? 0,
    token_period: s.token_period,
    period: s.token_period,
    token_policies: s.token_policies,
    policies: s.token_policies,
    token_ttl: s.token_ttl,
    token_type: 'default',
  });
};
const writeRole = async (ctx: RouterContext, deps: SysScope) => {
  const j = jwtAt(ctx, deps);
  if (j !== undefined) return deps.jwt.writeRole(ctx, j);
  const m = mountOf(ctx, deps);
  const name = ctx.params.role_name!;
  checkPolicyName(name);
  const d = parseFields(APPROLE_ROLE, requestData(ctx), {
    mount: ctx.params.mount!,
    role_name: name,
  });
  const existing = deps.queries.appRole(m.accessor, name);
  // A write changes what it names and keeps the rest, as the reference updates a role.
  const s: AppRoleSettings = { ...(existing?.settings ?? NEW_ROLE) };
  if (d.get('bind_secret_id') === false)
    throw refused('bind_secret_id false', 'every login presents a secret ID');
  readTokenLimits({ uses: d.get('token_num_uses'), cidrs: d.get('token_bound_cidrs') }, s);
  if (d.get('local_secret_ids') === true)
    throw refused('local_secret_ids', 'its secret IDs live in the one log every node shares');
  const type = d.get('token_type') ?? '';
  if (!['', 'default', 'service', 'default-service'].includes(type))
    throw new ValidationError(
      `unsupported token_type ${JSON.stringify(type)}: Keel serves service tokens`,
    );
  const cidrs = d.get('secret_id_bound_cidrs');
  if (cidrs !== undefined) s.secret_id_bound_cidrs = cidrList('secret_id_bound_cidrs', cidrs);
  const policies = d.get('token_policies') ?? d.get('policies');
  if (policies !== undefined) {
    policies.forEach(checkPolicyName);
    s.token_policies = [...new Set(policies.map((p) => p.toLowerCase()))].sort();
  }
  const num = (k: 'secret_id_num_uses') => {
    const v = d.get(k);
    if (v === undefined) return;
    if (v < 0) throw new ValidationError(`${k} cannot be negative`);
    s[k] = v;
  };
  num('secret_id_num_uses');
  s.secret_id_ttl = d.get('secret_id_ttl') ?? s.secret_id_ttl;
  s.token_ttl = d.get('token_ttl') ?? s.token_ttl;
  s.token_max_ttl = d.get('token_max_ttl') ?? s.token_max_ttl;
  s.token_explicit_max_ttl = d.get('token_explicit_max_ttl') ?? s.token_explicit_max_ttl;
  s.token_period = d.get('token_period') ?? d.get('period') ?? s.token_period;
  s.token_no_default_policy = d.get('token_no_default_policy') ?? s.token_no_default_policy;
  if (s.token_max_ttl > 0 && s.token_ttl > s.token_max_ttl)
    throw new ValidationError('token_ttl should not be greater than token_max_ttl');
  const roleId = existing?.roleId ?? deps.core.ids.uuid();
  await deps.core.handler.handle(
    appRoleStream(m.accessor, name),
    appRoleDecider,
    () => [
      { type: 'AppRoleWritten' as const, data: { mount: m.accessor, name, roleId, settings: s } },
    ],
    deps.metadata(ctx),
  );
  sendVault(ctx, undefined);
};
const deleteRole = async (ctx: RouterContext, deps: SysScope) => {
  const j = jwtAt(ctx, deps);
  if (j !== undefined) return deps.jwt.deleteRole(ctx, j);
  const m = mountOf(ctx, deps);
  const name = ctx.params.role_name!;
  await deps.core.handler.handle(
    appRoleStream(m.accessor, name),
    appRoleDecider,
    (s) =>
      s.exists ? [{ type: 'AppRoleDeleted' as const, data: { mount: m.accessor, name } }] : [],
    deps.metadata(ctx),
  );
  sendVault(ctx, undefined);
};

const readRoleId = (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  sendVault(ctx, { role_id: roleOf(ctx, deps, m).roleId });
};
const writeRoleId = async (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  const role = roleOf(ctx, deps, m);
  const d = parseFields(APPROLE_ROLE_ID, requestData(ctx), {
    mount: ctx.params.mount!,
    role_name: role.name,
  });
  const roleId = d.get('role_id') ?? '';
  if (roleId === '') throw new ValidationError('missing role_id');
  const holder = deps.queries.appRoleById(m.accessor, roleId);
  if (holder !== undefined && holder.name !== role.name)
    throw new ValidationError('role_id already in use');
  await deps.core.handler.handle(
    appRoleStream(m.accessor, role.name),
    appRoleDecider,
    (s) => {
      if (!s.exists) throw new ValidationError(`role "${role.name}" does not exist`);
      const data = { mount: m.accessor, name: role.name, roleId, settings: role.settings };
      return [{ type: 'AppRoleWritten' as const, data }];
    },
    deps.metadata(ctx),
  );
  sendVault(ctx, undefined);
};

/** Makes a secret ID (random, or the caller's) for a role; answers it once. */
const makeSecretId = (custom: boolean) => async (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  const role = roleOf(ctx, deps, m);
  const captures = { mount: ctx.params.mount!, role_name: role.name };
  const raw = requestData(ctx);
  const d = parseFields(
    APPROLE_SECRET_ID,
    custom ? { ...raw, secret_id: undefined } : raw,
    captures,
  );
  const secretId = custom
    ? (parseFields(APPROLE_CUSTOM_SECRET_ID, raw, captures).get('secret_id') ?? '')
    : deps.core.ids.uuid();
  if (secretId === '') throw new ValidationError('missing secret_id');
  const hmac = deps.core.sealer.hmac(secretId);
  if (deps.queries.secretIdByHmac(m.accessor, hmac) !== undefined)
    throw new ValidationError('SecretID is already registered');
  if ((d.get('token_bound_cidrs') ?? []).length > 0)
    throw refused('token_bound_cidrs on a secret ID', PER_SECRET_ID);
  const rawMeta = d.get('metadata');
  let metadata: Record<string, string> = {};
  if (rawMeta !== undefined && rawMeta !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawMeta);
    } catch {
      throw new ValidationError('failed to parse metadata: it must be a JSON object of strings');
    }
    metadata = parseMeta(parsed);
  }
  const s = role.settings;
  // A secret ID may ask for less than the role allows, never more (0 meaning "no limit").
  const ttl = smallestSet(d.get('ttl'), s.secret_id_ttl);
  const numUses = smallestSet(d.get('num_uses'), s.secret_id_num_uses);
  const accessor = deps.core.ids.uuid();
  const expiresAt =
    ttl > 0 ? new Date(deps.core.clock.now().getTime() + ttl * 1000).toISOString() : null;
  await deps.core.handler.handle(
    secretIdStream(accessor),
    secretIdDecider,
    () => [
      {
        type: 'AppRoleSecretIdCreated' as const,
        data: {
          mount: m.accessor,
          role: role.name,
          accessor,
          secretIdHmac: hmac,
          expiresAt,
          numUses,
          cidrs: cidrList('cidr_list', d.get('cidr_list') ?? []),
          metadata,
        },
      },
    ],
    deps.metadata(ctx),
    { newStream: true },
  );
  sendVault(ctx, {
    secret_id: secretId,
    secret_id_accessor: accessor,
    secret_id_ttl: ttl,
    secret_id_num_uses: numUses,
  });
};
const listSecretIds = (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  if (ctx.state.list !== true)
    throw new KeelError('unsupported', multierror('unsupported operation'));
  const role = roleOf(ctx, deps, m);
  const keys = deps.queries
    .secretIdsOfRole(m.accessor, role.name)
    .filter((row) => live(deps, row, role.name) !== undefined)
    .map((row) => row.accessor);
  if (keys.length === 0) throw new NotFoundError('');
  sendVault(ctx, { keys });
};

const secretIdView = (row: SecretIdRow) => ({
  cidr_list: row.cidrs,
  creation_time: row.createdAt,
  expiration_time: row.expiresAt ?? '0001-01-01T00:00:00Z',
  last_updated_time: row.createdAt,
  metadata: row.metadata,
  secret_id_accessor: row.accessor,
  secret_id_num_uses: row.usesLeft,
  secret_id_ttl:
    row.expiresAt === null
      ? 0
      : Math.round((Date.parse(row.expiresAt) - Date.parse(row.createdAt)) / 1000),
  token_bound_cidrs: [],
});
const destroy = (ctx: RouterContext, deps: SysRouteDeps, row: SecretIdRow) =>
  deps.core.handler.handle(
    secretIdStream(row.accessor),
    secretIdDecider,
    (s) =>
      s.exists
        ? [{ type: 'AppRoleSecretIdDestroyed' as const, data: { accessor: row.accessor } }]
        : [],
    deps.metadata(ctx),
  );
/** The secret ID a request names by value or accessor, if it is the role's and still good. */
const named = (ctx: RouterContext, deps: SysRouteDeps, byAccessor: boolean) => {
  const m = mountOf(ctx, deps);
  const role = roleOf(ctx, deps, m);
  const captures = { mount: ctx.params.mount!, role_name: role.name };
  if (byAccessor) {
    const d = parseFields(APPROLE_ACCESSOR_LOOKUP, requestData(ctx), captures);
    const accessor = d.get('secret_id_accessor') ?? '';
    if (accessor === '') throw new ValidationError('missing secret_id_accessor');
    const row = live(deps, deps.queries.secretIdByAccessor(m.accessor, accessor), role.name);
    if (row === undefined)
      throw new ValidationError(
        `failed to find accessor entry for secret_id_accessor: "${accessor}"`,
      );
    return row;
  }
  const d = parseFields(APPROLE_SECRET_LOOKUP, requestData(ctx), captures);
  const secretId = d.get('secret_id') ?? '';
  if (secretId === '') throw new ValidationError('missing secret_id');
  return live(
    deps,
    deps.queries.secretIdByHmac(m.accessor, deps.core.sealer.hmac(secretId)),
    role.name,
  );
};
const lookupSecretId = (ctx: RouterContext, deps: SysScope) => {
  const row = named(ctx, deps, false);
  // An unknown secret ID is answered with nothing, as the reference does.
  sendVault(ctx, row === undefined ? undefined : secretIdView(row));
};
const destroySecretId = async (ctx: RouterContext, deps: SysScope) => {
  const row = named(ctx, deps, false);
  if (row !== undefined) await destroy(ctx, deps, row);
  sendVault(ctx, undefined);
};
const lookupByAccessor = (ctx: RouterContext, deps: SysScope) =>
  sendVault(ctx, secretIdView(named(ctx, deps, true)!));
const destroyByAccessor = async (ctx: RouterContext, deps: SysScope) => {
  await destroy(ctx, deps, named(ctx, deps, true)!);
  sendVault(ctx, undefined);
};

const jwtMount = (ctx: RouterContext, { queries }: SysRouteDeps) =>
  authMountOf(queries, ctx, 'jwt');

// Needs no token (declared unauthenticated): the role ID and secret ID are the credentials.
const login = async (ctx: RouterContext, deps: SysScope) => {
  const j = jwtAt(ctx, deps);
  if (j !== undefined) return deps.jwt.login(ctx, j);
  const m = mountOf(ctx, deps);
  const d = parseFields(APPROLE_LOGIN, requestData(ctx), { mount: ctx.params.mount! });
  const roleId = d.get('role_id') ?? '';
  if (roleId === '') throw new ValidationError('missing role_id');
  const role = deps.queries.appRoleById(m.accessor, roleId);
  if (role === undefined) throw new ValidationError('invalid role ID');
  const secretId = d.get('secret_id') ?? '';
  if (secretId === '') throw new ValidationError('missing secret_id');
  const row = live(
    deps,
    deps.queries.secretIdByHmac(m.accessor, deps.core.sealer.hmac(secretId)),
    role.name,
  );
  if (row === undefined) throw new ValidationError('invalid secret id');
  const ip = ctx.request.ip;
  for (const cidrs of [role.settings.secret_id_bound_cidrs, row.cidrs])
    if (!allowedFrom(ip, cidrs))
      throw new ValidationError(
        `source address "${ip}" unauthorized through CIDR restrictions on the secret ID`,
      );
  // A limited secret ID is used up in the same command as the token is made: the last login
  // destroys it, and a use is never recorded without its token (nor a token without its use).
  const metadata = deps.metadata(ctx);
  await sendLogin(ctx, deps, m, role.settings, {
    meta: { role_name: role.name },
    displayName: m.path.replace(/\/$/, ''),
    before: () =>
      deps.core.handler.handleSync(
        secretIdStream(row.accessor),
        secretIdDecider,
        (s) => {
          if (!s.exists) throw new ValidationError('invalid secret id');
          if (!s.limited) return [];
          const usesLeft = s.usesLeft - 1;
          return usesLeft > 0
            ? [
                {
                  type: 'AppRoleSecretIdUsed' as const,
                  data: { accessor: row.accessor, usesLeft },
                },
              ]
            : [{ type: 'AppRoleSecretIdDestroyed' as const, data: { accessor: row.accessor } }];
        },
        metadata,
      ),
  });
};

/**
 * AppRole (`auth/<mount>/…`), the reference's machine-login method: roles with a role ID,
 * secret IDs (kept as HMACs; TTL, uses and CIDR binding), and `login`, which needs no token and
 * answers an orphan service token with the role's policies and TTLs. Disabling the method
 * (`sys/auth`) revokes the tokens it made. A JWT method enabled at the mount answers the paths
 * both serve (roles, `login`) and its `config`.
 */
export const APPROLE_ROUTES: readonly SysRoute[] = [
  sysRoute(
    segmentsOnly('auth/:mount/role', 'List AppRole roles', ['list']),
    { list: listRoles },
    { getAsList: true },
  ),
  sysRoute(APPROLE_ROLE, { read: readRole, update: writeRole, delete: deleteRole }),
  sysRoute(APPROLE_ROLE_ID, { read: readRoleId, update: writeRoleId }),
  sysRoute(
    APPROLE_SECRET_ID,
    { update: makeSecretId(false), list: listSecretIds },
    { getAsList: true },
  ),
  sysRoute(APPROLE_CUSTOM_SECRET_ID, { update: makeSecretId(true) }),
  sysRoute(APPROLE_SECRET_LOOKUP, { update: lookupSecretId }),
  sysRoute(APPROLE_SECRET_DESTROY, { update: destroySecretId }),
  sysRoute(APPROLE_ACCESSOR_LOOKUP, { update: lookupByAccessor }),
  sysRoute(APPROLE_ACCESSOR_DESTROY, { update: destroyByAccessor }),
  sysRoute(APPROLE_LOGIN, { update: login }, { unauthenticated: true }),
  sysRoute(JWT_CONFIG, {
    read: (ctx, deps) => deps.jwt.readConfig(ctx, jwtMount(ctx, deps)),
    update: (ctx, deps) => deps.jwt.writeConfig(ctx, jwtMount(ctx, deps)),
  }),
];

/** A role write's `token_num_uses` and `token_bound_cidrs` (AppRole and JWT), checked. */
export function readTokenLimits(
  sent: { uses: number | undefined; cidrs: string[] | undefined },
  s: LoginTokenSettings,
): void {
  const { uses, cidrs } = sent;
  if (uses !== undefined && uses < 0)
    throw new ValidationError('token_num_uses cannot be negative');
  if (uses !== undefined) s.token_num_uses = uses;
  if (cidrs !== undefined) s.token_bound_cidrs = cidrList('token_bound_cidrs', cidrs);
}

/**
 * Answers a login with an orphan service token: `default` plus the role's policies, the role's
 * TTL (else the 768h default) capped from creation by the smaller of its max and explicit max
 * TTLs, or its period; made by the method (disabling it revokes the token). `who.before`, when
 * given, runs in the same command, before the token is made (it records what the login used up).
 */
export async function sendLogin(
  ctx: RouterContext,
  deps: SysRouteDeps,
  m: AuthMountRow,
  s: LoginTokenSettings,
  who: {
    meta: Record<string, string>;
    displayName: string;
    before?: () => void;
  },
): Promise<void> {
  // Bound CIDRs refuse a login from elsewhere, and bind the token it gets (surface.ts).
  const boundCidrs = s.token_bound_cidrs ?? [];
  if (!allowedFrom(ctx.request.ip, boundCidrs)) throw new ForbiddenError('permission denied');
  const policies = s.token_no_default_policy
    ? s.token_policies
    : [...new Set(['default', ...s.token_policies])];
  const warnings: string[] = [];
  const explicitMaxTtl = smallestSet(s.token_explicit_max_ttl, s.token_max_ttl);
  const ttl = createTtl(
    s.token_ttl,
    {
      explicitMaxTtl,
      period: s.token_period,
      isRoot: policies.includes('root'),
      mount: authTtls(deps.queries, m.path),
    },
    warnings,
  );
  const input = {
    policies,
    displayName: who.displayName,
    ttlSeconds: ttl,
    parentAccessor: null,
    meta: who.meta,
    explicitMaxTtl,
    period: s.token_period,
    path: `auth/${m.path}login`,
    authMount: m.accessor,
    numUses: s.token_num_uses ?? 0,
    boundCidrs,
  };
  const metadata = deps.metadata(ctx);
  const { before } = who;
  const created =
    before === undefined
      ? await deps.commands.createToken(input, metadata)
      : await deps.core.handler.atomically(() => {
          before();
          return deps.commands.createTokenSync(input, metadata);
        });
  sendVault(ctx, null, {
    warnings,
    auth: {
      client_token: created.token,
      accessor: created.data.accessor,
      policies: created.data.policies,
      token_policies: created.data.policies,
      metadata: who.meta,
      lease_duration: ttl,
      renewable: created.data.renewable ?? ttl > 0,
      entity_id: '',
      token_type: 'service',
      orphan: true,
      mfa_requirement: null,
      num_uses: s.token_num_uses ?? 0,
    },
  });
}
