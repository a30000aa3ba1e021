import type { Context } from 'koa';
import { param } from '../routes/common.js';
import { AcmeProblem, unauthorized } from './problem.js';
import type { AcmeService } from './service.js';

/** The four places an ACME directory lives, relative to the mount (as the reference has them). */
export const DIRECTORY_PREFIXES = [
  '',
  '/roles/:role',
  '/issuer/:issuer_ref',
  '/issuer/:issuer_ref/roles/:role',
] as const;

/** An ACME path under a directory prefix, relative to the mount: `roles/:role/acme/new-order`. */
export const acmeAt = (prefix: (typeof DIRECTORY_PREFIXES)[number], path: string): string =>
  `${prefix.slice(1)}${prefix ? '/' : ''}acme/${path}`;

/**
 * The ACME protocol paths, relative to the mount: served without a token (a JWS signed by the
 * account key authenticates them). `acme/new-eab` is an operator path and needs a token.
 */
export const ACME_UNAUTHENTICATED: readonly RegExp[] = [
  /^(?:roles\/[^/]+\/|issuer\/[^/]+\/(?:roles\/[^/]+\/)?)?acme\/(?!new-eab$).+$/,
];

/** Which directory a request came through. */
export interface Directory {
  role?: string;
  issuerRef?: string;
}

export function directoryOf(ctx: Context): Directory {
  const role = param(ctx, 'role');
  const issuerRef = param(ctx, 'issuer_ref');
  return { ...(role ? { role } : {}), ...(issuerRef ? { issuerRef } : {}) };
}

/** The directory's path under the mount: '', `roles/x/`, `issuer/y/` or `issuer/y/roles/x/`. */
export const directoryName = (d: Directory): string =>
  `${d.issuerRef ? `issuer/${d.issuerRef}/` : ''}${d.role ? `roles/${d.role}/` : ''}`;

/** How an order from a directory is signed: under a role's policy, or verbatim. */
export interface Issuance {
  role: string | undefined;
  issuerRef: string;
  /** keep the role's extended key usages; otherwise the certificate is for server auth only */
  roleExtKeyUsage: boolean;
}

const allowed = (list: readonly string[], name: string) =>
  list.includes('*') || list.includes(name);

/**
 * The configuration's verdict on a directory: ACME enabled and set up, the role and issuer allowed,
 * the default directory's policy (forbid, sign-verbatim or role:<name>).
 */
export function issuanceFor(service: AcmeService, mount: string, dir: Directory): Issuance {
  const config = service.config(mount);
  if (!config.enabled) throw unauthorized('ACME is disabled in configuration');
  if (!service.cluster(mount).path)
    throw new AcmeProblem(
      'serverInternal',
      "ACME feature requires local cluster 'path' field configuration to be set",
    );
  let role = dir.role;
  if (role === undefined) {
    const policy = config.default_directory_policy;
    if (policy === 'forbid')
      throw unauthorized('the default ACME directory is forbidden by policy');
    if (policy.startsWith('role:')) role = policy.slice(5);
  } else if (!allowed(config.allowed_roles, role)) {
    throw unauthorized(`role ${role} is not allowed for ACME`);
  }
  let roleIssuer = 'default';
  if (role !== undefined) {
    const stored = service.authority.role(mount, role);
    if (!stored || typeof stored !== 'object') throw unauthorized(`unknown role: ${role}`);
    const ref = (stored as { issuer_ref?: unknown }).issuer_ref;
    if (typeof ref === 'string' && ref) roleIssuer = ref;
  }
  const issuerRef = dir.issuerRef ?? roleIssuer;
  let issuer;
  try {
    issuer = service.authority.resolveIssuer(mount, issuerRef);
  } catch (err) {
    throw new AcmeProblem('serverInternal', err instanceof Error ? err.message : String(err));
  }
  if (
    !allowed(config.allowed_issuers, issuer.issuer_id) &&
    !allowed(config.allowed_issuers, issuer.settings.name) &&
    !(issuerRef === 'default' && config.allowed_issuers.includes('default'))
  )
    throw unauthorized(`issuer ${issuerRef} is not allowed for ACME`);
  return { role, issuerRef: issuer.issuer_id, roleExtKeyUsage: config.allow_role_ext_key_usage };
}
