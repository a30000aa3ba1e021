import { declarePath, field, segmentsOnly, type PathSchema } from '../fields.js';

/**
 * The system backend's paths (`sys/…`) and token authentication's (`auth/token/…`), with their
 * fields: routes parse their requests with these, and the OpenAPI document lists them.
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
  },
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

export const SYS_PATHS: readonly PathSchema[] = [
  segmentsOnly('sys/health', 'Health of the server', ['read']),
  segmentsOnly('sys/seal-status', 'Seal status of the server', ['read']),
  segmentsOnly('sys/internal/specs/openapi', 'This OpenAPI document', ['read']),
  segmentsOnly('sys/mounts', 'The mounted engines', ['read']),
  MOUNT,
  MOUNT_TUNE,
  segmentsOnly('sys/policies/acl', 'List ACL policies', ['list']),
  segmentsOnly('sys/policy', 'List ACL policies (the older path)', ['read']),
  POLICY,
  LEASE_LOOKUP,
  segmentsOnly('sys/leases/lookup/*prefix', 'List leases under a prefix', ['list']),
  LEASE_RENEW,
  LEASE_RENEW_ID,
  LEASE_REVOKE,
  LEASE_REVOKE_ID,
  segmentsOnly('sys/leases/revoke-prefix/*prefix', 'Revoke every lease under a prefix', ['update']),
  TOKEN_CREATE,
  declarePath({
    ...TOKEN_CREATE,
    pattern: 'auth/token/create-orphan',
    summary: 'Create an orphan token',
  }),
  segmentsOnly('auth/token/accessors', 'List token accessors', ['list']),
  segmentsOnly('auth/token/lookup-self', 'Look up the calling token', ['read', 'update']),
  TOKEN_LOOKUP,
  TOKEN_LOOKUP_ACCESSOR,
  segmentsOnly('auth/token/revoke-self', 'Revoke the calling token', ['update']),
  TOKEN_REVOKE,
  TOKEN_REVOKE_ACCESSOR,
  TOKEN_REVOKE_ORPHAN,
];
