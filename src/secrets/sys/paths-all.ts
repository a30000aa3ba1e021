import type Router from '@koa/router';
import { secretsRouter } from '../request-path.js';
import { routerOf, sudoOf, unauthenticatedOf } from '../route.js';
import { APPROLE_ROUTES } from './approle.js';
import { AUTH_MOUNT_ROUTES } from './auth-mounts.js';
import { AUTH_TUNE_ROUTES } from './auth-tune.js';
import { HEALTH_ROUTE, SEAL_STATUS_ROUTE, storeProbe } from './health.js';
import { jwtHandlers } from './jwt.js';
import { OPENAPI_ROUTE } from './openapi-route.js';
import {
  LEASE_ROUTES,
  MOUNT_ROUTE,
  MOUNT_TUNE_ROUTE,
  MOUNTS_ROUTE,
  POLICIES_LEGACY_ROUTE,
  POLICIES_ROUTE,
  POLICY_LEGACY_ROUTE,
  POLICY_ROUTE,
  REMOUNT_ROUTE,
  type SysRoute,
  type SysRouteDeps,
} from './routes.js';
import { TOKEN_ROLE_ROUTES } from './token-roles.js';
import { TOKEN_ROUTES, TOKEN_TIDY_ROUTE } from './tokens.js';
import { USERPASS_ROUTES } from './userpass.js';

/**
 * Every path of the system backend (`sys/…`), of token authentication (`auth/token/…`) and of the
 * auth methods (`auth/:mount/…`) with its handlers, in the order the OpenAPI document lists them:
 * the router, the sudo list, the unauthenticated list and the OpenAPI document are all made from
 * this list (src/secrets/route.ts). The fields of the larger paths are declared in paths.ts, the
 * handlers beside their helpers in the route files. Paths other parts serve under `sys/` (the
 * audit page's) are handed in when the router is made (`SysRouteDeps.more`).
 */
export const SYS_PATHS: readonly SysRoute[] = [
  HEALTH_ROUTE,
  SEAL_STATUS_ROUTE,
  OPENAPI_ROUTE,
  MOUNTS_ROUTE,
  MOUNT_ROUTE,
  MOUNT_TUNE_ROUTE,
  POLICIES_ROUTE,
  POLICIES_LEGACY_ROUTE,
  POLICY_ROUTE,
  POLICY_LEGACY_ROUTE,
  REMOUNT_ROUTE,
  ...AUTH_MOUNT_ROUTES,
  ...AUTH_TUNE_ROUTES,
  ...LEASE_ROUTES,
  ...TOKEN_ROUTES,
  ...TOKEN_ROLE_ROUTES,
  TOKEN_TIDY_ROUTE,
  ...APPROLE_ROUTES,
  ...USERPASS_ROUTES,
];

/** The paths that need sudo besides their capability (the surface tests the request's path). */
export const SYS_SUDO: readonly RegExp[] = sudoOf(SYS_PATHS);

/**
 * The ACL patterns served without a token: the system backend's own (`sys/health`,
 * `sys/seal-status`, answered before any token is read) and the auth methods' logins (`auth/+/…`,
 * open where an auth method is enabled at the mount).
 */
export const SYS_UNAUTHENTICATED: readonly string[] = unauthenticatedOf(SYS_PATHS);

/** The router of `sys/*` and `auth/*`, made from the declarations. */
export function sysRoutes(deps: SysRouteDeps): Router {
  if (sudoOf(deps.more).length > 0 || unauthenticatedOf(deps.more).length > 0) {
    throw new Error(
      'a path served under sys/ by another part of Keel may be neither open nor sudo',
    );
  }
  const paths = [...SYS_PATHS, ...deps.more];
  const scope = { ...deps, paths, jwt: jwtHandlers(deps), storeAnswers: storeProbe(deps.core.db) };
  return routerOf(secretsRouter(), paths, scope);
}
