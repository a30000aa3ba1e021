import { streamName } from '../../core/streams.js';
import type { PathRule } from './acl.js';

/** A secrets token was created. Only an HMAC of the token is kept. */
export interface SecretsTokenCreated {
  type: 'SecretsTokenCreated';
  data: {
    accessor: string;
    tokenHmac: string;
    policies: string[];
    displayName: string;
    /** ISO time it stops working, or null for no expiry. */
    expiresAt: string | null;
    ttlSeconds: number;
    parentAccessor: string | null;
    meta: Record<string, string>;
    /** Whether it can be renewed; absent on events written before renewal (then: ttl > 0). */
    renewable?: boolean;
    /** A hard cap on its life from creation, in seconds (0 or absent: the system's maximum). */
    explicitMaxTtl?: number;
    /** A periodic token: each renewal sets its TTL to this many seconds, without a maximum. */
    period?: number;
    /** The token role it was created against, if any. */
    role?: string;
    /** The path that made it, when not `auth/token/create…` (an auth method's login). */
    path?: string;
    /** The accessor of the auth method that made it (disabling the method revokes it). */
    authMount?: string;
    /** Requests it may make (0 or absent: unlimited); the last one revokes it. */
    numUses?: number;
    /** The addresses it may be used from (absent: any). */
    boundCidrs?: string[];
  };
}

/**
 * A request used a token with limited uses: `usesLeft` remain. -1: that was its last use, and
 * the token is revoked once the request is answered (the reference's revocation pending).
 */
export interface SecretsTokenUsed {
  type: 'SecretsTokenUsed';
  data: { accessor: string; usesLeft: number };
}

/** A token's TTL was extended (`auth/token/renew*`): it now expires at `expiresAt`. */
export interface SecretsTokenRenewed {
  type: 'SecretsTokenRenewed';
  data: { accessor: string; renewedAt: string; expiresAt: string; ttlSeconds: number };
}

/** Why a token stopped working. */
export type TokenRevocationReason = 'revoked' | 'expired' | 'parent revoked' | 'used up';

/**
 * A token was revoked. Its descendants were revoked before it (each its own event), unless
 * `orphanChildren`: then its children live on as orphans (`auth/token/revoke-orphan`).
 * Events written before the hierarchy carry neither field.
 */
export interface SecretsTokenRevoked {
  type: 'SecretsTokenRevoked';
  data: { accessor: string; reason?: TokenRevocationReason; orphanChildren?: boolean };
}

export interface AclPolicyWritten {
  type: 'AclPolicyWritten';
  data: { name: string; policy: string; rules: PathRule[] };
}

export interface AclPolicyDeleted {
  type: 'AclPolicyDeleted';
  data: { name: string };
}

/** A mount's tunable settings; a TTL of 0 means the system's (768h). */
export interface MountConfig {
  default_lease_ttl: number;
  max_lease_ttl: number;
  allowed_response_headers?: string[];
  passthrough_request_headers?: string[];
}

export interface MountEnabled {
  type: 'MountEnabled';
  data: {
    path: string;
    type: string;
    accessor: string;
    description: string;
    config: MountConfig;
  };
}

/**
 * `sys/remount`: the mount at `from` now lives at `to`, with the same accessor (so the same
 * engine state), type and settings. Appended to the stream of `to`.
 */
export interface MountMoved {
  type: 'MountMoved';
  data: MountEnabled['data'] & { from: string };
}

/** The auth methods that can be enabled besides the token store. */
export type AuthMethodType = 'approle' | 'jwt' | 'userpass';

/** What `sys/auth/:path/tune` sets on an auth method (or the token store); TTLs 0: the system's. */
export interface AuthTuneConfig {
  default_lease_ttl: number;
  max_lease_ttl: number;
  listing_visibility: '' | 'unauth' | 'hidden';
}

/** `sys/auth/:path/tune`: the method's settings after the change, whole. */
export interface AuthMethodTuned {
  type: 'AuthMethodTuned';
  data: { path: string; description: string; config: AuthTuneConfig };
}

/**
 * What an auth method's role (or user) says of the tokens its logins get: the reference's token
 * fields, as AppRole, JWT and userpass keep them; TTLs in seconds.
 */
export interface LoginTokenSettings {
  token_policies: string[];
  token_ttl: number;
  token_max_ttl: number;
  token_explicit_max_ttl: number;
  token_period: number;
  token_no_default_policy: boolean;
  /** Requests each token may make, and where from (absent on roles written before: 0, any). */
  token_num_uses?: number;
  token_bound_cidrs?: string[];
}

/** The token fields of a role or user written without any: the reference's defaults. */
export const NO_TOKEN_SETTINGS: Readonly<LoginTokenSettings> = {
  token_policies: [],
  token_ttl: 0,
  token_max_ttl: 0,
  token_explicit_max_ttl: 0,
  token_period: 0,
  token_no_default_policy: false,
};

/** What a userpass user's logins get (the reference's token fields, each always there). */
export interface UserpassSettings extends LoginTokenSettings {
  token_num_uses: number;
  token_bound_cidrs: string[];
}

/**
 * A userpass user was written, whole. The password is kept only as a salted scrypt hash
 * (`scrypt$<N>$<r>$<p>$<salt>$<hash>`, base64), never in clear.
 */
export interface UserpassUserWritten {
  type: 'UserpassUserWritten';
  data: { mount: string; username: string; passwordHash: string; settings: UserpassSettings };
}

export interface UserpassUserDeleted {
  type: 'UserpassUserDeleted';
  data: { mount: string; username: string };
}

/** A JWT method's `config`, whole: the keys its tokens are checked with. */
export interface JwtConfig {
  jwt_validation_pubkeys: string[];
  bound_issuer: string;
  jwt_supported_algs: string[];
  default_role: string;
}

/** A JWT role: which tokens may log in, and what token they get; TTLs in seconds. */
export interface JwtRoleSettings extends LoginTokenSettings {
  bound_audiences: string[];
  user_claim: string;
  bound_subject: string;
  bound_claims: Record<string, string[]>;
  claim_mappings: Record<string, string>;
  clock_skew_leeway: number;
  expiration_leeway: number;
  not_before_leeway: number;
}

export interface JwtConfigWritten {
  type: 'JwtConfigWritten';
  data: { mount: string; config: JwtConfig };
}

export interface JwtRoleWritten {
  type: 'JwtRoleWritten';
  data: { mount: string; name: string; settings: JwtRoleSettings };
}

export interface JwtRoleDeleted {
  type: 'JwtRoleDeleted';
  data: { mount: string; name: string };
}

/** An auth method was enabled at `auth/<path>` (`sys/auth/:path`). */
export interface AuthMethodEnabled {
  type: 'AuthMethodEnabled';
  data: { path: string; type: AuthMethodType; accessor: string; description: string };
}

/** An auth method was disabled: its roles, secret IDs and the tokens it made go with it. */
export interface AuthMethodDisabled {
  type: 'AuthMethodDisabled';
  data: { path: string; accessor: string };
}

/** What an AppRole role decides (`auth/<mount>/role/:name`), whole; TTLs in seconds. */
export interface AppRoleSettings extends LoginTokenSettings {
  bind_secret_id: boolean;
  secret_id_bound_cidrs: string[];
  secret_id_num_uses: number;
  secret_id_ttl: number;
}

export interface AppRoleWritten {
  type: 'AppRoleWritten';
  data: { mount: string; name: string; roleId: string; settings: AppRoleSettings };
}

export interface AppRoleDeleted {
  type: 'AppRoleDeleted';
  data: { mount: string; name: string };
}

/** A secret ID was made for a role; only its HMAC is kept. */
export interface AppRoleSecretIdCreated {
  type: 'AppRoleSecretIdCreated';
  data: {
    mount: string;
    role: string;
    accessor: string;
    secretIdHmac: string;
    /** ISO time it stops working, or null. */
    expiresAt: string | null;
    /** Logins it allows (0: unlimited). */
    numUses: number;
    cidrs: string[];
    metadata: Record<string, string>;
  };
}

/** A login used a limited secret ID: `usesLeft` remain (it is destroyed at 0). */
export interface AppRoleSecretIdUsed {
  type: 'AppRoleSecretIdUsed';
  data: { accessor: string; usesLeft: number };
}

export interface AppRoleSecretIdDestroyed {
  type: 'AppRoleSecretIdDestroyed';
  data: { accessor: string };
}

/** A token role (`auth/token/roles/:name`) was written, whole. */
export interface TokenRoleWritten {
  type: 'TokenRoleWritten';
  data: { name: string; settings: TokenRoleSettings };
}

export interface TokenRoleDeleted {
  type: 'TokenRoleDeleted';
  data: { name: string };
}

/** What a token role decides for the tokens created against it. */
export interface TokenRoleSettings {
  allowed_policies: string[];
  disallowed_policies: string[];
  orphan: boolean;
  renewable: boolean;
  path_suffix: string;
  /** Seconds; 0: none. */
  explicit_max_ttl: number;
  period: number;
  /** The addresses its tokens may be used from (empty: any). */
  token_bound_cidrs: string[];
  /** Requests each of its tokens may make at most (absent or 0: as asked). */
  token_num_uses?: number;
}

/** `sys/mounts/:path/tune`: the mount's settings after the change, whole. */
export interface MountTuned {
  type: 'MountTuned';
  data: { path: string; description: string; config: MountConfig };
}

export interface MountDisabled {
  type: 'MountDisabled';
  data: { path: string };
}

export type SysEvent =
  | SecretsTokenCreated
  | SecretsTokenUsed
  | AuthMethodTuned
  | UserpassUserWritten
  | UserpassUserDeleted
  | SecretsTokenRenewed
  | SecretsTokenRevoked
  | TokenRoleWritten
  | TokenRoleDeleted
  | MountMoved
  | AuthMethodEnabled
  | AuthMethodDisabled
  | AppRoleWritten
  | AppRoleDeleted
  | AppRoleSecretIdCreated
  | AppRoleSecretIdUsed
  | AppRoleSecretIdDestroyed
  | JwtConfigWritten
  | JwtRoleWritten
  | JwtRoleDeleted
  | AclPolicyWritten
  | AclPolicyDeleted
  | MountEnabled
  | MountTuned
  | MountDisabled;

export const SYS_EVENT_TYPES: readonly SysEvent['type'][] = [
  'SecretsTokenCreated',
  'SecretsTokenUsed',
  'AuthMethodTuned',
  'UserpassUserWritten',
  'UserpassUserDeleted',
  'SecretsTokenRenewed',
  'SecretsTokenRevoked',
  'TokenRoleWritten',
  'TokenRoleDeleted',
  'MountMoved',
  'AuthMethodEnabled',
  'AuthMethodDisabled',
  'AppRoleWritten',
  'AppRoleDeleted',
  'AppRoleSecretIdCreated',
  'AppRoleSecretIdUsed',
  'AppRoleSecretIdDestroyed',
  'JwtConfigWritten',
  'JwtRoleWritten',
  'JwtRoleDeleted',
  'AclPolicyWritten',
  'AclPolicyDeleted',
  'MountEnabled',
  'MountTuned',
  'MountDisabled',
];

/** The schedule kind of a token's expiry (a row per token with a TTL, DESIGN §1.4). */
export const TIMER_TOKEN_EXPIRY = 'secrets-token-expiry';
export const tokenExpiryKey = (accessor: string) => `${TIMER_TOKEN_EXPIRY}:${accessor}`;

export const tokenStream = streamName`secrets-token-${'accessor'}`;
export const policyStream = streamName`acl-policy-${'name'}`;
export const mountStream = streamName`mount-${'path'}`;
export const tokenRoleStream = streamName`token-role-${'name'}`;
export const authMountStream = streamName`auth-mount-${'path'}`;
export const appRoleStream = streamName`approle-role-${'mount'}/${'name'}`;
export const secretIdStream = streamName`approle-secret-id-${'accessor'}`;
export const jwtConfigStream = streamName`jwt-config-${'mount'}`;
export const jwtRoleStream = streamName`jwt-role-${'mount'}/${'name'}`;
export const authTuneStream = streamName`auth-tune-${'path'}`;
export const userpassUserStream = streamName`userpass-user-${'mount'}/${'username'}`;
