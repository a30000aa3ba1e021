import type Router from '@koa/router';
import { createHash } from 'node:crypto';
import { KeelError, ValidationError } from '../../core/errors.js';
import { requestData, sendVault } from '../../http/vault.js';
import { parseFields } from '../fields.js';
import { AUTH_MOUNT } from './paths.js';
import { SYSTEM_LEASE_TTL } from './projection.js';
import type { SysRouteDeps } from './routes.js';

const TOKEN_DESCRIPTION = 'token based credentials';

const normalize = (p: string) => (p.endsWith('/') ? p : `${p}/`).replace(/^\/+/, '');

/**
 * `sys/auth`: the auth methods. Keel has one, the token store at `token/`, always enabled (as in
 * the reference, which lists it even on a fresh server and refuses to disable it); enabling any
 * other method is refused, naming it, and its TTLs are the system's (768h), not tunable.
 */
export function authMountRoutes(r: Router, deps: SysRouteDeps): void {
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
  r.get('/sys/auth', (ctx) => sendVault(ctx, { 'token/': tokenMount }));
  const tokenPath = (raw: string | undefined): 'token/' => {
    const path = normalize(raw ?? '');
    if (path !== 'token/') throw new ValidationError(`cannot fetch sysview for path "${path}"`);
    return path;
  };
  r.get('/sys/auth/*path/tune', (ctx) => {
    tokenPath(ctx.params.path);
    sendVault(ctx, {
      default_lease_ttl: SYSTEM_LEASE_TTL,
      max_lease_ttl: SYSTEM_LEASE_TTL,
      force_no_cache: false,
      description: TOKEN_DESCRIPTION,
      token_type: 'default-service',
    });
  });
  r.post('/sys/auth/*path/tune', (ctx) => {
    tokenPath(ctx.params.path);
    throw new KeelError(
      'unsupported',
      'tuning the token auth method is not supported by Keel: its tokens take the system TTLs (768h default and maximum)',
      { status: 400 },
    );
  });
  r.post('/sys/auth/*path', (ctx) => {
    const path = normalize(ctx.params.path ?? '');
    const d = parseFields(AUTH_MOUNT, requestData(ctx), { path });
    if (path === 'token/') throw new ValidationError('path is already in use at token/');
    const type = d.get('type');
    if (type === undefined || type === '')
      throw new ValidationError('missing required field "type"');
    throw new ValidationError(
      `plugin not found in the catalog: ${type} (Keel serves the token auth method only)`,
    );
  });
  r.delete('/sys/auth/*path', (ctx) => {
    if (normalize(ctx.params.path ?? '') === 'token/')
      throw new ValidationError('token credential backend cannot be disabled');
    // Nothing else is enabled: nothing to disable, as the reference answers for an unused path.
    sendVault(ctx, undefined);
  });
}
