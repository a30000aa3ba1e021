import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import { canonicalJson } from '../../core/canonical.js';
import { ReadMemo } from '../../core/read-memo.js';
import { hmacLookupRange, safeEqual } from '../../core/seal.js';
import { scheduleRows } from '../../core/schedule.js';
import { statements } from '../../core/sql.js';
import type { Mount } from '../../http/types.js';
import type { PathRule } from './acl.js';
import type {
  AppRoleSettings,
  AuthMethodType,
  AuthTuneConfig,
  UserpassSettings,
  JwtConfig,
  JwtRoleSettings,
  MountConfig,
  SysEvent,
  TokenRoleSettings,
} from './events.js';
import { SYS_EVENT_TYPES, TIMER_TOKEN_EXPIRY, tokenExpiryKey } from './events.js';

/** A mount's settings in one key order, whether the event came from a request or the log. */
const configJson = (c: MountConfig): string =>
  JSON.stringify({
    default_lease_ttl: c.default_lease_ttl,
    max_lease_ttl: c.max_lease_ttl,
    ...(c.allowed_response_headers ? { allowed_response_headers: c.allowed_response_headers } : {}),
    ...(c.passthrough_request_headers
      ? { passthrough_request_headers: c.passthrough_request_headers }
      : {}),
  });

const SYS_TABLES = [
  'secrets_tokens',
  'acl_policies',
  'mounts',
  'token_roles',
  'auth_mounts',
  'approle_roles',
  'approle_secret_ids',
  'jwt_configs',
  'jwt_roles',
  'auth_tunes',
  'userpass_users',
] as const;

/**
 * The sys read models. `changed` runs after every event that changes a token, policy or mount,
 * inside the append's transaction (the queries' memo is cleared by it).
 */
export const sysProjection = (changed: () => void = () => undefined): Projection => ({
  name: 'secrets-sys',
  // 2: token expiry schedule rows, and children made orphans by revoke-orphan.
  // 3: renewal, explicit max TTL, period and role of tokens; token roles; moved mounts.
  // 4: auth methods (AppRole roles and secret IDs), and the path and method that made a token.
  // 5: JWT configs and roles.
  // 6: tokens' limited uses; auth method tunes; userpass users.
  version: 6,
  tables: [...SYS_TABLES],
  guarded: [...SYS_TABLES],
  events: SYS_EVENT_TYPES,
  setup(db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS secrets_tokens (
        accessor TEXT PRIMARY KEY, token_hmac TEXT NOT NULL UNIQUE, policies TEXT NOT NULL,
        display_name TEXT NOT NULL, expires_at TEXT, ttl_seconds INTEGER NOT NULL,
        parent_accessor TEXT, meta TEXT NOT NULL, created_at TEXT NOT NULL,
        renewable INTEGER NOT NULL, explicit_max_ttl INTEGER NOT NULL, period INTEGER NOT NULL,
        role TEXT, last_renewal TEXT, path TEXT, auth_mount TEXT, num_uses INTEGER NOT NULL,
        uses_left INTEGER NOT NULL, bound_cidrs TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS auth_tunes (
        path TEXT PRIMARY KEY, description TEXT NOT NULL, config TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS userpass_users (
        mount TEXT NOT NULL, username TEXT NOT NULL, password_hash TEXT NOT NULL,
        settings TEXT NOT NULL, PRIMARY KEY (mount, username));
      CREATE TABLE IF NOT EXISTS auth_mounts (
        path TEXT PRIMARY KEY, type TEXT NOT NULL, accessor TEXT NOT NULL UNIQUE,
        description TEXT NOT NULL, created_at TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS approle_roles (
        mount TEXT NOT NULL, name TEXT NOT NULL, role_id TEXT NOT NULL, settings TEXT NOT NULL,
        PRIMARY KEY (mount, name));
      CREATE TABLE IF NOT EXISTS approle_secret_ids (
        accessor TEXT PRIMARY KEY, mount TEXT NOT NULL, role TEXT NOT NULL,
        secret_id_hmac TEXT NOT NULL, created_at TEXT NOT NULL, expires_at TEXT,
        num_uses INTEGER NOT NULL, uses_left INTEGER NOT NULL, cidrs TEXT NOT NULL,
        metadata TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS jwt_configs (mount TEXT PRIMARY KEY, config TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS jwt_roles (
        mount TEXT NOT NULL, name TEXT NOT NULL, settings TEXT NOT NULL, PRIMARY KEY (mount, name));
      CREATE TABLE IF NOT EXISTS token_roles (name TEXT PRIMARY KEY, settings TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS acl_policies (name TEXT PRIMARY KEY, policy TEXT NOT NULL, rules TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS mounts (
        path TEXT PRIMARY KEY, type TEXT NOT NULL, accessor TEXT NOT NULL, description TEXT NOT NULL,
        config TEXT NOT NULL, created_at TEXT NOT NULL);
    `);
    const schedule = scheduleRows(db, 'secrets-sys');
    const s = {
      orphan: db.prepare(
        'UPDATE secrets_tokens SET parent_accessor = NULL WHERE parent_accessor = ?',
      ),
      token: db.prepare(
        `INSERT INTO secrets_tokens VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?)`,
      ),
      renew: db.prepare(
        'UPDATE secrets_tokens SET expires_at = ?, last_renewal = ? WHERE accessor = ?',
      ),
      role: db.prepare(
        'INSERT INTO token_roles VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET settings = excluded.settings',
      ),
      dropRole: db.prepare('DELETE FROM token_roles WHERE name = ?'),
      move: db.prepare('UPDATE mounts SET path = ? WHERE path = ?'),
      authMount: db.prepare('INSERT INTO auth_mounts VALUES (?, ?, ?, ?, ?)'),
      dropAuthMount: db.prepare('DELETE FROM auth_mounts WHERE accessor = ?'),
      useToken: db.prepare('UPDATE secrets_tokens SET uses_left = ? WHERE accessor = ?'),
      authTune: db.prepare(
        'INSERT INTO auth_tunes VALUES (?, ?, ?) ON CONFLICT (path) DO UPDATE SET description = excluded.description, config = excluded.config',
      ),
      dropAuthTune: db.prepare('DELETE FROM auth_tunes WHERE path = ?'),
      userpassUser: db.prepare(
        'INSERT INTO userpass_users VALUES (?, ?, ?, ?) ON CONFLICT (mount, username) DO UPDATE SET password_hash = excluded.password_hash, settings = excluded.settings',
      ),
      dropUserpassUser: db.prepare('DELETE FROM userpass_users WHERE mount = ? AND username = ?'),
      dropUserpassUsers: db.prepare('DELETE FROM userpass_users WHERE mount = ?'),
      dropAppRoles: db.prepare('DELETE FROM approle_roles WHERE mount = ?'),
      dropMountSecretIds: db.prepare('DELETE FROM approle_secret_ids WHERE mount = ?'),
      appRole: db.prepare(
        'INSERT INTO approle_roles VALUES (?, ?, ?, ?) ON CONFLICT (mount, name) DO UPDATE SET role_id = excluded.role_id, settings = excluded.settings',
      ),
      dropAppRole: db.prepare('DELETE FROM approle_roles WHERE mount = ? AND name = ?'),
      dropRoleSecretIds: db.prepare('DELETE FROM approle_secret_ids WHERE mount = ? AND role = ?'),
      secretId: db.prepare('INSERT INTO approle_secret_ids VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      useSecretId: db.prepare('UPDATE approle_secret_ids SET uses_left = ? WHERE accessor = ?'),
      dropSecretId: db.prepare('DELETE FROM approle_secret_ids WHERE accessor = ?'),
      jwtConfig: db.prepare(
        'INSERT INTO jwt_configs VALUES (?, ?) ON CONFLICT (mount) DO UPDATE SET config = excluded.config',
      ),
      jwtRole: db.prepare(
        'INSERT INTO jwt_roles VALUES (?, ?, ?) ON CONFLICT (mount, name) DO UPDATE SET settings = excluded.settings',
      ),
      dropJwtRole: db.prepare('DELETE FROM jwt_roles WHERE mount = ? AND name = ?'),
      dropJwtConfig: db.prepare('DELETE FROM jwt_configs WHERE mount = ?'),
      dropJwtRoles: db.prepare('DELETE FROM jwt_roles WHERE mount = ?'),
      revoke: db.prepare('DELETE FROM secrets_tokens WHERE accessor = ?'),
      policy: db.prepare(
        'INSERT INTO acl_policies VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET policy = excluded.policy, rules = excluded.rules',
      ),
      dropPolicy: db.prepare('DELETE FROM acl_policies WHERE name = ?'),
      mount: db.prepare('INSERT INTO mounts VALUES (?, ?, ?, ?, ?, ?)'),
      unmount: db.prepare('DELETE FROM mounts WHERE path = ?'),
      tune: db.prepare('UPDATE mounts SET description = ?, config = ? WHERE path = ?'),
    };
    return (event) => {
      const e = event as StoredEvent<SysEvent>;
      switch (e.type) {
        case 'SecretsTokenCreated': {
          const d = e.data;
          s.token.run(
            d.accessor,
            d.tokenHmac,
            JSON.stringify(d.policies),
            d.displayName,
            d.expiresAt,
            d.ttlSeconds,
            d.parentAccessor,
            JSON.stringify(d.meta),
            e.time,
            (d.renewable ?? d.ttlSeconds > 0) ? 1 : 0,
            d.explicitMaxTtl ?? 0,
            d.period ?? 0,
            d.role ?? null,
            d.path ?? null,
            d.authMount ?? null,
            d.numUses ?? 0,
            d.numUses ?? 0,
            JSON.stringify(d.boundCidrs ?? []),
          );
          if (d.expiresAt !== null)
            schedule.put({
              key: tokenExpiryKey(d.accessor),
              kind: TIMER_TOKEN_EXPIRY,
              dueAt: d.expiresAt,
              data: { accessor: d.accessor },
            });
          break;
        }
        case 'SecretsTokenRenewed':
          s.renew.run(e.data.expiresAt, e.data.renewedAt, e.data.accessor);
          schedule.put({
            key: tokenExpiryKey(e.data.accessor),
            kind: TIMER_TOKEN_EXPIRY,
            dueAt: e.data.expiresAt,
            data: { accessor: e.data.accessor },
          });
          break;
        case 'TokenRoleWritten':
          s.role.run(e.data.name, canonicalJson(e.data.settings));
          break;
        case 'TokenRoleDeleted':
          s.dropRole.run(e.data.name);
          break;
        case 'MountMoved':
          s.move.run(e.data.path, e.data.from);
          break;
        case 'AuthMethodEnabled': {
          const d = e.data;
          s.authMount.run(d.path, d.type, d.accessor, d.description, e.time);
          break;
        }
        case 'SecretsTokenUsed':
          s.useToken.run(e.data.usesLeft, e.data.accessor);
          break;
        case 'AuthMethodTuned':
          s.authTune.run(e.data.path, e.data.description, canonicalJson(e.data.config));
          break;
        case 'UserpassUserWritten': {
          const d = e.data;
          s.userpassUser.run(d.mount, d.username, d.passwordHash, canonicalJson(d.settings));
          break;
        }
        case 'UserpassUserDeleted':
          s.dropUserpassUser.run(e.data.mount, e.data.username);
          break;
        case 'AuthMethodDisabled':
          s.dropAuthTune.run(e.data.path);
          s.dropUserpassUsers.run(e.data.accessor);
          s.dropAuthMount.run(e.data.accessor);
          s.dropAppRoles.run(e.data.accessor);
          s.dropMountSecretIds.run(e.data.accessor);
          s.dropJwtConfig.run(e.data.accessor);
          s.dropJwtRoles.run(e.data.accessor);
          break;
        case 'JwtConfigWritten':
          s.jwtConfig.run(e.data.mount, canonicalJson(e.data.config));
          break;
        case 'JwtRoleWritten':
          s.jwtRole.run(e.data.mount, e.data.name, canonicalJson(e.data.settings));
          break;
        case 'JwtRoleDeleted':
          s.dropJwtRole.run(e.data.mount, e.data.name);
          break;
        case 'AppRoleWritten': {
          const d = e.data;
          s.appRole.run(d.mount, d.name, d.roleId, canonicalJson(d.settings));
          break;
        }
        case 'AppRoleDeleted':
          s.dropAppRole.run(e.data.mount, e.data.name);
          s.dropRoleSecretIds.run(e.data.mount, e.data.name);
          break;
        case 'AppRoleSecretIdCreated': {
          const d = e.data;
          s.secretId.run(
            d.accessor,
            d.mount,
            d.role,
            d.secretIdHmac,
            e.time,
            d.expiresAt,
            d.numUses,
            d.numUses,
            JSON.stringify(d.cidrs),
            JSON.stringify(d.metadata),
          );
          break;
        }
        case 'AppRoleSecretIdUsed':
          s.useSecretId.run(e.data.usesLeft, e.data.accessor);
          break;
        case 'AppRoleSecretIdDestroyed':
          s.dropSecretId.run(e.data.accessor);
          break;
        case 'SecretsTokenRevoked':
          s.revoke.run(e.data.accessor);
          if (e.data.orphanChildren === true) s.orphan.run(e.data.accessor);
          schedule.remove(tokenExpiryKey(e.data.accessor));
          break;
        case 'AclPolicyWritten':
          s.policy.run(e.data.name, e.data.policy, canonicalJson(e.data.rules));
          break;
        case 'AclPolicyDeleted':
          s.dropPolicy.run(e.data.name);
          break;
        case 'MountEnabled': {
          const d = e.data;
          s.mount.run(d.path, d.type, d.accessor, d.description, configJson(d.config), e.time);
          break;
        }
        case 'MountTuned':
          s.tune.run(e.data.description, configJson(e.data.config), e.data.path);
          break;
        case 'MountDisabled':
          s.unmount.run(e.data.path);
          break;
        default:
          return;
      }
      changed();
    };
  },
});

export interface TokenRow {
  accessor: string;
  tokenHmac: string;
  policies: string[];
  displayName: string;
  expiresAt: string | null;
  ttlSeconds: number;
  parentAccessor: string | null;
  meta: Record<string, string>;
  createdAt: string;
  renewable: boolean;
  explicitMaxTtl: number;
  period: number;
  role: string | null;
  lastRenewal: string | null;
  path: string | null;
  authMount: string | null;
  /** Uses it was made with (0: unlimited), and those left (-1: the last is being made). */
  numUses: number;
  usesLeft: number;
  /** The addresses it may be used from (empty: any). */
  boundCidrs: string[];
}

export interface UserpassUserRow {
  mount: string;
  username: string;
  passwordHash: string;
  settings: UserpassSettings;
}

export interface AuthMountRow {
  path: string;
  type: AuthMethodType;
  accessor: string;
  description: string;
  createdAt: string;
}

export interface AppRoleRow {
  mount: string;
  name: string;
  roleId: string;
  settings: AppRoleSettings;
}

export interface SecretIdRow {
  accessor: string;
  mount: string;
  role: string;
  secretIdHmac: string;
  createdAt: string;
  expiresAt: string | null;
  numUses: number;
  usesLeft: number;
  cidrs: string[];
  metadata: Record<string, string>;
}

export interface MountRow extends Mount {
  config: MountConfig;
  createdAt: string;
}

/** The system's default and maximum lease (the reference's 32 days), for a mount that sets none. */
export const SYSTEM_LEASE_TTL = 768 * 3600;

/** The lease TTLs in force on a mount: its own where set, else the system's. */
export interface MountTtls {
  defaultTtl: number;
  maxTtl: number;
}

export const mountTtls = (config: MountConfig): MountTtls => ({
  defaultTtl: config.default_lease_ttl > 0 ? config.default_lease_ttl : SYSTEM_LEASE_TTL,
  maxTtl: config.max_lease_ttl > 0 ? config.max_lease_ttl : SYSTEM_LEASE_TTL,
});

interface RawToken {
  accessor: string;
  token_hmac: string;
  policies: string;
  display_name: string;
  expires_at: string | null;
  ttl_seconds: number;
  parent_accessor: string | null;
  meta: string;
  created_at: string;
  renewable: number;
  explicit_max_ttl: number;
  period: number;
  role: string | null;
  last_renewal: string | null;
  path: string | null;
  auth_mount: string | null;
  num_uses: number;
  uses_left: number;
  bound_cidrs: string;
}

const toToken = (r: RawToken): TokenRow => ({
  accessor: r.accessor,
  tokenHmac: r.token_hmac,
  policies: JSON.parse(r.policies) as string[],
  displayName: r.display_name,
  expiresAt: r.expires_at,
  ttlSeconds: r.ttl_seconds,
  parentAccessor: r.parent_accessor,
  meta: JSON.parse(r.meta) as Record<string, string>,
  createdAt: r.created_at,
  renewable: r.renewable === 1,
  explicitMaxTtl: r.explicit_max_ttl,
  period: r.period,
  role: r.role,
  lastRenewal: r.last_renewal,
  path: r.path,
  authMount: r.auth_mount,
  numUses: r.num_uses,
  usesLeft: r.uses_left,
  boundCidrs: JSON.parse(r.bound_cidrs) as string[],
});

interface RawMount {
  path: string;
  type: string;
  accessor: string;
  description: string;
  config: string;
  created_at: string;
}

const toMount = (r: RawMount): MountRow => ({
  path: r.path,
  type: r.type,
  accessor: r.accessor,
  description: r.description,
  config: JSON.parse(r.config) as MountRow['config'],
  createdAt: r.created_at,
});

const toAuthMount = (r: Record<string, string>): AuthMountRow => ({
  path: r.path!,
  type: r.type as AuthMethodType,
  accessor: r.accessor!,
  description: r.description!,
  createdAt: r.created_at!,
});

interface RawAppRole {
  mount: string;
  name: string;
  role_id: string;
  settings: string;
}
const toAppRole = (r: RawAppRole): AppRoleRow => ({
  mount: r.mount,
  name: r.name,
  roleId: r.role_id,
  settings: JSON.parse(r.settings) as AppRoleSettings,
});

interface RawSecretId {
  accessor: string;
  mount: string;
  role: string;
  secret_id_hmac: string;
  created_at: string;
  expires_at: string | null;
  num_uses: number;
  uses_left: number;
  cidrs: string;
  metadata: string;
}
const toSecretId = (r: RawSecretId): SecretIdRow => ({
  accessor: r.accessor,
  mount: r.mount,
  role: r.role,
  secretIdHmac: r.secret_id_hmac,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  numUses: r.num_uses,
  usesLeft: r.uses_left,
  cidrs: JSON.parse(r.cidrs) as string[],
  metadata: JSON.parse(r.metadata) as Record<string, string>,
});

/** Read-side queries over the sys tables. */
export function sysQueries(db: Db) {
  const sql = statements(db);
  // Every request reads its token and its mount (and a token's policies): remembered until the
  // projection applies a sys event (ReadMemo). Unknown tokens are not remembered.
  const memo = new ReadMemo(db, { events: SYS_EVENT_TYPES });
  const mountsByLength = (): readonly MountRow[] =>
    memo.get('mounts', () =>
      sql<[], RawMount>('SELECT * FROM mounts ORDER BY length(path) DESC, path').all().map(toMount),
    );
  return {
    /** Forgets remembered rows: the sys projection calls it after every event it applies. */
    forget: (): void => memo.clear(),
    /** Every live token's accessor, sorted: `LIST auth/token/accessors`. */
    accessors: (): string[] =>
      sql<[], { accessor: string }>('SELECT accessor FROM secrets_tokens ORDER BY accessor')
        .all()
        .map((r) => r.accessor),
    tokenByHmac: (hmac: string): TokenRow | undefined =>
      memo.get(`token\0${hmac}`, () => {
        const r = sql<[string, string], RawToken>(
          'SELECT * FROM secrets_tokens WHERE token_hmac >= ? AND token_hmac < ?',
        )
          .all(...hmacLookupRange(hmac))
          .find((row) => safeEqual(row.token_hmac, hmac));
        return r === undefined ? undefined : toToken(r);
      }),
    tokenByAccessor: (accessor: string): TokenRow | undefined => {
      const r = sql<[string], RawToken>('SELECT * FROM secrets_tokens WHERE accessor = ?').get(
        accessor,
      );
      return r === undefined ? undefined : toToken(r);
    },
    /** The token's descendants, deepest first (each after its own descendants). */
    descendants: (accessor: string): string[] =>
      sql<[string], { accessor: string }>(
        `WITH RECURSIVE tree(accessor, depth) AS (
           SELECT accessor, 1 FROM secrets_tokens WHERE parent_accessor = ?
           UNION ALL
           SELECT t.accessor, tree.depth + 1 FROM secrets_tokens t JOIN tree ON t.parent_accessor = tree.accessor)
         SELECT accessor FROM tree ORDER BY depth DESC, accessor`,
      )
        .all(accessor)
        .map((r) => r.accessor),
    policy: (name: string): { name: string; policy: string; rules: PathRule[] } | undefined =>
      memo.get(`policy\0${name}`, () => {
        const r = sql<[string], { name: string; policy: string; rules: string }>(
          'SELECT * FROM acl_policies WHERE name = ?',
        ).get(name);
        return r === undefined ? undefined : { ...r, rules: JSON.parse(r.rules) as PathRule[] };
      }),
    tokenRole: (name: string): TokenRoleSettings | undefined => {
      const r = sql<[string], { settings: string }>(
        'SELECT settings FROM token_roles WHERE name = ?',
      ).get(name);
      return r === undefined ? undefined : (JSON.parse(r.settings) as TokenRoleSettings);
    },
    authMounts: (): AuthMountRow[] =>
      sql<[], Record<string, string>>('SELECT * FROM auth_mounts ORDER BY path')
        .all()
        .map(toAuthMount),
    authMount: (path: string): AuthMountRow | undefined => {
      const r = sql<[string], Record<string, string>>(
        'SELECT * FROM auth_mounts WHERE path = ?',
      ).get(path);
      return r === undefined ? undefined : toAuthMount(r);
    },
    /** An auth method's tune (or the token store's, at `token/`), if it was ever tuned. */
    authTune: (path: string): { description: string; config: AuthTuneConfig } | undefined => {
      const r = sql<[string], { description: string; config: string }>(
        'SELECT description, config FROM auth_tunes WHERE path = ?',
      ).get(path);
      return r === undefined
        ? undefined
        : { description: r.description, config: JSON.parse(r.config) as AuthTuneConfig };
    },
    userpassUser: (mount: string, username: string): UserpassUserRow | undefined => {
      const r = sql<
        [string, string],
        { mount: string; username: string; password_hash: string; settings: string }
      >('SELECT * FROM userpass_users WHERE mount = ? AND username = ?').get(mount, username);
      return r === undefined
        ? undefined
        : {
            mount: r.mount,
            username: r.username,
            passwordHash: r.password_hash,
            settings: JSON.parse(r.settings) as UserpassSettings,
          };
    },
    userpassUsernames: (mount: string): string[] =>
      sql<[string], { username: string }>(
        'SELECT username FROM userpass_users WHERE mount = ? ORDER BY username',
      )
        .all(mount)
        .map((r) => r.username),
    /** Tokens an auth method made (by its accessor). */
    tokensOfAuthMount: (accessor: string): string[] =>
      sql<[string], { accessor: string }>(
        'SELECT accessor FROM secrets_tokens WHERE auth_mount = ? ORDER BY accessor',
      )
        .all(accessor)
        .map((r) => r.accessor),
    appRole: (mount: string, name: string): AppRoleRow | undefined => {
      const r = sql<[string, string], RawAppRole>(
        'SELECT * FROM approle_roles WHERE mount = ? AND name = ?',
      ).get(mount, name);
      return r === undefined ? undefined : toAppRole(r);
    },
    appRoleById: (mount: string, roleId: string): AppRoleRow | undefined => {
      const r = sql<[string, string], RawAppRole>(
        'SELECT * FROM approle_roles WHERE mount = ? AND role_id = ?',
      ).get(mount, roleId);
      return r === undefined ? undefined : toAppRole(r);
    },
    appRoleNames: (mount: string): string[] =>
      sql<[string], { name: string }>(
        'SELECT name FROM approle_roles WHERE mount = ? ORDER BY name',
      )
        .all(mount)
        .map((r) => r.name),
    secretIdByHmac: (mount: string, hmac: string): SecretIdRow | undefined => {
      const r = sql<[string, string, string], RawSecretId>(
        'SELECT * FROM approle_secret_ids WHERE mount = ? AND secret_id_hmac >= ? AND secret_id_hmac < ?',
      )
        .all(mount, ...hmacLookupRange(hmac))
        .find((row) => safeEqual(row.secret_id_hmac, hmac));
      return r === undefined ? undefined : toSecretId(r);
    },
    secretIdByAccessor: (mount: string, accessor: string): SecretIdRow | undefined => {
      const r = sql<[string, string], RawSecretId>(
        'SELECT * FROM approle_secret_ids WHERE mount = ? AND accessor = ?',
      ).get(mount, accessor);
      return r === undefined ? undefined : toSecretId(r);
    },
    secretIdsOfRole: (mount: string, role: string): SecretIdRow[] =>
      sql<[string, string], RawSecretId>(
        'SELECT * FROM approle_secret_ids WHERE mount = ? AND role = ? ORDER BY accessor',
      )
        .all(mount, role)
        .map(toSecretId),
    jwtConfig: (mount: string): JwtConfig | undefined => {
      const r = sql<[string], { config: string }>(
        'SELECT config FROM jwt_configs WHERE mount = ?',
      ).get(mount);
      return r === undefined ? undefined : (JSON.parse(r.config) as JwtConfig);
    },
    jwtRole: (mount: string, name: string): JwtRoleSettings | undefined => {
      const r = sql<[string, string], { settings: string }>(
        'SELECT settings FROM jwt_roles WHERE mount = ? AND name = ?',
      ).get(mount, name);
      return r === undefined ? undefined : (JSON.parse(r.settings) as JwtRoleSettings);
    },
    jwtRoleNames: (mount: string): string[] =>
      sql<[string], { name: string }>('SELECT name FROM jwt_roles WHERE mount = ? ORDER BY name')
        .all(mount)
        .map((r) => r.name),
    tokenRoleNames: (): string[] =>
      sql<[], { name: string }>('SELECT name FROM token_roles ORDER BY name')
        .all()
        .map((r) => r.name),
    policyNames: (): string[] =>
      sql<[], { name: string }>('SELECT name FROM acl_policies ORDER BY name')
        .all()
        .map((r) => r.name),
    mounts: (): MountRow[] =>
      sql<[], RawMount>('SELECT * FROM mounts ORDER BY path').all().map(toMount),
    /** The mount a request path falls under (the longest mount path it starts with). */
    mountFor: (requestPath: string): MountRow | undefined => {
      const path = `${requestPath}/`;
      return mountsByLength().find((m) => path.startsWith(m.path));
    },
    /** Whether the secrets engine mount with this accessor is enabled (at any path). */
    mounted: (accessor: string): boolean => mountsByLength().some((m) => m.accessor === accessor),
    /** The TTLs in force on the mount with this accessor (the system's if it is gone). */
    ttlsOf: (accessor: string): MountTtls => {
      const row = mountsByLength().find((m) => m.accessor === accessor);
      return mountTtls(row?.config ?? { default_lease_ttl: 0, max_lease_ttl: 0 });
    },
    mount: (path: string): MountRow | undefined => {
      const r = sql<[string], RawMount>('SELECT * FROM mounts WHERE path = ?').get(path);
      return r === undefined ? undefined : toMount(r);
    },
  };
}

export type SysQueries = ReturnType<typeof sysQueries>;
