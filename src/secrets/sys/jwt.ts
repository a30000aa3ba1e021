import type { RouterContext } from '@koa/router';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { compactVerify, decodeProtectedHeader, errors } from 'jose';
import { KeelError, NotFoundError, ValidationError } from '../../core/errors.js';
import { multierror } from '../../http/errors.js';
import { requestData, sendVault } from '../../http/vault.js';
import { parseFields } from '../fields.js';
import { checkPolicyName } from '../names.js';
import { readTokenLimits, sendLogin } from './approle.js';
import { jwtConfigDecider, jwtRoleDecider } from './commands.js';
import type { JwtConfig, JwtRoleSettings, LoginTokenSettings } from './events.js';
import { NO_TOKEN_SETTINGS, jwtConfigStream, jwtRoleStream } from './events.js';
import { APPROLE_LOGIN, APPROLE_ROLE, JWT_CONFIG } from './paths.js';
import type { AuthMountRow } from './projection.js';
import type { SysRouteDeps } from './routes.js';

/** The signing algorithms Keel accepts (JOSE names): every asymmetric one the reference does. */
const ALGS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;
const isAlg = (a: string): boolean => (ALGS as readonly string[]).includes(a);

const NEW_ROLE: JwtRoleSettings = {
  bound_audiences: [],
  user_claim: '',
  bound_subject: '',
  bound_claims: {},
  claim_mappings: {},
  clock_skew_leeway: 60,
  expiration_leeway: 150,
  not_before_leeway: 150,
  ...NO_TOKEN_SETTINGS,
};

const notServed = (what: string, why: string) =>
  new ValidationError(`${what} is not supported by Keel's JWT method: ${why}`);

/**
 * The claims of a compact JWS signed by one of `keys` with an accepted algorithm, verified by
 * jose (which refuses `alg: none`, a key of the wrong kind and a changed payload).
 */
export async function verifiedClaims(
  jwt: string,
  keys: readonly KeyObject[],
  algs: readonly string[],
): Promise<Record<string, unknown>> {
  let header: { alg?: unknown };
  try {
    header = decodeProtectedHeader(jwt);
  } catch {
    throw new ValidationError('error validating token: malformed JWT');
  }
  const alg = typeof header.alg === 'string' ? header.alg : '';
  if (!isAlg(alg) || !algs.includes(alg))
    throw new ValidationError(`error validating token: unsupported signing algorithm "${alg}"`);
  for (const key of keys) {
    let payload: Uint8Array;
    try {
      ({ payload } = await compactVerify(jwt, key, { algorithms: [alg] }));
    } catch (err) {
      if (err instanceof errors.JWSInvalid)
        throw new ValidationError('error validating token: malformed JWT');
      continue; // not this key (another kind, or it did not sign this)
    }
    let claims: unknown;
    try {
      claims = JSON.parse(new TextDecoder().decode(payload));
    } catch {
      throw new ValidationError('error validating token: the payload is not JSON');
    }
    if (typeof claims !== 'object' || claims === null || Array.isArray(claims))
      throw new ValidationError('error validating token: the payload is not a JSON object');
    return claims as Record<string, unknown>;
  }
  throw new ValidationError('error validating token: no known key verifies the signature');
}

/** The time claims against the role's leeways (a negative leeway turns that check off). */
function checkTimes(claims: Record<string, unknown>, role: JwtRoleSettings, now: number): void {
  const seconds = (name: string): number | undefined => {
    const v = claims[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw new ValidationError(`error validating token: claim "${name}" is not a number`);
    return v;
  };
  const skew = Math.max(0, role.clock_skew_leeway);
  const exp = seconds('exp');
  if (exp !== undefined && role.expiration_leeway >= 0 && now > exp + role.expiration_leeway + skew)
    throw new ValidationError('error validating token: token is expired (exp)');
  for (const name of ['nbf', 'iat']) {
    const at = seconds(name);
    if (at !== undefined && role.not_before_leeway >= 0 && now < at - role.not_before_leeway - skew)
      throw new ValidationError(`error validating token: token used before issued (${name})`);
  }
}

const claimStrings = (v: unknown): string[] =>
  typeof v === 'string' ? [v] : Array.isArray(v) ? v.filter((x) => typeof x === 'string') : [];

/**
 * The JWT method (`auth/<path>/…` of an enabled `jwt` method): `config` with the PEM keys
 * (`jwt_validation_pubkeys`), the bound issuer and the accepted algorithms; roles of type `jwt`
 * (audiences, subject, claims, the user claim and claim mappings); and `login`, which checks a
 * token's signature, times, issuer, audience, subject and bound claims, then answers an orphan
 * service token. JWKS URLs, OIDC discovery and OIDC roles are refused by name.
 */
export function jwtHandlers(deps: SysRouteDeps) {
  const { core, queries } = deps;
  const configOf = (m: AuthMountRow): JwtConfig => {
    const c = queries.jwtConfig(m.accessor);
    if (c === undefined) throw new ValidationError('could not load configuration');
    return c;
  };
  const keysOf = (c: JwtConfig): KeyObject[] =>
    c.jwt_validation_pubkeys.map((k) => createPublicKey(k));
  return {
    readConfig(ctx: RouterContext, m: AuthMountRow) {
      const c = queries.jwtConfig(m.accessor);
      if (c === undefined) return sendVault(ctx, undefined);
      sendVault(ctx, {
        ...c,
        jwks_url: '',
        jwks_ca_pem: '',
        oidc_discovery_url: '',
        oidc_discovery_ca_pem: '',
        oidc_client_id: '',
        provider_config: {},
      });
    },
    async writeConfig(ctx: RouterContext, m: AuthMountRow) {
      const d = parseFields(JWT_CONFIG, requestData(ctx), { mount: ctx.params.mount! });
      if (d.get('jwks_url')) throw notServed('jwks_url', 'give the keys as jwt_validation_pubkeys');
      if (d.get('oidc_discovery_url'))
        throw notServed('oidc_discovery_url', 'give the keys as jwt_validation_pubkeys');
      const pems = d.get('jwt_validation_pubkeys') ?? [];
      if (pems.length === 0)
        throw new ValidationError(
          'exactly one of oidc_discovery_url, jwks_url or jwt_validation_pubkeys must be set (Keel serves jwt_validation_pubkeys)',
        );
      for (const pem of pems) {
        try {
          const key = createPublicKey(pem);
          if (!['rsa', 'ec', 'ed25519'].includes(key.asymmetricKeyType ?? ''))
            throw new Error(`a ${key.asymmetricKeyType ?? 'unknown'} key`);
        } catch (err) {
          throw new ValidationError(
            `error parsing public key: ${err instanceof Error ? err.message : String(err)}`,
          );
        }
      }
      const algs = d.get('jwt_supported_algs') ?? [];
      const unknown = algs.filter((a) => !isAlg(a));
      if (unknown.length > 0)
        throw new ValidationError(`invalid jwt_supported_algs: ${unknown.join(', ')}`);
      const config: JwtConfig = {
        jwt_validation_pubkeys: pems,
        bound_issuer: d.get('bound_issuer') ?? '',
        jwt_supported_algs: algs,
        default_role: d.get('default_role') ?? '',
      };
      await core.handler.handle(
        jwtConfigStream(m.accessor),
        jwtConfigDecider,
        () => [{ type: 'JwtConfigWritten' as const, data: { mount: m.accessor, config } }],
        deps.metadata(ctx),
      );
      sendVault(ctx, undefined);
    },
    listRoles(ctx: RouterContext, m: AuthMountRow) {
      if (ctx.state.list !== true)
        throw new KeelError('unsupported', multierror('unsupported operation'));
      const keys = queries.jwtRoleNames(m.accessor);
      if (keys.length === 0) throw new NotFoundError('');
      sendVault(ctx, { keys });
    },
    readRole(ctx: RouterContext, m: AuthMountRow) {
      const role = queries.jwtRole(m.accessor, ctx.params.role_name!);
      if (role === undefined) throw new NotFoundError('');
      sendVault(ctx, {
        ...role,
        role_type: 'jwt',
        bound_claims: Object.keys(role.bound_claims).length === 0 ? null : role.bound_claims,
        bound_claims_type: 'string',
        claim_mappings: Object.keys(role.claim_mappings).length === 0 ? null : role.claim_mappings,
        groups_claim: '',
        token_bound_cidrs: role.token_bound_cidrs ?? [],
        token_num_uses: role.token_num_uses ?? 0,
        token_type: 'default',
        policies: role.token_policies,
        period: role.token_period,
        ttl: role.token_ttl,
        max_ttl: role.token_max_ttl,
      });
    },
    async writeRole(ctx: RouterContext, m: AuthMountRow) {
      const name = ctx.params.role_name!;
      checkPolicyName(name);
      const d = parseFields(APPROLE_ROLE, requestData(ctx), {
        mount: ctx.params.mount!,
        role_name: name,
      });
      const s: JwtRoleSettings = { ...(queries.jwtRole(m.accessor, name) ?? NEW_ROLE) };
      const type = d.get('role_type') ?? 'jwt';
      if (type !== 'jwt') throw notServed(`role_type "${type}"`, 'it serves jwt roles only');
      const oidcOnly = ['allowed_redirect_uris', 'oidc_scopes'] as const;
      for (const f of oidcOnly)
        if ((d.get(f) ?? []).length > 0) throw notServed(f, 'it belongs to OIDC roles');
      if (d.get('groups_claim')) throw notServed('groups_claim', 'Keel keeps no identity groups');
      if ((d.get('bound_claims_type') ?? 'string') !== 'string')
        throw notServed('bound_claims_type other than string', 'claims are matched exactly');
      readTokenLimits({ uses: d.get('token_num_uses'), cidrs: d.get('token_bound_cidrs') }, s);
      const tokenType = d.get('token_type') ?? '';
      if (!['', 'default', 'service', 'default-service'].includes(tokenType))
        throw new ValidationError(
          `unsupported token_type ${JSON.stringify(tokenType)}: Keel serves service tokens`,
        );
      const policies = d.get('token_policies') ?? d.get('policies');
      if (policies !== undefined) {
        policies.forEach(checkPolicyName);
        s.token_policies = [...new Set(policies.map((p) => p.toLowerCase()))].sort();
      }
      s.bound_audiences = d.get('bound_audiences') ?? s.bound_audiences;
      s.user_claim = d.get('user_claim') ?? s.user_claim;
      s.bound_subject = d.get('bound_subject') ?? s.bound_subject;
      const bound = d.get('bound_claims');
      if (bound !== undefined) {
        const claims: Record<string, string[]> = {};
        for (const [k, v] of Object.entries(bound ?? {})) {
          const values = typeof v === 'string' ? v.split(',').map((x) => x.trim()) : v;
          if (!Array.isArray(values) || !values.every((x) => typeof x === 'string'))
            throw new ValidationError(`bound_claims: the values of "${k}" must be strings`);
          claims[k] = values;
        }
        s.bound_claims = claims;
      }
      const mappings = d.get('claim_mappings');
      if (mappings !== undefined) {
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(mappings ?? {})) {
          if (typeof v !== 'string')
            throw new ValidationError(`claim_mappings: "${k}" must map to a string`);
          out[k] = v;
        }
        s.claim_mappings = out;
      }
      s.clock_skew_leeway = d.get('clock_skew_leeway') ?? s.clock_skew_leeway;
      s.expiration_leeway = d.get('expiration_leeway') ?? s.expiration_leeway;
      s.not_before_leeway = d.get('not_before_leeway') ?? s.not_before_leeway;
      s.token_ttl = d.get('token_ttl') ?? s.token_ttl;
      s.token_max_ttl = d.get('token_max_ttl') ?? s.token_max_ttl;
      s.token_explicit_max_ttl = d.get('token_explicit_max_ttl') ?? s.token_explicit_max_ttl;
      s.token_period = d.get('token_period') ?? d.get('period') ?? s.token_period;
      s.token_no_default_policy = d.get('token_no_default_policy') ?? s.token_no_default_policy;
      if (s.user_claim === '')
        throw new ValidationError('a user claim must be defined on the role');
      if (s.token_max_ttl > 0 && s.token_ttl > s.token_max_ttl)
        throw new ValidationError('token_ttl should not be greater than token_max_ttl');
      await core.handler.handle(
        jwtRoleStream(m.accessor, name),
        jwtRoleDecider,
        () => [{ type: 'JwtRoleWritten' as const, data: { mount: m.accessor, name, settings: s } }],
        deps.metadata(ctx),
      );
      sendVault(ctx, undefined);
    },
    async deleteRole(ctx: RouterContext, m: AuthMountRow) {
      const name = ctx.params.role_name!;
      await core.handler.handle(
        jwtRoleStream(m.accessor, name),
        jwtRoleDecider,
        (st) =>
          st.exists ? [{ type: 'JwtRoleDeleted' as const, data: { mount: m.accessor, name } }] : [],
        deps.metadata(ctx),
      );
      sendVault(ctx, undefined);
    },
    async login(ctx: RouterContext, m: AuthMountRow) {
      const d = parseFields(APPROLE_LOGIN, requestData(ctx), { mount: ctx.params.mount! });
      const config = configOf(m);
      const roleName = d.get('role') || config.default_role;
      if (roleName === '') throw new ValidationError('missing role');
      const role = queries.jwtRole(m.accessor, roleName);
      if (role === undefined) throw new ValidationError(`role "${roleName}" could not be found`);
      const token = d.get('jwt') ?? '';
      if (token === '') throw new ValidationError('missing token');
      const algs = config.jwt_supported_algs.length > 0 ? config.jwt_supported_algs : [...ALGS];
      const claims = await verifiedClaims(token, keysOf(config), algs);
      checkTimes(claims, role, Math.floor(core.clock.now().getTime() / 1000));
      if (config.bound_issuer !== '' && claims.iss !== config.bound_issuer)
        throw new ValidationError('error validating claims: invalid issuer (iss) claim');
      const aud = claimStrings(claims.aud);
      if (role.bound_audiences.length > 0) {
        if (!aud.some((a) => role.bound_audiences.includes(a)))
          throw new ValidationError('error validating claims: invalid audience (aud) claim');
      } else if (aud.length > 0) {
        throw new ValidationError('audience claim found in JWT but no audiences bound to the role');
      }
      if (role.bound_subject !== '' && claims.sub !== role.bound_subject)
        throw new ValidationError('sub claim does not match bound subject');
      for (const [claim, allowed] of Object.entries(role.bound_claims)) {
        const have = claimStrings(claims[claim]);
        if (!have.some((v) => allowed.includes(v)))
          throw new ValidationError(
            `claim "${claim}" does not match any associated bound claim values`,
          );
      }
      const user = claims[role.user_claim];
      if (typeof user !== 'string' && typeof user !== 'number')
        throw new ValidationError(`claim "${role.user_claim}" not found in token`);
      const meta: Record<string, string> = { role: roleName };
      for (const [claim, key] of Object.entries(role.claim_mappings)) {
        const v = claims[claim];
        if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
          meta[key] = String(v);
      }
      const settings: LoginTokenSettings = role;
      await sendLogin(ctx, deps, m, settings, {
        meta,
        displayName: `${m.path.replace(/\/$/, '')}-${String(user)}`,
      });
    },
  };
}

/** The JWT method's handlers, made once per router (the system backend's scope holds them). */
export type JwtHandlers = ReturnType<typeof jwtHandlers>;
