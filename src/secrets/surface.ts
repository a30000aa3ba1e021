import type Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import { ForbiddenError, KeelError, ValidationError } from '../core/errors.js';
import type { AuditMetadata } from '../core/events.js';
import { parseBody, readRawBody } from '../http/body.js';
import { multierror, vaultErrors } from '../http/errors.js';
import { LIST_MARKER_HEADER } from '../http/list-method.js';
import { RateLimiter } from '../http/rate-limit.js';
import type { Mount, SecretsToken } from '../http/types.js';
import { parseGoBool } from '../http/vault.js';
import type { Core, SecretsEngine } from '../context.js';
import type { Capability, PathRule } from './sys/acl.js';
import { BUILTIN_POLICIES, capabilitiesFor, pathMatches } from './sys/acl.js';
import type { SysQueries } from './sys/projection.js';
import { allowedFrom } from './sys/approle.js';
import { createSysCommands } from './sys/commands.js';
import { presentedToken, tokenHierarchy } from './sys/tokens.js';
import { canonicalPath, ensureRouted, routerPath, unsupportedPath } from './request-path.js';
import { rememberMatches } from '../http/route-match.js';
import { requestMetadata } from '../http/request-id.js';
import { SYS_SUDO, SYS_UNAUTHENTICATED } from './sys/paths-all.js';

export interface SecretsSurfaceDeps {
  core: Core;
  queries: SysQueries;
  sys: Router;
  engines: ReadonlyMap<string, SecretsEngine>;
  /** Whether the answering process stands by (another leads; `--workers`, ADR 0080). */
  standby: () => boolean;
}

const denied = () => new ForbiddenError('permission denied');
const invalidToken = () =>
  new KeelError('unauthenticated', multierror('permission denied', 'invalid token'));

/**
 * Everything under `/v1`: body parsing, the token, the ACL, then `sys/`, `auth/token/` or the
 * engine mounted at the longest matching path.
 */
export function secretsSurface(deps: SecretsSurfaceDeps): Middleware {
  const { core, queries } = deps;
  const commands = createSysCommands(core);
  const hierarchy = tokenHierarchy(core.handler, commands, queries);
  const errors = vaultErrors(core.logger);
  const anonymous = new RateLimiter(core.clock, core.config.rateLimit.perSecond, 1000);
  const sysDispatch = rememberMatches(deps.sys).routes() as Middleware;
  const engineRouters = new Map<string, { router: Router; dispatch: Middleware }>();

  const routerFor = (mount: Mount, engine: SecretsEngine) => {
    const key = `${mount.path}|${mount.accessor}`;
    let entry = engineRouters.get(key);
    if (entry === undefined) {
      const router = rememberMatches(engine.routes(mount));
      entry = { router, dispatch: router.routes() as Middleware };
      engineRouters.set(key, entry);
    }
    return entry;
  };

  // The system backend's paths declared unauthenticated: its own (health, seal status) and the
  // auth methods' logins (sys/paths-all.ts).
  const sysOpen = SYS_UNAUTHENTICATED.filter((p) => p.startsWith('sys/'));
  const logins = SYS_UNAUTHENTICATED.filter((p) => p.startsWith('auth/'));

  return async (ctx: Context, next: Next) =>
    errors(ctx, async () => {
      // A client that asks for its answer wrapped means no one on the way should see the secret
      // in it: Keel does not wrap, so it refuses before anything is read or done.
      if (ctx.get('x-vault-wrap-ttl') !== '')
        throw new ValidationError(
          'response wrapping (X-Vault-Wrap-TTL) is not supported by Keel: the response would not be wrapped',
        );
      const path = canonicalPath(ctx.path);
      const marker = ctx.get(LIST_MARKER_HEADER);
      const listParam =
        typeof ctx.query.list === 'string' ? parseGoBool(ctx.query.list, 'list') : false;
      ctx.state.list = ctx.method === 'GET' && (marker === 'LIST' || listParam);
      const self = selfAuthenticated(path);
      if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method)) {
        const raw = await readRawBody(ctx, core.config.bodyLimitBytes);
        ctx.request.rawBody = raw;
        // A self-authenticated path reads its own body (ACME: a JWS, answered in its dialect).
        if (self === undefined) ctx.request.body = parseBody(raw, ctx.get('content-type'), 'vault');
      }
      if (self !== undefined) {
        ctx.state.mount = self.mount;
        const { router, dispatch } = routerFor(self.mount, self.engine);
        const routed = routerPath(self.relative);
        ctx.newRouterPath = routed;
        // PUT is POST here too; a method the path does not take is 405, as on every other path
        // (before any JWS is read).
        if (ctx.method === 'PUT') ctx.method = 'POST';
        ensureRouted(router, routed, ctx.method);
        await dispatch(ctx, async () => undefined);
        if (ctx.status === 404 && ctx.body === undefined)
          throw new KeelError('not_found', multierror('unsupported path'));
        return;
      }

      // The system backend's own open paths are answered before any token is read or any rate
      // limit taken, so that a load balancer's probe is never refused for want of one.
      if (sysOpen.some((p) => pathMatches(p, path))) {
        ctx.state.standby = deps.standby();
        const routed = routerPath(path);
        ensureRouted(deps.sys, routed, ctx.method);
        ctx.newRouterPath = routed;
        await sysDispatch(ctx, async () => undefined);
        return;
      }

      // PUT is POST on every path, as the reference treats both as the update operation.
      if (ctx.method === 'PUT') ctx.method = 'POST';
      const operation = operationOf(ctx);
      // The reference checks a list against the path with its trailing slash.
      const aclPath = operation === 'list' ? `${path}/` : path;
      const isSys = path.startsWith('sys/') || path.startsWith('auth/');
      // An auth method's login takes no token (the reference's unauthenticated login paths).
      const login = isSys && isLoginPath(path);
      const mount = isSys ? undefined : queries.mountFor(path);
      const engine = mount === undefined ? undefined : deps.engines.get(mount.type);
      // What relying parties fetch without a token (the engine's declared list, the reference's
      // PathsSpecial.Unauthenticated); a valid token sent there is still recorded.
      const open =
        mount !== undefined &&
        (engine?.unauthenticated?.some((p) => pathMatches(p, aclPath.slice(mount.path.length))) ??
          false);
      ctx.state.token = open || login ? authenticateIfValid(ctx) : authenticate(ctx);
      if ((open || login) && ctx.state.token === undefined) limitAnonymous(ctx, path);
      // A token with limited uses spends one on every request it authorizes, answered or refused;
      // the last revokes it once the request is over (the reference's deferred revocation).
      const token = ctx.state.token;
      const usesLeft = open || login || token === undefined ? 0 : await spendUse(ctx, token);
      try {
        await route(ctx, { path, aclPath, operation, isSys, login, open, mount, engine });
      } finally {
        if (usesLeft < 0) await hierarchy.revoke(token!.accessor, secretsMetadata(ctx), 'used up');
      }
      void next;
    });

  /** A use of the request's token, when its uses are limited: the uses left after it. */
  async function spendUse(ctx: Context, token: SecretsToken): Promise<number> {
    // A token made without a limit never gets one: no need to read its row again.
    if (!token.usesLimited) return 0;
    const row = queries.tokenByAccessor(token.accessor);
    if (row === undefined || row.numUses === 0) return 0;
    return commands.useToken(token.accessor, secretsMetadata(ctx));
  }

  /** The request, authenticated: `sys/`, `auth/`, or the engine mounted at its path. */
  async function route(
    ctx: Context,
    r: {
      path: string;
      aclPath: string;
      operation: Capability;
      isSys: boolean;
      login: boolean;
      open: boolean;
      mount: ReturnType<SysQueries['mountFor']>;
      engine: SecretsEngine | undefined;
    },
  ): Promise<void> {
    const { path, aclPath, operation, isSys, login, open, mount, engine } = r;
    if (isSys) {
      const routed = routerPath(path);
      ensureRouted(deps.sys, routed, ctx.method);
      ctx.newRouterPath = routed;
      ctx.state.sudo = login
        ? false
        : authorize(
            ctx.state.token,
            aclPath,
            operation,
            SYS_SUDO.some((re) => re.test(path)),
          );
      await sysDispatch(ctx, async () => undefined);
      return;
    }

    if (mount === undefined) {
      throw new KeelError('not_found', `no handler for route "${path}". route entry not found.`);
    }
    if (engine === undefined) throw unsupportedPath();
    ctx.state.mount = {
      path: mount.path,
      type: mount.type,
      accessor: mount.accessor,
      description: mount.description,
    };
    const relative = path.slice(mount.path.length);
    const { router, dispatch } = routerFor(ctx.state.mount, engine);
    const routed = routerPath(relative);
    ensureRouted(router, routed, ctx.method);
    ctx.newRouterPath = routed;
    const sudo = engine.sudo?.some((re) => re.test(relative)) ?? false;
    ctx.state.sudo = open ? false : authorize(ctx.state.token, aclPath, operation, sudo);
    await dispatch(ctx, async () => undefined);
  }

  /**
   * A login path an auth method declares unauthenticated (`auth/<path>/login`, userpass's
   * `auth/<path>/login/<username>`), where a method is enabled at `<path>`.
   */
  function isLoginPath(path: string): boolean {
    if (!logins.some((p) => pathMatches(p, path))) return false;
    return queries.authMount(`${path.split('/')[1]}/`) !== undefined;
  }

  /** An engine path its engine declares unauthenticated (ACME), with its mount. */
  function selfAuthenticated(path: string) {
    const mount = queries.mountFor(path);
    const engine = mount === undefined ? undefined : deps.engines.get(mount.type);
    if (mount === undefined || engine?.selfAuthenticated === undefined) return undefined;
    const relative = path.slice(mount.path.length);
    if (!engine.selfAuthenticated.some((re) => re.test(relative))) return undefined;
    const view: Mount = {
      path: mount.path,
      type: mount.type,
      accessor: mount.accessor,
      description: mount.description,
    };
    return { mount: view, engine, relative };
  }

  /** Callers without a token (fetch paths, OCSP) share the kernel's rate limit, per address. */
  function limitAnonymous(ctx: Context, path: string): void {
    if (!core.config.rateLimit.enabled) return;
    const decision = anonymous.take(`ip:${ctx.request.ip}`);
    if (!decision.ok)
      throw new KeelError('rate_limited', `request path "${path}": rate limit quota exceeded`, {
        headers: { 'Retry-After': String(Math.ceil(decision.resetSeconds)) },
      });
  }

  function authenticate(ctx: Context): SecretsToken {
    const token = presentedToken(ctx);
    if (token === undefined || token === '') throw denied();
    const found = validToken(token, ctx.request.ip);
    if (found === undefined) throw invalidToken();
    return found;
  }

  function authenticateIfValid(ctx: Context): SecretsToken | undefined {
    const token = presentedToken(ctx);
    return token === undefined || token === '' ? undefined : validToken(token, ctx.request.ip);
  }

  /** The token, if it is live, has uses left, and may be used from `ip` (its bound CIDRs). */
  function validToken(token: string, ip: string): SecretsToken | undefined {
    const row = queries.tokenByHmac(core.sealer.hmac(token));
    if (row === undefined) return undefined;
    if (row.expiresAt !== null && Date.parse(row.expiresAt) <= core.clock.now().getTime())
      return undefined;
    if (row.usesLeft < 0 || !allowedFrom(ip, row.boundCidrs)) return undefined;
    return {
      accessor: row.accessor,
      displayName: row.displayName,
      policies: row.policies,
      expiresAt: row.expiresAt,
      usesLimited: row.numUses !== 0,
    };
  }

  /** Throws unless allowed; answers whether the token holds sudo on the path (root does). */
  function authorize(
    token: SecretsToken | undefined,
    path: string,
    operation: Capability,
    needsSudo: boolean,
  ): boolean {
    if (token === undefined) throw denied();
    if (token.policies.includes('root')) return true;
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
    return caps.has('sudo');
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
  return requestMetadata(
    ctx,
    token === undefined ? null : { accessor: token.accessor, name: token.displayName },
  );
}
