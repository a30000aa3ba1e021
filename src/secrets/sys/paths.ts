import { declarePath, field } from '../fields.js';

/**
 * The system backend's paths (`sys/…`), token authentication's (`auth/token/…`) and the auth
 * methods' (`auth/:mount/…`), with their fields: the route files give each its handlers (and
 * parse requests with these), and paths-all.ts lists them.
 */

export const MOUNT = declarePath({
  pattern: 'sys/mounts/*path',
  summary: 'Read, enable or disable a secrets engine at a path',
  operations: ['read', 'update', 'delete'],
  fields: {
    path: field.string('The mount path', { required: true }),
    type: field.string('The type of engine (aws, pki)'),
    description: field.string('What the mount is for'),
    config: field.map('default_lease_ttl and max_lease_ttl of the mount'),
  },
});

export const MOUNT_TUNE = declarePath({
  pattern: 'sys/mounts/*path/tune',
  summary: "Read or tune a mount's settings",
  operations: ['read', 'update'],
  fields: {
    path: field.string('The mount path', { required: true }),
    default_lease_ttl: field.string('Default lease TTL (a duration, or system)'),
    max_lease_ttl: field.string('Maximum lease TTL (a duration, or system)'),
    description: field.string('What the mount is for'),
    allowed_response_headers: field.commaSlice('Response headers the mount may set'),
    passthrough_request_headers: field.commaSlice('Request headers passed to the mount'),
  },
});

export const POLICY = declarePath({
  pattern: 'sys/policies/acl/:name',
  summary: 'Read, write or delete an ACL policy',
  operations: ['read', 'update', 'delete'],
  fields: {
    name: field.string('Name of the policy', { required: true }),
    policy: field.string('The policy document (HCL or JSON)'),
    rules: field.string('Deprecated name of policy'),
  },
});

export const POLICY_LEGACY = declarePath({
  ...POLICY,
  pattern: 'sys/policy/:name',
  summary: 'Read, write or delete an ACL policy (the older path; reads answer `rules`)',
});

export const REMOUNT = declarePath({
  pattern: 'sys/remount',
  summary: 'Move a secrets engine to another path (its leases are revoked)',
  operations: ['update'],
  fields: {
    from: field.string('The path the engine is mounted at', { required: true }),
    to: field.string('The path to move it to', { required: true }),
  },
});

export const AUTH_MOUNT = declarePath({
  pattern: 'sys/auth/*path',
  summary: 'Enable or disable an auth method (only token/ is served)',
  operations: ['update', 'delete'],
  fields: {
    path: field.string('The auth mount path', { required: true }),
    type: field.string('The type of auth method'),
    description: field.string('What the auth method is for'),
    config: field.map('Settings of the auth method'),
  },
});

export const AUTH_TUNE = declarePath({
  pattern: 'sys/auth/*path/tune',
  summary: "Read or tune an auth method's settings (token/ included)",
  operations: ['read', 'update'],
  fields: {
    path: field.string('The auth mount path', { required: true }),
    default_lease_ttl: field.string("Default TTL of the method's tokens (a duration, or system)"),
    max_lease_ttl: field.string("Maximum TTL of the method's tokens (a duration, or system)"),
    description: field.string('What the auth method is for'),
    listing_visibility: field.string('unauth, hidden, or empty'),
    token_type: field.string('The type of the tokens (Keel serves service tokens)'),
  },
});

/** What the reference tunes on an auth method and Keel does not, with the reason. */
export const AUTH_TUNE_REFUSED: Readonly<Record<string, string>> = {
  audit_non_hmac_request_keys: 'Keel audits every request the same way',
  audit_non_hmac_response_keys: 'Keel audits every response the same way',
  passthrough_request_headers: 'auth methods see no request headers',
  allowed_response_headers: 'auth methods set no response headers',
  user_lockout_config: 'Keel locks no users out',
  plugin_version: 'Keel has no plugins',
  options: 'its auth methods take no options',
  allowed_managed_keys: 'Keel has no managed keys',
  identity_token_key: 'Keel has no identity tokens',
  token_bound_cidrs: 'set token_bound_cidrs on the role or user',
};

const LEASE_ID = { lease_id: field.string('The lease') };
export const LEASE_LOOKUP = declarePath({
  pattern: 'sys/leases/lookup',
  summary: 'Look up a lease',
  operations: ['update'],
  fields: LEASE_ID,
});
const RENEW_FIELDS = {
  ...LEASE_ID,
  increment: field.duration('The requested extension of the lease'),
};
export const LEASE_RENEW = declarePath({
  pattern: 'sys/leases/renew',
  summary: 'Renew a lease',
  operations: ['update'],
  fields: RENEW_FIELDS,
});
export const LEASE_RENEW_ID = declarePath({
  ...LEASE_RENEW,
  pattern: 'sys/leases/renew/*id',
  fields: { ...RENEW_FIELDS, id: field.string('The lease', { required: true }) },
});
export const LEASE_REVOKE = declarePath({
  pattern: 'sys/leases/revoke',
  summary: 'Revoke a lease',
  operations: ['update'],
  fields: LEASE_ID,
});

export const TOKEN_CREATE = declarePath({
  pattern: 'auth/token/create',
  summary: 'Create a child token',
  operations: ['update'],
  fields: {
    policies: field.commaSlice("Policies of the token (a subset of the parent's)"),
    no_parent: field.bool('Create an orphan token (root or sudo)', { default: false }),
    no_default_policy: field.bool('Leave the default policy out', { default: false }),
    ttl: field.duration('TTL of the token'),
    display_name: field.string('Display name of the token'),
    meta: field.map('Metadata of the token: a map of strings'),
    renewable: field.bool('Whether the token can be renewed', { default: true }),
    explicit_max_ttl: field.duration('A hard cap on the life of the token, renewals included'),
    period: field.duration('Make a periodic token: each renewal sets its TTL to this'),
    num_uses: field.int('Requests the token may make before it is revoked (0: unlimited)'),
    role_name: field.string('The token role to create the token against'),
    type: field.string('The token type (Keel serves service tokens)'),
  },
});

const ROLE_FIELDS = {
  allowed_policies: field.commaSlice('Policies a token of the role may have'),
  disallowed_policies: field.commaSlice('Policies a token of the role may not have'),
  orphan: field.bool('Tokens of the role are orphans'),
  renewable: field.bool('Tokens of the role can be renewed'),
  path_suffix: field.string('A suffix of the path tokens of the role are created at'),
  explicit_max_ttl: field.duration('Deprecated name of token_explicit_max_ttl'),
  token_explicit_max_ttl: field.duration('A hard cap on the life of tokens of the role'),
  period: field.duration('Deprecated name of token_period'),
  token_period: field.duration('Tokens of the role are periodic, with this period'),
  token_bound_cidrs: field.commaSlice('CIDRs tokens of the role may be used from'),
  token_num_uses: field.int('Requests each token of the role may make at most (0: as asked)'),
  token_type: field.string('The type of tokens of the role'),
};
export const TOKEN_ROLE = declarePath({
  pattern: 'auth/token/roles/:role_name',
  summary: 'Read, write or delete a token role',
  operations: ['read', 'update', 'delete'],
  fields: { role_name: field.string('Name of the role', { required: true }), ...ROLE_FIELDS },
});
export const TOKEN_CREATE_ROLE = declarePath({
  ...TOKEN_CREATE,
  pattern: 'auth/token/create/:role_name',
  summary: 'Create a token against a token role',
  fields: {
    ...TOKEN_CREATE.fields,
    role_name: field.string('The token role', { required: true }),
  },
});
export const TOKEN_CREATE_ORPHAN = declarePath({
  ...TOKEN_CREATE,
  pattern: 'auth/token/create-orphan',
  summary: 'Create an orphan token',
});
const RENEW = { increment: field.duration('The requested TTL of the token from now') };
export const TOKEN_RENEW = declarePath({
  pattern: 'auth/token/renew',
  summary: 'Renew a token',
  operations: ['update'],
  fields: { token: field.string('The token'), ...RENEW },
});
export const TOKEN_RENEW_SELF = declarePath({
  pattern: 'auth/token/renew-self',
  summary: 'Renew the calling token',
  operations: ['update'],
  fields: RENEW,
});
export const TOKEN_RENEW_ACCESSOR = declarePath({
  pattern: 'auth/token/renew-accessor',
  summary: 'Renew a token by accessor',
  operations: ['update'],
  fields: { accessor: field.string("The token's accessor"), ...RENEW },
});

const TOKEN = { token: field.string('The token') };
const ACCESSOR = { accessor: field.string("The token's accessor") };
export const LEASE_REVOKE_ID = declarePath({
  ...LEASE_REVOKE,
  pattern: 'sys/leases/revoke/*id',
  fields: { ...LEASE_ID, id: field.string('The lease', { required: true }) },
});
const tokenPath = (pattern: string, summary: string) =>
  declarePath({ pattern, summary, operations: ['update'], fields: TOKEN });
const accessorPath = (pattern: string, summary: string) =>
  declarePath({ pattern, summary, operations: ['update'], fields: ACCESSOR });
export const TOKEN_LOOKUP = tokenPath('auth/token/lookup', 'Look up a token');
export const TOKEN_REVOKE = tokenPath('auth/token/revoke', 'Revoke a token and its children');
export const TOKEN_REVOKE_ORPHAN = tokenPath(
  'auth/token/revoke-orphan',
  'Revoke a token, keeping its children',
);
export const TOKEN_LOOKUP_ACCESSOR = accessorPath(
  'auth/token/lookup-accessor',
  'Look up a token by accessor',
);
export const TOKEN_REVOKE_ACCESSOR = accessorPath(
  'auth/token/revoke-accessor',
  'Revoke a token by accessor',
);

/** A JWT role's own fields (the token_* fields are shared with AppRole). */
const JWT_ROLE_FIELDS = {
  role_type: field.string('jwt (Keel serves no oidc roles)'),
  bound_audiences: field.commaSlice('Audiences a token must have one of'),
  user_claim: field.string('The claim that names the user'),
  bound_subject: field.string('The subject a token must have'),
  bound_claims: field.map('Claims a token must carry, each with its allowed values'),
  bound_claims_type: field.string('string (Keel serves no glob matching)'),
  claim_mappings: field.map('Claims copied into the token metadata, by metadata key'),
  groups_claim: field.string('Identity groups (not served)'),
  clock_skew_leeway: field.signedDuration('Leeway for clock skew (default 60s)'),
  expiration_leeway: field.signedDuration('Leeway past exp (default 150s)'),
  not_before_leeway: field.signedDuration('Leeway before nbf (default 150s)'),
  allowed_redirect_uris: field.commaSlice('OIDC redirects (not served)'),
  oidc_scopes: field.commaSlice('OIDC scopes (not served)'),
};

export const JWT_CONFIG = declarePath({
  pattern: 'auth/:mount/config',
  summary: "Read or write a JWT method's keys and issuer",
  operations: ['read', 'update'],
  fields: {
    mount: field.string('The path the JWT method is enabled at', { required: true }),
    jwt_validation_pubkeys: field.commaSlice('PEM public keys tokens are checked with'),
    bound_issuer: field.string('The issuer a token must have'),
    jwt_supported_algs: field.commaSlice('Signing algorithms accepted (default: all)'),
    default_role: field.string('The role a login names none'),
    jwks_url: field.string('A JWKS to fetch keys from (not served)'),
    oidc_discovery_url: field.string('OIDC discovery (not served)'),
  },
});

const MOUNT_FIELD = {
  mount: field.string('The path the AppRole method is enabled at', { required: true }),
};
const ROLE_NAME = { role_name: field.string('Name of the role', { required: true }) };
export const APPROLE_ROLE = declarePath({
  pattern: 'auth/:mount/role/:role_name',
  summary: 'Read, write or delete an AppRole or JWT role (the fields of the method enabled there)',
  operations: ['read', 'update', 'delete'],
  fields: {
    ...MOUNT_FIELD,
    ...ROLE_NAME,
    bind_secret_id: field.bool('Logins must present a secret ID (Keel requires it)'),
    secret_id_bound_cidrs: field.commaSlice('CIDRs a secret ID may log in from'),
    secret_id_num_uses: field.int('Logins a secret ID allows (0: unlimited)'),
    secret_id_ttl: field.duration('How long a secret ID lives (0: forever)'),
    token_policies: field.commaSlice('Policies of the tokens logins get'),
    policies: field.commaSlice('Deprecated name of token_policies'),
    token_ttl: field.duration('TTL of the tokens logins get'),
    token_max_ttl: field.duration('Maximum life of the tokens logins get'),
    token_explicit_max_ttl: field.duration('A hard cap on the life of the tokens'),
    token_period: field.duration('The tokens are periodic, with this period'),
    period: field.duration('Deprecated name of token_period'),
    token_no_default_policy: field.bool('Leave the default policy out'),
    token_num_uses: field.int('Uses of the tokens (Keel serves only 0)'),
    token_type: field.string('The type of the tokens (Keel serves service tokens)'),
    token_bound_cidrs: field.commaSlice('CIDRs the tokens may be used from (not served)'),
    local_secret_ids: field.bool('Secret IDs local to a cluster (not served)'),
    ...JWT_ROLE_FIELDS,
  },
});
export const APPROLE_ROLE_ID = declarePath({
  pattern: 'auth/:mount/role/:role_name/role-id',
  summary: "Read or set a role's role ID",
  operations: ['read', 'update'],
  fields: { ...MOUNT_FIELD, ...ROLE_NAME, role_id: field.string('The role ID') },
});
const SECRET_ID_FIELDS = {
  ...MOUNT_FIELD,
  ...ROLE_NAME,
  metadata: field.string('A JSON object of strings kept with the secret ID'),
  cidr_list: field.commaSlice('CIDRs the secret ID may log in from'),
  token_bound_cidrs: field.commaSlice('CIDRs the tokens may be used from (not served)'),
  ttl: field.duration('How long the secret ID lives (at most the role’s secret_id_ttl)'),
  num_uses: field.int('Logins the secret ID allows (at most the role’s secret_id_num_uses)'),
};
export const APPROLE_SECRET_ID = declarePath({
  pattern: 'auth/:mount/role/:role_name/secret-id',
  summary: 'Make a secret ID for a role, or list their accessors',
  operations: ['update', 'list'],
  fields: SECRET_ID_FIELDS,
});
export const APPROLE_CUSTOM_SECRET_ID = declarePath({
  pattern: 'auth/:mount/role/:role_name/custom-secret-id',
  summary: 'Register a secret ID chosen by the caller',
  operations: ['update'],
  fields: { ...SECRET_ID_FIELDS, secret_id: field.string('The secret ID') },
});
const bySecret = (pattern: string, summary: string) =>
  declarePath({
    pattern,
    summary,
    operations: ['update'],
    fields: { ...MOUNT_FIELD, ...ROLE_NAME, secret_id: field.string('The secret ID') },
  });
const byAccessor = (pattern: string, summary: string) =>
  declarePath({
    pattern,
    summary,
    operations: ['update'],
    fields: {
      ...MOUNT_FIELD,
      ...ROLE_NAME,
      secret_id_accessor: field.string("The secret ID's accessor"),
    },
  });
export const APPROLE_SECRET_LOOKUP = bySecret(
  'auth/:mount/role/:role_name/secret-id/lookup',
  'Look up a secret ID',
);
export const APPROLE_SECRET_DESTROY = bySecret(
  'auth/:mount/role/:role_name/secret-id/destroy',
  'Destroy a secret ID',
);
export const APPROLE_ACCESSOR_LOOKUP = byAccessor(
  'auth/:mount/role/:role_name/secret-id-accessor/lookup',
  'Look up a secret ID by accessor',
);
export const APPROLE_ACCESSOR_DESTROY = byAccessor(
  'auth/:mount/role/:role_name/secret-id-accessor/destroy',
  'Destroy a secret ID by accessor',
);
export const APPROLE_LOGIN = declarePath({
  pattern: 'auth/:mount/login',
  summary: 'Log in with a role ID and a secret ID (no token needed)',
  operations: ['update'],
  fields: {
    ...MOUNT_FIELD,
    role_id: field.string('The role ID (AppRole)'),
    secret_id: field.string('The secret ID (AppRole)'),
    role: field.string('The role (JWT)'),
    jwt: field.string('The signed token (JWT)'),
  },
});

const USERNAME = { username: field.string('The user', { required: true }) };
export const USERPASS_USER = declarePath({
  pattern: 'auth/:mount/users/:username',
  summary: 'Read, write or delete a userpass user',
  operations: ['read', 'update', 'delete'],
  fields: {
    ...MOUNT_FIELD,
    ...USERNAME,
    password: field.string('The password (kept only as a salted hash)'),
    password_hash: field.string('A bcrypt hash of the password (not served)'),
    token_policies: field.commaSlice('Policies of the tokens logins get'),
    policies: field.commaSlice('Deprecated name of token_policies'),
    token_ttl: field.duration('TTL of the tokens logins get'),
    ttl: field.duration('Deprecated name of token_ttl'),
    token_max_ttl: field.duration('Maximum life of the tokens logins get'),
    max_ttl: field.duration('Deprecated name of token_max_ttl'),
    token_explicit_max_ttl: field.duration('A hard cap on the life of the tokens'),
    token_period: field.duration('The tokens are periodic, with this period'),
    token_no_default_policy: field.bool('Leave the default policy out'),
    token_num_uses: field.int('Requests each token may make (0: unlimited)'),
    token_bound_cidrs: field.commaSlice('CIDRs logins (and their tokens) may come from'),
    bound_cidrs: field.commaSlice('Deprecated name of token_bound_cidrs'),
    token_type: field.string('The type of the tokens (Keel serves service tokens)'),
  },
});
export const USERPASS_PASSWORD = declarePath({
  pattern: 'auth/:mount/users/:username/password',
  summary: "Change a userpass user's password",
  operations: ['update'],
  fields: { ...MOUNT_FIELD, ...USERNAME, password: field.string('The new password') },
});
export const USERPASS_POLICIES = declarePath({
  pattern: 'auth/:mount/users/:username/policies',
  summary: "Change a userpass user's token policies",
  operations: ['update'],
  fields: {
    ...MOUNT_FIELD,
    ...USERNAME,
    token_policies: field.commaSlice('Policies of the tokens logins get'),
    policies: field.commaSlice('Deprecated name of token_policies'),
  },
});
export const USERPASS_LOGIN = declarePath({
  pattern: 'auth/:mount/login/:username',
  summary: 'Log in with a username and password (no token needed)',
  operations: ['update'],
  fields: { ...MOUNT_FIELD, ...USERNAME, password: field.string('The password') },
});
