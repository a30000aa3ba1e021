import type { RouterContext } from '@koa/router';
import { createHash } from 'node:crypto';
import { ValidationError } from '../../core/errors.js';
import { requestData, sendVault } from '../../http/vault.js';
import { parseFields, segmentsOnly } from '../fields.js';
import { AUTH_MOUNT } from './paths.js';
import { sysRoute, type SysRoute, type SysRouteDeps } from './routes.js';
import type { AuthMountRow } from './projection.js';
import { checkMountPath } from '../names.js';
import { authMountStream, type AuthMethodType } from './events.js';

import { authMountDecider } from './commands.js';
import { TOKEN_DESCRIPTION, authTuneOf } from './auth-tune.js';

const isAuthMethodType = (t: string): t is AuthMethodType =>
  t === 'approle' || t === 'jwt' || t === 'userpass';

const normalize = (p: string) => (p.endsWith('/') ? p : `${p}/`).replace(/^\/+/, '');

/** What `sys/auth` lists: the token store and every enabled method, with its tune. */
function authMethodViews(deps: SysRouteDeps) {
  // A stable accessor per installation: derived from the keyring, never random per start.
  const accessor = `auth_token_${createHash('sha256')
    .update(deps.core.sealer.hmac('auth/token/'))
    .digest('hex')
    .slice(0, 8)}`;
  const tokenMount = {
    type: 'token',
    description: TOKEN_DESCRIPTION,
    accessor,
    config: {
      default_lease_ttl: 0,
      max_lease_ttl: 0,
      force_no_cache: false,
      token_type: 'default-service',
    },
    options: null,
    local: false,
    seal_wrap: false,
    external_entropy_access: false,
  };
  /** What `sys/auth` shows of a method's tune: TTLs as set (0: the system's), as the reference. */
  const tuned = (path: string) => {
    const { description, config } = authTuneOf(deps.queries, path);
    return {
      description,
      config: {
        ...tokenMount.config,
        default_lease_ttl: config.default_lease_ttl,
        max_lease_ttl: config.max_lease_ttl,
        ...(config.listing_visibility === ''
          ? {}
          : { listing_visibility: config.listing_visibility }),
      },
    };
  };
  const methodView = (m: AuthMountRow) => ({
    ...tokenMount,
    type: m.type,
    accessor: m.accessor,
    ...tuned(m.path),
  });
  return {
    'token/': { ...tokenMount, ...tuned('token/') },
    ...Object.fromEntries(deps.queries.authMounts().map((m) => [m.path, methodView(m)])),
  };
}

/**
 * `sys/auth`: the auth methods. The token store at `token/` is always enabled (as in the
 * reference, which lists it even on a fresh server and refuses to disable it); AppRole, JWT and
 * userpass can be enabled at one path segment (`approle.ts`, `jwt.ts`, `userpass.ts`); any other
 * method is refused, naming it. Each is tuned at `sys/auth/:path/tune` (`auth-tune.ts`).
 */
export const AUTH_MOUNT_ROUTES: readonly SysRoute[] = [
  sysRoute(segmentsOnly('sys/auth', 'The enabled auth methods', ['read']), {
    read: (ctx, deps) => sendVault(ctx, authMethodViews(deps)),
  }),
  sysRoute(AUTH_MOUNT, { update: enable, delete: disable }, { sudo: true }),
];

/** Enables an auth method at a path. */
async function enable(ctx: RouterContext, deps: SysRouteDeps): Promise<void> {
  const path = normalize(ctx.params.path ?? '');
  const d = parseFields(AUTH_MOUNT, requestData(ctx), { path });
  if (path === 'token/') throw new ValidationError('path is already in use at token/');
  const type = d.get('type');
  if (type === undefined || type === '') throw new ValidationError('missing required field "type"');
  if (!isAuthMethodType(type))
    throw new ValidationError(
      `plugin not found in the catalog: ${type} (Keel serves the token, approle, jwt and userpass auth methods)`,
    );
  checkMountPath(path);
  if (path.split('/').length !== 2)
    throw new ValidationError(
      `invalid auth path "${path}": Keel enables auth methods at one path segment`,
    );
  const taken = path === 'token/' || deps.queries.authMount(path) !== undefined;
  if (taken) throw new ValidationError(`path is already in use at ${path}`);
  await deps.core.handler.handle(
    authMountStream(path),
    authMountDecider,
    (s) => {
      if (s.exists) throw new ValidationError(`path is already in use at ${path}`);
      return [
        {
          type: 'AuthMethodEnabled' as const,
          data: {
            path,
            type,
            accessor: `auth_${type}_${deps.core.ids.secret(8).toLowerCase()}`,
            description: d.get('description') ?? '',
          },
        },
      ];
    },
    deps.metadata(ctx),
  );
  sendVault(ctx, undefined);
}

/** Disables the auth method at a path, revoking the tokens it made. */
async function disable(ctx: RouterContext, deps: SysRouteDeps): Promise<void> {
  const path = normalize(ctx.params.path ?? '');
  if (path === 'token/') throw new ValidationError('token credential backend cannot be disabled');
  const m = deps.queries.authMount(path);
  // Nothing enabled there: nothing to disable, as the reference answers for an unused path.
  if (m === undefined) return sendVault(ctx, undefined);
  // The tokens the method made go first, with their children and leases, as the reference;
  // all in one command, so a login the method answered meanwhile cannot outlive it.
  const metadata = deps.metadata(ctx);
  await deps.core.handler.atomically(() => {
    for (const accessor of deps.queries.tokensOfAuthMount(m.accessor))
      deps.hierarchy.revokeSync(accessor, metadata, 'revoked');
    deps.core.handler.handleSync(
      authMountStream(path),
      authMountDecider,
      (s) =>
        s.exists
          ? [{ type: 'AuthMethodDisabled' as const, data: { path, accessor: m.accessor } }]
          : [],
      metadata,
    );
  });
  sendVault(ctx, undefined);
}
