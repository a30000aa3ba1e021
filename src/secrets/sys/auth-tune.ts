import type { RouterContext } from '@koa/router';
import { ValidationError } from '../../core/errors.js';
import { requestData, sendVault } from '../../http/vault.js';
import { convertField, declarePath, parseFields } from '../fields.js';
import { authMountDecider } from './commands.js';
import type { AuthTuneConfig } from './events.js';
import { authTuneStream } from './events.js';
import { AUTH_TUNE, AUTH_TUNE_REFUSED } from './paths.js';
import { mountTtls, type MountTtls, type SysQueries, type TokenRow } from './projection.js';
import { sysRoute, type SysRoute, type SysRouteDeps } from './routes.js';

export const TOKEN_DESCRIPTION = 'token based credentials';

const UNTUNED: AuthTuneConfig = { default_lease_ttl: 0, max_lease_ttl: 0, listing_visibility: '' };

const normalize = (p: string) => (p.endsWith('/') ? p : `${p}/`).replace(/^\/+/, '');

/** The TTLs tokens of the auth method at `path` get (its tune, else the system's 768h). */
export function authTtls(queries: SysQueries, path: string): MountTtls {
  return mountTtls(queries.authTune(path)?.config ?? UNTUNED);
}

/** The TTLs of the method that made a token: its auth method's, else the token store's. */
export function tokenTtls(queries: SysQueries, row: TokenRow): MountTtls {
  const method =
    row.authMount === null
      ? undefined
      : queries.authMounts().find((m) => m.accessor === row.authMount);
  return authTtls(queries, method?.path ?? 'token/');
}

/** The tune of the method at `path` as stored (TTLs 0 for the system's). */
export function authTuneOf(queries: SysQueries, path: string) {
  const tuned = queries.authTune(path);
  return {
    description:
      tuned?.description ??
      (path === 'token/' ? TOKEN_DESCRIPTION : (queries.authMount(path)?.description ?? '')),
    config: tuned?.config ?? UNTUNED,
  };
}

/**
 * `sys/auth/:path/tune` and `sys/mounts/auth/:path/tune`: read and tune an auth method (or the
 * token store at `token/`). `default_lease_ttl` and `max_lease_ttl` bound the tokens its logins
 * (or `auth/token/create`) make from then on; `description` and `listing_visibility` are kept and
 * shown. Every other setting the reference tunes is refused, naming it.
 */
export const AUTH_TUNE_ROUTES: readonly SysRoute[] = [
  sysRoute(AUTH_TUNE, { read, update: write }, { sudo: true }),
  // The same under `sys/mounts/auth/`, where it needs no sudo.
  sysRoute(declarePath({ ...AUTH_TUNE, pattern: 'sys/mounts/auth/*path/tune' }), {
    read,
    update: write,
  }),
];

const methodPath = (queries: SysQueries, raw: string | undefined): string => {
  const path = normalize(raw ?? '');
  if (path !== 'token/' && queries.authMount(path) === undefined)
    throw new ValidationError(`cannot fetch sysview for path "${path}"`);
  return path;
};

function read(ctx: RouterContext, { queries }: SysRouteDeps): void {
  const path = methodPath(queries, ctx.params.path);
  const { description, config } = authTuneOf(queries, path);
  const ttls = mountTtls(config);
  sendVault(ctx, {
    default_lease_ttl: ttls.defaultTtl,
    max_lease_ttl: ttls.maxTtl,
    force_no_cache: false,
    description,
    token_type: 'default-service',
    ...(config.listing_visibility === '' ? {} : { listing_visibility: config.listing_visibility }),
  });
}

async function write(ctx: RouterContext, deps: SysRouteDeps): Promise<void> {
  const { queries } = deps;
  const path = methodPath(queries, ctx.params.path);
  const raw = requestData(ctx);
  for (const [field, why] of Object.entries(AUTH_TUNE_REFUSED))
    if (raw[field] !== undefined && raw[field] !== null)
      throw new ValidationError(`tuning ${field} is not supported by Keel: ${why}`);
  const d = parseFields(AUTH_TUNE, raw, { path: ctx.params.path ?? '' });
  const tokenType = d.get('token_type') ?? '';
  if (!['', 'default-service', 'service'].includes(tokenType))
    throw new ValidationError(
      `tuning token_type to ${JSON.stringify(tokenType)} is not supported by Keel: its methods make service tokens`,
    );
  const current = authTuneOf(queries, path);
  // Empty or absent keeps the current value; `system` (or 0) is the system's, as the reference reads these.
  const ttl = (field: 'default_lease_ttl' | 'max_lease_ttl'): number => {
    const v = d.get(field);
    if (v === undefined || v === '') return current.config[field];
    return v === 'system' ? 0 : convertField('duration', field, v);
  };
  const visibility = d.get('listing_visibility') ?? current.config.listing_visibility;
  if (visibility !== '' && visibility !== 'unauth' && visibility !== 'hidden')
    throw new ValidationError(`invalid listing_visibility ${JSON.stringify(visibility)}`);
  const config: AuthTuneConfig = {
    default_lease_ttl: ttl('default_lease_ttl'),
    max_lease_ttl: ttl('max_lease_ttl'),
    listing_visibility: visibility,
  };
  const { defaultTtl, maxTtl } = mountTtls(config);
  if (maxTtl < defaultTtl)
    throw new ValidationError(
      `backend max lease TTL of ${maxTtl} would be less than backend default lease TTL of ${defaultTtl}`,
    );
  const description = d.get('description') ?? current.description;
  await deps.core.handler.handle(
    authTuneStream(path),
    authMountDecider,
    () => {
      // Checked where it is decided: the method may have been disabled since.
      if (path !== 'token/' && queries.authMount(path) === undefined)
        throw new ValidationError(`cannot fetch sysview for path "${path}"`);
      return [{ type: 'AuthMethodTuned' as const, data: { path, description, config } }];
    },
    deps.metadata(ctx),
  );
  sendVault(ctx, undefined);
}
