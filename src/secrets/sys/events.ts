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
  };
}

export interface SecretsTokenRevoked {
  type: 'SecretsTokenRevoked';
  data: { accessor: string };
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
  | SecretsTokenRevoked
  | AclPolicyWritten
  | AclPolicyDeleted
  | MountEnabled
  | MountTuned
  | MountDisabled;

export const SYS_EVENT_TYPES: readonly SysEvent['type'][] = [
  'SecretsTokenCreated',
  'SecretsTokenRevoked',
  'AclPolicyWritten',
  'AclPolicyDeleted',
  'MountEnabled',
  'MountTuned',
  'MountDisabled',
];

export const tokenStream = (accessor: string) => `secrets-token-${accessor}`;
export const policyStream = (name: string) => `acl-policy-${name}`;
export const mountStream = (path: string) => `mount-${path}`;
