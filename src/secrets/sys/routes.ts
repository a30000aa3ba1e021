import type Router from '@koa/router';
import { multierror } from '../../http/errors.js';
import type { RouterContext } from '@koa/router';
import { secretsRouter } from '../request-path.js';
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
import { tokenRoutes } from './tokens.js';
import { openApiRoute } from './openapi-route.js';
import type { LeaseProvider } from './leases.js';
import {
  convertField,
  parseFields,
  type FieldData,
  type Fields,
  type PathSchema,
} from '../fields.js';
import {
  LEASE_LOOKUP,
  LEASE_RENEW,
  LEASE_RENEW_ID,
  LEASE_REVOKE,
  LEASE_REVOKE_ID,
  MOUNT,
  MOUNT_TUNE,
  POLICY,
  REMOUNT,
} from './paths.js';
import { authMountRoutes } from './auth-mounts.js';
import { authTuneRoutes } from './auth-tune.js';
import { appRoleRoutes } from './approle.js';
import { userpassRoutes } from './userpass.js';

export interface SysRouteDeps {
  core: Core;
  commands: SysCommands;
  queries: SysQueries;
  /** The engine types that can be mounted, with their declared paths. */
  engines: () => ReadonlyMap<string, SecretsEngine>;
  leaseProviders: () => ReadonlyMap<string, LeaseProvider>;
  metadata: (ctx: Context) => AuditMetadata;
  hierarchy: TokenHierarchy;
}

const normalizeMountPath = (p: string) => (p.endsWith('/') ? p : `${p}/`).replace(/^\/+/, '');

/** `sys/*` and `auth/token/*`: the parts of the reference's system backend that Keel serves. */
export function sysRoutes(deps: SysRouteDeps): Router {
  const { commands, queries } = deps;
  const r = secretsRouter();

  const mountAt = (path: string): MountRow => {
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

  // Before `sys/mounts/*path/tune`, which would take `auth/<path>` for a mount path.
  authTuneRoutes(r, deps);
  // Registered before `sys/mounts/*path`, which would take `pki/tune` for a mount path.
  r.get('/sys/mounts/*path/tune', (ctx) => {
    const m = mountAt(ctx.params.path ?? '');
    sendVault(ctx, tuneView(m));
  });
  r.post('/sys/mounts/*path/tune', async (ctx) => {
    const m = mountAt(ctx.params.path ?? '');
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
    await commands.tuneMount(
      m.path,
      { description: d.get('description') ?? m.description, config },
      deps.metadata(ctx),
    );
    sendVault(ctx, undefined);
  });

  openApiRoute(r, deps);

  r.get('/sys/mounts', (ctx) => {
    const all = Object.fromEntries(queries.mounts().map((m) => [m.path, mountView(m)]));
    sendVault(ctx, all);
  });
  r.get('/sys/mounts/*path', (ctx) => {
    const m = queries.mount(normalizeMountPath(ctx.params.path ?? ''));
    if (m === undefined) throw new ValidationError(`No secret engine mount at ${ctx.params.path}`);
    sendVault(ctx, mountView(m));
  });
  r.post('/sys/mounts/*path', async (ctx) => {
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
  });
  r.delete('/sys/mounts/*path', async (ctx) => {
    const path = normalizeMountPath(ctx.params.path ?? '');
    // Nothing mounted there (or it moved away): nothing to do, as the reference answers.
    if (queries.mount(path) !== undefined) await commands.disableMount(path, deps.metadata(ctx));
    sendVault(ctx, undefined);
  });
  // Needs sudo (surface.ts). The mount's leases are revoked first, as the reference does; its
  // accessor, and so everything the engine keeps for it, moves along.
  r.post('/sys/remount', async (ctx) => {
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
    await commands.moveMount(
      { path, type, accessor, description, config },
      to,
      () => queries.mounts().map((x) => x.path),
      deps.metadata(ctx),
    );
    // Done before the answer: no migration to poll (the reference's answer before 1.10).
    sendVault(ctx, undefined);
  });

  const listPolicies = (ctx: Context) => {
    const names = [...new Set(['default', ...queries.policyNames(), 'root'])].sort();
    sendVault(ctx, { keys: names, policies: names });
  };
  r.get('/sys/policies/acl', listPolicies);
  r.get('/sys/policy', listPolicies);
  r.get('/sys/policies/acl/:name', (ctx) => {
    const name = ctx.params.name!;
    const stored = queries.policy(name);
    if (stored !== undefined) return sendVault(ctx, { name, policy: stored.policy });
    if (name === 'default' || name === 'root') {
      return sendVault(ctx, { name, policy: describeBuiltin(name) });
    }
    throw new NotFoundError('');
  });
  const writePolicy = async (ctx: RouterContext) => {
    const name = ctx.params.name!;
    const d = parseFields(POLICY, requestData(ctx), { name });
    const policy = d.get('policy') ?? d.get('rules');
    if (policy === undefined) throw new ValidationError("'policy' parameter not supplied or empty");
    const rules = await parsePolicy(name, policy);
    await commands.writePolicy(name, policy, rules, deps.metadata(ctx));
    sendVault(ctx, undefined);
  };
  r.post('/sys/policies/acl/:name', writePolicy);
  const deletePolicy = async (ctx: RouterContext) => {
    await commands.deletePolicy(ctx.params.name!, deps.metadata(ctx));
    sendVault(ctx, undefined);
  };
  r.delete('/sys/policies/acl/:name', deletePolicy);
  // The older path, still served by the reference: the document is read back as `rules`.
  r.get('/sys/policy/:name', (ctx) => {
    const name = ctx.params.name!;
    const stored = queries.policy(name);
    if (stored !== undefined) return sendVault(ctx, { name, rules: stored.policy });
    if (name === 'default' || name === 'root')
      return sendVault(ctx, { name, rules: describeBuiltin(name) });
    throw new NotFoundError('');
  });
  r.post('/sys/policy/:name', writePolicy);
  r.delete('/sys/policy/:name', deletePolicy);

  authMountRoutes(r, deps);
  appRoleRoutes(r, deps);
  userpassRoutes(r, deps);

  tokenRoutes(r, deps);

  const provider = (leaseId: string): LeaseProvider => {
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
  r.post('/sys/leases/lookup', (ctx) => {
    const id = leaseId(ctx, leaseFields(ctx, LEASE_LOOKUP));
    const info = provider(id).lookup(id);
    if (info === undefined) throw new ValidationError('invalid lease');
    sendVault(ctx, info);
  });
  // LIST sys/leases/lookup/<prefix>: the next segment of every live lease under the prefix, a
  // folder with its trailing slash (`creds/`) or a lease's own id, as the reference lists them.
  r.get('/sys/leases/lookup/*prefix', (ctx) => {
    if (ctx.state.list !== true)
      throw new KeelError('unsupported', multierror('unsupported operation'));
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
  });
  const renew = async (ctx: RouterContext) => {
    const d = leaseFields(ctx, ctx.params.id === undefined ? LEASE_RENEW : LEASE_RENEW_ID);
    const id = leaseId(ctx, d);
    // A null increment (hvac's renew_lease default) is no increment, as the reference reads it.
    const increment = d.get('increment');
    const info = await provider(id).renew(id, increment, deps.metadata(ctx));
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
  r.post('/sys/leases/renew', renew);
  r.post('/sys/leases/renew/*id', renew);
  const revoke = async (ctx: RouterContext) => {
    const id = leaseId(
      ctx,
      leaseFields(ctx, ctx.params.id === undefined ? LEASE_REVOKE : LEASE_REVOKE_ID),
    );
    await provider(id).revoke(id, deps.metadata(ctx));
    sendVault(ctx, undefined);
  };
  r.post('/sys/leases/revoke', revoke);
  r.post('/sys/leases/revoke/*id', revoke);
  const revokePrefix = (force: boolean) => async (ctx: RouterContext) => {
    const prefix = ctx.params.prefix ?? '';
    for (const [mountPath, p] of deps.leaseProviders()) {
      if (prefix.startsWith(mountPath) || mountPath.startsWith(prefix))
        await p.revokePrefix(prefix, deps.metadata(ctx), force);
    }
    sendVault(ctx, undefined);
  };
  // Both need sudo (surface.ts).
  r.post('/sys/leases/revoke-prefix/*prefix', revokePrefix(false));
  r.post('/sys/leases/revoke-force/*prefix', revokePrefix(true));
  return r;
}

function describeBuiltin(name: 'default' | 'root'): string {
  if (name === 'root') return '';
  return (BUILTIN_POLICIES.default ?? [])
    .map(
      (r) =>
        `path "${r.path}" {\n    capabilities = [${r.capabilities.map((c) => `"${c}"`).join(', ')}]\n}`,
    )
    .join('\n\n');
}
