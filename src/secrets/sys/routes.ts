import { multierror } from '../../http/errors.js';
import type { RouterContext } from '@koa/router';
import type { Context } from 'koa';
import { KeelError, NotFoundError, ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import { sendVault, requestData } from '../../http/vault.js';
import type { Core, SecretsEngine } from '../../context.js';
import { BUILTIN_POLICIES, parsePolicy } from './acl.js';
import type { SysCommands } from './commands.js';
import type { MountRow, SysQueries } from './projection.js';
import { mountTtls } from './projection.js';
import type { MountConfig } from './events.js';
import type { TokenHierarchy } from './tokens.js';
import type { LeaseProvider } from './leases.js';
import type { JwtHandlers } from './jwt.js';
import {
  convertField,
  parseFields,
  segmentsOnly,
  type FieldData,
  type Fields,
  type PathSchema,
} from '../fields.js';
import { route, type Handler, type PathRoute, type RouteFlags, type Verb } from '../route.js';
import {
  LEASE_LOOKUP,
  LEASE_RENEW,
  LEASE_RENEW_ID,
  LEASE_REVOKE,
  LEASE_REVOKE_ID,
  MOUNT,
  MOUNT_TUNE,
  POLICY,
  POLICY_LEGACY,
  REMOUNT,
} from './paths.js';

export interface SysRouteDeps {
  core: Core;
  commands: SysCommands;
  queries: SysQueries;
  /** The engine types that can be mounted, with their declared paths. */
  engines: () => ReadonlyMap<string, SecretsEngine>;
  leaseProviders: () => ReadonlyMap<string, LeaseProvider>;
  metadata: (ctx: Context) => AuditMetadata;
  hierarchy: TokenHierarchy;
  /**
   * Paths other parts of Keel serve under `sys/` (the audit page's `sys/audit/…`), declared with
   * their handlers and bound to their own scope by whoever wires them in; none may be open or need
   * sudo (the surface's lists are this backend's own).
   */
  more: readonly SysRoute[];
}

/** What every handler of the system backend receives: its dependencies, and what is made once. */
export interface SysScope extends SysRouteDeps {
  /** The JWT method's handlers (it shares `auth/:mount/role…`, `login` with AppRole). */
  readonly jwt: JwtHandlers;
  /** Whether the store answers (`sys/health`; a PostgreSQL store may be out of reach). */
  readonly storeAnswers: () => boolean;
  /** Every path the router serves, its own and `more`: what the OpenAPI document lists. */
  readonly paths: readonly SysRoute[];
}

/** A declared path of the system backend with its handlers (src/secrets/route.ts). */
export type SysRoute = PathRoute<SysScope>;

/** Declares the handlers of a path of the system backend. */
export const sysRoute = <F extends Fields>(
  schema: PathSchema<F>,
  handlers: Readonly<Partial<Record<Verb, Handler<SysScope, F>>>>,
  flags?: RouteFlags,
): SysRoute => route(schema, handlers, flags);

/** The answer of a path that lists on a LIST only: 405 to a plain GET, as the reference. */
export function listOnly(ctx: Context): void {
  if (ctx.state.list !== true)
    throw new KeelError('unsupported', multierror('unsupported operation'));
}

const normalizeMountPath = (p: string) => (p.endsWith('/') ? p : `${p}/`).replace(/^\/+/, '');

const mountAt = (queries: SysQueries, path: string): MountRow => {
  const m = queries.mount(normalizeMountPath(path));
  if (m === undefined)
    throw new ValidationError(`cannot fetch sysview for path "${normalizeMountPath(path)}"`);
  return m;
};
const tuneView = (m: MountRow) => {
  const ttls = mountTtls(m.config);
  return {
    default_lease_ttl: ttls.defaultTtl,
    max_lease_ttl: ttls.maxTtl,
    force_no_cache: false,
    description: m.description,
    ...(m.config.allowed_response_headers
      ? { allowed_response_headers: m.config.allowed_response_headers }
      : {}),
    ...(m.config.passthrough_request_headers
      ? { passthrough_request_headers: m.config.passthrough_request_headers }
      : {}),
  };
};

const mountView = (m: ReturnType<SysQueries['mounts']>[number]) => ({
  type: m.type,
  description: m.description,
  accessor: m.accessor,
  config: { ...m.config, force_no_cache: false },
  options: null,
  local: false,
  seal_wrap: false,
  external_entropy_access: false,
});

/** `sys/mounts`, `sys/mounts/*path` and its `tune`, and `sys/remount`: the secrets engines. */
export const MOUNTS_ROUTE = sysRoute(segmentsOnly('sys/mounts', 'The mounted engines', ['read']), {
  read: (ctx, { queries }) => {
    const all = Object.fromEntries(queries.mounts().map((m) => [m.path, mountView(m)]));
    sendVault(ctx, all);
  },
});
export const MOUNT_ROUTE = sysRoute(MOUNT, {
  read: (ctx, { queries }) => {
    const m = queries.mount(normalizeMountPath(ctx.params.path ?? ''));
    if (m === undefined) throw new ValidationError(`No secret engine mount at ${ctx.params.path}`);
    sendVault(ctx, mountView(m));
  },
  update: async (ctx, deps) => {
    const { commands, queries } = deps;
    const d = parseFields(MOUNT, requestData(ctx), { path: ctx.params.path ?? '' });
    const type = d.get('type');
    if (type === undefined || type === '')
      throw new ValidationError('missing required field "type"');
    if (!deps.engines().has(type))
      throw new ValidationError(`plugin not found in the catalog: ${type}`);
    const config = d.get('config') ?? {};
    const ttl = (name: 'default_lease_ttl' | 'max_lease_ttl') =>
      config[name] === undefined || config[name] === null
        ? 0
        : convertField('duration', name, config[name]);
    await commands.enableMount(
      {
        path: normalizeMountPath(ctx.params.path ?? ''),
        type,
        description: d.get('description') ?? '',
        config: {
          default_lease_ttl: ttl('default_lease_ttl'),
          max_lease_ttl: ttl('max_lease_ttl'),
        },
      },
      () => queries.mounts().map((m) => m.path),
      deps.metadata(ctx),
    );
    sendVault(ctx, undefined);
  },
  // Every secret the mount handed out is revoked first, as the reference's unmount does: a lease
  // that cannot be revoked fails the request and keeps the mount (`revoke-force` is the way out).
  delete: async (ctx, deps) => {
    const m = deps.queries.mount(normalizeMountPath(ctx.params.path ?? ''));
    // Nothing mounted there (or it moved away): nothing to do, as the reference answers.
    if (m !== undefined) {
      await deps.leaseProviders().get(m.path)?.revokePrefix(m.path, deps.metadata(ctx));
      await deps.commands.disableMount(m.path, deps.metadata(ctx));
    }
    sendVault(ctx, undefined);
  },
});
export const MOUNT_TUNE_ROUTE = sysRoute(MOUNT_TUNE, {
  read: (ctx, { queries }) => {
    const m = mountAt(queries, ctx.params.path ?? '');
    sendVault(ctx, tuneView(m));
  },
  update: async (ctx, deps) => {
    const m = mountAt(deps.queries, ctx.params.path ?? '');
    const d = parseFields(MOUNT_TUNE, requestData(ctx), { path: ctx.params.path ?? '' });
    // `system` (or nothing) keeps the system's value, as the reference reads these.
    const ttl = (field: 'default_lease_ttl' | 'max_lease_ttl'): number => {
      const v = d.get(field);
      if (v === undefined || v === '') return m.config[field];
      return v === 'system' ? 0 : convertField('duration', field, v);
    };
    const headers = (field: 'allowed_response_headers' | 'passthrough_request_headers') =>
      d.get(field) ?? m.config[field];
    const config: MountConfig = {
      default_lease_ttl: ttl('default_lease_ttl'),
      max_lease_ttl: ttl('max_lease_ttl'),
    };
    const allowed = headers('allowed_response_headers');
    const passthrough = headers('passthrough_request_headers');
    if (allowed !== undefined && allowed.length > 0) config.allowed_response_headers = allowed;
    if (passthrough !== undefined && passthrough.length > 0)
      config.passthrough_request_headers = passthrough;
    await deps.commands.tuneMount(
      m.path,
      { description: d.get('description') ?? m.description, config },
      deps.metadata(ctx),
    );
    sendVault(ctx, undefined);
  },
});
// The mount's leases are revoked first, as the reference does; its accessor, and so everything
// the engine keeps for it, moves along.
export const REMOUNT_ROUTE = sysRoute(
  REMOUNT,
  {
    update: async (ctx, deps) => {
      const { queries } = deps;
      const d = parseFields(REMOUNT, requestData(ctx));
      const from = normalizeMountPath(d.get('from') ?? '');
      const to = normalizeMountPath(d.get('to') ?? '');
      if (from === '/' || to === '/')
        throw new ValidationError('both "from" and "to" must be specified as mount paths');
      const m = queries.mount(from);
      if (m === undefined) throw new ValidationError(`no matching mount at "${from}"`);
      const provider = deps.leaseProviders().get(m.path);
      if (provider !== undefined) await provider.revokePrefix(m.path, deps.metadata(ctx));
      const { path, type, accessor, description, config } = m;
      await deps.commands.moveMount(
        { path, type, accessor, description, config },
        to,
        () => queries.mounts().map((x) => x.path),
        deps.metadata(ctx),
      );
      // Done before the answer: no migration to poll (the reference's answer before 1.10).
      sendVault(ctx, undefined);
    },
  },
  { sudo: true },
);

const listPolicies = (ctx: Context, { queries }: SysScope) => {
  const names = [...new Set(['default', ...queries.policyNames(), 'root'])].sort();
  sendVault(ctx, { keys: names, policies: names });
};
const writePolicy = async (ctx: RouterContext, deps: SysScope) => {
  const name = ctx.params.name!;
  const d = parseFields(POLICY, requestData(ctx), { name });
  const policy = d.get('policy') ?? d.get('rules');
  if (policy === undefined) throw new ValidationError("'policy' parameter not supplied or empty");
  const rules = await parsePolicy(name, policy);
  await deps.commands.writePolicy(name, policy, rules, deps.metadata(ctx));
  sendVault(ctx, undefined);
};
const deletePolicy = async (ctx: RouterContext, deps: SysScope) => {
  await deps.commands.deletePolicy(ctx.params.name!, deps.metadata(ctx));
  sendVault(ctx, undefined);
};
/** A policy read: the document as `policy`, or as `rules` on the older path. */
const readPolicy =
  (as: 'policy' | 'rules') =>
  (ctx: RouterContext, { queries }: SysScope) => {
    const name = ctx.params.name!;
    const stored = queries.policy(name);
    if (stored !== undefined) return sendVault(ctx, { name, [as]: stored.policy });
    if (name === 'default' || name === 'root')
      return sendVault(ctx, { name, [as]: describeBuiltin(name) });
    throw new NotFoundError('');
  };

/** `sys/policies/acl` and the older `sys/policy`: ACL policies (a plain GET lists them too). */
export const POLICIES_ROUTE = sysRoute(
  segmentsOnly('sys/policies/acl', 'List ACL policies', ['list']),
  { list: listPolicies },
  { getAsList: true },
);
export const POLICIES_LEGACY_ROUTE = sysRoute(
  segmentsOnly('sys/policy', 'List ACL policies (the older path)', ['read']),
  { read: listPolicies },
);
export const POLICY_ROUTE = sysRoute(POLICY, {
  read: readPolicy('policy'),
  update: writePolicy,
  delete: deletePolicy,
});
// The older path, still served by the reference: the document is read back as `rules`.
export const POLICY_LEGACY_ROUTE = sysRoute(POLICY_LEGACY, {
  read: readPolicy('rules'),
  update: writePolicy,
  delete: deletePolicy,
});

const provider = (deps: SysScope, leaseId: string): LeaseProvider => {
  for (const [mountPath, p] of deps.leaseProviders()) if (leaseId.startsWith(mountPath)) return p;
  throw new ValidationError('invalid lease');
};
/** A lease path's fields; `*id` paths name the lease in the path. */
const leaseFields = <F extends Fields>(ctx: RouterContext, path: PathSchema<F>) =>
  parseFields(path, requestData(ctx), ctx.params.id === undefined ? {} : { id: ctx.params.id });
/** The lease a request names: `lease_id` in the data, else the path's own. */
const leaseId = (ctx: RouterContext, d: FieldData<typeof LEASE_LOOKUP.fields>): string => {
  const id = d.get('lease_id') ?? ctx.params.id;
  if (id === undefined || id === '') throw new ValidationError('lease_id must be specified');
  return id;
};
const renew = async (ctx: RouterContext, deps: SysScope) => {
  const d = leaseFields(ctx, ctx.params.id === undefined ? LEASE_RENEW : LEASE_RENEW_ID);
  const id = leaseId(ctx, d);
  // A null increment (hvac's renew_lease default) is no increment, as the reference reads it.
  const increment = d.get('increment');
  const info = await provider(deps, id).renew(id, increment, deps.metadata(ctx));
  ctx.status = 200;
  ctx.body = JSON.stringify({
    request_id: ctx.state.requestId,
    lease_id: info.id,
    renewable: info.renewable,
    lease_duration: info.ttl,
    data: null,
    wrap_info: null,
    warnings: null,
    auth: null,
  });
  ctx.set('Content-Type', 'application/json');
};
const revoke = async (ctx: RouterContext, deps: SysScope) => {
  const id = leaseId(
    ctx,
    leaseFields(ctx, ctx.params.id === undefined ? LEASE_REVOKE : LEASE_REVOKE_ID),
  );
  await provider(deps, id).revoke(id, deps.metadata(ctx));
  sendVault(ctx, undefined);
};
const revokePrefix = (force: boolean) => async (ctx: RouterContext, deps: SysScope) => {
  const prefix = ctx.params.prefix ?? '';
  for (const [mountPath, p] of deps.leaseProviders()) {
    if (prefix.startsWith(mountPath) || mountPath.startsWith(prefix))
      await p.revokePrefix(prefix, deps.metadata(ctx), force);
  }
  sendVault(ctx, undefined);
};

/** `sys/leases/*`: look up, list, renew and revoke leases, each at the engine that made it. */
export const LEASE_ROUTES: readonly SysRoute[] = [
  sysRoute(LEASE_LOOKUP, {
    update: (ctx, deps) => {
      const id = leaseId(ctx, leaseFields(ctx, LEASE_LOOKUP));
      const info = provider(deps, id).lookup(id);
      if (info === undefined) throw new ValidationError('invalid lease');
      sendVault(ctx, info);
    },
  }),
  // LIST sys/leases/lookup/<prefix>: the next segment of every live lease under the prefix, a
  // folder with its trailing slash (`creds/`) or a lease's own id, as the reference lists them.
  sysRoute(
    segmentsOnly('sys/leases/lookup/*prefix', 'List leases under a prefix', ['list']),
    {
      list: (ctx, deps) => {
        listOnly(ctx);
        const prefix = `${ctx.params.prefix ?? ''}/`;
        const keys = new Set<string>();
        for (const [mountPath, p] of deps.leaseProviders()) {
          if (!prefix.startsWith(mountPath) && !mountPath.startsWith(prefix)) continue;
          for (const id of p.list(prefix)) {
            const rest = id.slice(prefix.length);
            const slash = rest.indexOf('/');
            keys.add(slash < 0 ? rest : rest.slice(0, slash + 1));
          }
        }
        if (keys.size === 0) throw new NotFoundError('');
        sendVault(ctx, { keys: [...keys].sort() });
      },
    },
    { sudo: true, getAsList: true },
  ),
  sysRoute(LEASE_RENEW, { update: renew }),
  sysRoute(LEASE_RENEW_ID, { update: renew }),
  sysRoute(LEASE_REVOKE, { update: revoke }),
  sysRoute(LEASE_REVOKE_ID, { update: revoke }),
  sysRoute(
    segmentsOnly('sys/leases/revoke-prefix/*prefix', 'Revoke every lease under a prefix', [
      'update',
    ]),
    { update: revokePrefix(false) },
    { sudo: true },
  ),
  sysRoute(
    segmentsOnly(
      'sys/leases/revoke-force/*prefix',
      'Revoke every lease under a prefix, even where the engine cannot clean up',
      ['update'],
    ),
    { update: revokePrefix(true) },
    { sudo: true },
  ),
];

function describeBuiltin(name: 'default' | 'root'): string {
  if (name === 'root') return '';
  return (BUILTIN_POLICIES.default ?? [])
    .map(
      (r) =>
        `path "${r.path}" {\n    capabilities = [${r.capabilities.map((c) => `"${c}"`).join(', ')}]\n}`,
    )
    .join('\n\n');
}
