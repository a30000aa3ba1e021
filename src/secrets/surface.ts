import type Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import { ForbiddenError, KeelError } from '../core/errors.js';
import type { AuditMetadata } from '../core/events.js';
import { parseBody, readRawBody } from '../http/body.js';
import { multierror, vaultErrors } from '../http/errors.js';
import { LIST_MARKER_HEADER } from '../http/list-method.js';
import type { Mount, SecretsToken } from '../http/types.js';
import { parseGoBool } from '../http/vault.js';
import type { Core, SecretsEngine } from '../context.js';
import type { Capability, PathRule } from './sys/acl.js';
import { BUILTIN_POLICIES, capabilitiesFor } from './sys/acl.js';
import type { SysQueries } from './sys/projection.js';
import { presentedToken } from './sys/routes.js';

export interface SecretsSurfaceDeps {
  core: Core;
  queries: SysQueries;
  sys: Router;
  engines: ReadonlyMap<string, SecretsEngine>;
  /** Whether the answering process stands by (another leads; `--workers`, ADR 0060). */
  standby: () => boolean;
}

/** Paths served without a token, as the reference does. */
const UNAUTHENTICATED = new Set(['sys/health', 'sys/seal-status']);

/**
 * The reference's status for `sys/health`: `activecode` (200) on the leading process,
 * `standbycode` (429) on one standing by unless `standbyok` asks for the active code.
 */
function healthStatus(ctx: Context, standby: boolean): number {
  const code = (name: string, fallback: number): number => {
    const raw = ctx.query[name];
    if (typeof raw !== 'string' || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 100 || n > 599) {
      throw new KeelError('validation', multierror(`${name}: not a valid status code: ${raw}`));
    }
    return n;
  };
  const active = code('activecode', 200);
  if (!standby) return active;
  const standbyOk =
    typeof ctx.query.standbyok === 'string' && parseGoBool(ctx.query.standbyok, 'standbyok');
  return standbyOk ? active : code('standbycode', 429);
}

/** System paths that need sudo besides their capability. */
const SYS_SUDO: readonly RegExp[] = [/^sys\/leases\/revoke-prefix\//];

const denied = () => new ForbiddenError('permission denied');
const invalidToken = () =>
  new KeelError('unauthenticated', multierror('permission denied', 'invalid token'));

/**
 * Everything under `/v1`: body parsing, the token, the ACL, then `sys/`, `auth/token/` or the
 * engine mounted at the longest matching path.
 */
export function secretsSurface(deps: SecretsSurfaceDeps): Middleware {
  const { core, queries } = deps;
  const errors = vaultErrors(core.logger);
  const sysDispatch = deps.sys.routes() as Middleware;
  const sysAllowed = deps.sys.allowedMethods() as Middleware;
  const engineRouters = new Map<
    string,
    { router: Router; dispatch: Middleware; allowed: Middleware }
  >();

  const routerFor = (mount: Mount, engine: SecretsEngine) => {
    const key = `${mount.path}|${mount.accessor}`;
    let entry = engineRouters.get(key);
    if (entry === undefined) {
      const router = engine.routes(mount);
      entry = {
        router,
        dispatch: router.routes() as Middleware,
        allowed: router.allowedMethods() as Middleware,
      };
      engineRouters.set(key, entry);
    }
    return entry;
  };

  const healthView = () => ({
    initialized: true,
    sealed: false,
    standby: deps.standby(),
    performance_standby: false,
    replication_performance_mode: 'disabled',
    replication_dr_mode: 'disabled',
    server_time_utc: Math.floor(core.clock.now().getTime() / 1000),
    version: 'keel',
    enterprise: false,
    cluster_name: 'keel',
    cluster_id: 'keel',
  });

  return async (ctx: Context, next: Next) =>
    errors(ctx, async () => {
      const path = ctx.path.replace(/^\/v1\/?/, '');
      const marker = ctx.get(LIST_MARKER_HEADER);
      const listParam =
        typeof ctx.query.list === 'string' ? parseGoBool(ctx.query.list, 'list') : false;
      ctx.state.list = ctx.method === 'GET' && (marker === 'LIST' || listParam);
      if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method)) {
        const raw = await readRawBody(ctx, core.config.bodyLimitBytes);
        ctx.request.rawBody = raw;
        ctx.request.body = parseBody(raw, ctx.get('content-type'), 'vault');
      }

      if (UNAUTHENTICATED.has(path)) {
        if (ctx.method !== 'GET' && ctx.method !== 'HEAD')
          throw new KeelError('unsupported', multierror('unsupported operation'));
        const health = path === 'sys/health' ? healthView() : undefined;
        ctx.status = health === undefined ? 200 : healthStatus(ctx, health.standby);
        ctx.body = JSON.stringify(
          health !== undefined
            ? health
            : {
                type: 'shamir',
                initialized: true,
                sealed: false,
                t: 1,
                n: 1,
                progress: 0,
                nonce: '',
                version: 'keel',
                migration: false,
                recovery_seal: false,
                storage_type: 'keel',
              },
        );
        ctx.set('Content-Type', 'application/json');
        return;
      }

      ctx.state.token = authenticate(ctx);
      const operation = operationOf(ctx);
      const aclPath = operation === 'list' && !path.endsWith('/') ? `${path}/` : path;

      if (path.startsWith('sys/') || path.startsWith('auth/token/')) {
        authorize(
          ctx.state.token,
          aclPath,
          operation,
          SYS_SUDO.some((re) => re.test(path)),
        );
        ctx.newRouterPath = `/${path}`;
        await sysDispatch(ctx, async () => undefined);
        if (ctx.status === 404 && ctx.body === undefined) {
          await sysAllowed(ctx, async () => undefined);
          if (ctx.status === 404 && ctx.body === undefined)
            throw new KeelError('not_found', multierror('unsupported path'));
        }
        return;
      }

      const mount = queries.mountFor(path);
      if (mount === undefined) {
        throw new KeelError('not_found', `no handler for route "${path}". route entry not found.`);
      }
      const engine = deps.engines.get(mount.type);
      const relative = path.slice(mount.path.length);
      const sudo = engine?.sudo?.some((re) => re.test(relative)) ?? false;
      authorize(ctx.state.token, aclPath, operation, sudo);
      ctx.state.mount = {
        path: mount.path,
        type: mount.type,
        accessor: mount.accessor,
        description: mount.description,
      };
      if (engine === undefined) throw new KeelError('not_found', multierror('unsupported path'));
      const { dispatch, allowed } = routerFor(ctx.state.mount, engine);
      ctx.newRouterPath = `/${relative}`;
      await dispatch(ctx, async () => undefined);
      if (ctx.status === 404 && ctx.body === undefined) {
        await allowed(ctx, async () => undefined);
        if ((ctx.status as number) === 405)
          throw new KeelError('unsupported', multierror('unsupported operation'));
        throw new KeelError('not_found', multierror('unsupported path'));
      }
      void next;
    });

  function authenticate(ctx: Context): SecretsToken {
    const token = presentedToken(ctx);
    if (token === undefined || token === '') throw denied();
    const row = queries.tokenByHmac(core.sealer.hmac(token));
    if (row === undefined) throw invalidToken();
    if (row.expiresAt !== null && Date.parse(row.expiresAt) <= core.clock.now().getTime())
      throw invalidToken();
    return {
      accessor: row.accessor,
      displayName: row.displayName,
      policies: row.policies,
      expiresAt: row.expiresAt,
    };
  }

  function authorize(
    token: SecretsToken,
    path: string,
    operation: Capability,
    needsSudo: boolean,
  ): void {
    if (token.policies.includes('root')) return;
    const policies: (readonly PathRule[])[] = token.policies.map(
      (name) => queries.policy(name)?.rules ?? BUILTIN_POLICIES[name] ?? [],
    );
    const caps = capabilitiesFor(policies, path);
    // A write is allowed with either create or update; see docs/api/secrets-sys.md.
    const ok =
      operation === 'update'
        ? caps.has('update') || caps.has('create')
        : operation === 'patch'
          ? caps.has('patch') || caps.has('update')
          : caps.has(operation);
    if (!ok || (needsSudo && !caps.has('sudo'))) throw denied();
  }
}

function operationOf(ctx: Context): Capability {
  switch (ctx.method) {
    case 'GET':
    case 'HEAD':
      return ctx.state.list === true ? 'list' : 'read';
    case 'POST':
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      throw new KeelError('unsupported', multierror('unsupported operation'));
  }
}

/** Audit metadata for a `/v1` request. */
export function secretsMetadata(ctx: Context): AuditMetadata {
  const token = ctx.state.token;
  return {
    actor: token === undefined ? null : { accessor: token.accessor, name: token.displayName },
    requestId: ctx.state.requestId,
    remoteAddress: ctx.request.ip || null,
  };
}
