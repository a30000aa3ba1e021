import type { Db } from '../../core/database.js';
import type { Sealed } from '../../core/seal.js';
import type { RoleEntry } from './role-schema.js';
import type { RootSettings } from './schema.js';

/** A mount's root configuration and lease settings. */
export interface ConfigRow {
  accessor: string;
  mountPath: string;
  settings: RootSettings | null;
  secretKey: Sealed | null;
  lease: number | null;
  leaseMax: number | null;
}

/** A static role and its current key (sealed). */
export interface StaticRoleRow {
  accessor: string;
  mountPath: string;
  name: string;
  username: string;
  userId: string;
  rotationPeriod: number;
  assumeRoleArn: string;
  assumeRoleSessionName: string;
  externalId: string;
  state: string;
  accessKey: string | null;
  secretKey: Sealed | null;
  expiration: string | null;
  failures: number;
}

/** A live lease. */
export interface LeaseRow {
  leaseId: string;
  accessor: string;
  mountPath: string;
  role: string;
  kind: string;
  username: string;
  accessKeyId: string;
  issuedAt: string;
  expiresAt: string;
  maxExpiresAt: string;
  renewable: boolean;
  state: string;
  failures: number;
  /** When it was last renewed, while it is in the renewed state. */
  lastRenewal: string | null;
}

/** Reads over the engine's read models (the tables `awsProjection` keeps). */
export class AwsReads {
  constructor(private readonly db: Db) {}

  config(accessor: string): ConfigRow | null {
    const r = this.db
      .prepare(
        `SELECT accessor, mount_path, settings, secret_key, lease, lease_max FROM aws_config WHERE accessor = ?`,
      )
      .get(accessor) as
      | {
          accessor: string;
          mount_path: string;
          settings: string | null;
          secret_key: string | null;
          lease: number | null;
          lease_max: number | null;
        }
      | undefined;
    if (!r) return null;
    return {
      accessor: r.accessor,
      mountPath: r.mount_path,
      settings: r.settings ? (JSON.parse(r.settings) as RootSettings) : null,
      secretKey: r.secret_key ? (JSON.parse(r.secret_key) as Sealed) : null,
      lease: r.lease,
      leaseMax: r.lease_max,
    };
  }

  role(accessor: string, name: string): RoleEntry | null {
    const r = this.db
      .prepare(`SELECT role FROM aws_roles WHERE accessor = ? AND name = ?`)
      .get(accessor, name) as { role: string } | undefined;
    return r ? (JSON.parse(r.role) as RoleEntry) : null;
  }

  roleNames(accessor: string): string[] {
    return (
      this.db
        .prepare(`SELECT name FROM aws_roles WHERE accessor = ? ORDER BY name`)
        .all(accessor) as { name: string }[]
    ).map((r) => r.name);
  }

  staticRole(accessor: string, name: string): StaticRoleRow | null {
    const r = this.db
      .prepare(`SELECT * FROM aws_static_roles WHERE accessor = ? AND name = ?`)
      .get(accessor, name) as Record<string, unknown> | undefined;
    return r ? staticRow(r) : null;
  }

  staticRoleNames(accessor: string): string[] {
    return (
      this.db
        .prepare(`SELECT name FROM aws_static_roles WHERE accessor = ? ORDER BY name`)
        .all(accessor) as { name: string }[]
    ).map((r) => r.name);
  }

  lease(leaseId: string): LeaseRow | null {
    const r = this.db.prepare(`SELECT * FROM aws_leases WHERE lease_id = ?`).get(leaseId) as
      Record<string, unknown> | undefined;
    return r ? leaseRow(r) : null;
  }

  /** Live leases whose id starts with `prefix` (ids are `<mount>/creds/<role>/<id>`). */
  /** Leases the token obtained that are not yet being revoked. */
  leasesOfToken(tokenAccessor: string): LeaseRow[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM aws_leases WHERE token_accessor = ? AND state <> 'revoking' ORDER BY lease_id`,
      )
      .all(tokenAccessor) as Record<string, unknown>[];
    return rows.map(leaseRow);
  }

  leasesWithPrefix(prefix: string): LeaseRow[] {
    const rows = this.db
      .prepare(`SELECT * FROM aws_leases WHERE substr(lease_id, 1, ?) = ? ORDER BY lease_id`)
      .all(prefix.length, prefix) as Record<string, unknown>[];
    return rows.map(leaseRow);
  }
}

function staticRow(r: Record<string, unknown>): StaticRoleRow {
  return {
    accessor: r.accessor as string,
    mountPath: r.mount_path as string,
    name: r.name as string,
    username: r.username as string,
    userId: r.user_id as string,
    rotationPeriod: r.rotation_period as number,
    assumeRoleArn: r.assume_role_arn as string,
    assumeRoleSessionName: r.assume_role_session_name as string,
    externalId: r.external_id as string,
    state: r.state as string,
    accessKey: (r.access_key as string | null) ?? null,
    secretKey: r.secret_key ? (JSON.parse(r.secret_key as string) as Sealed) : null,
    expiration: (r.expiration as string | null) ?? null,
    failures: r.failures as number,
  };
}

function leaseRow(r: Record<string, unknown>): LeaseRow {
  return {
    leaseId: r.lease_id as string,
    accessor: r.accessor as string,
    mountPath: r.mount_path as string,
    role: r.role as string,
    kind: r.kind as string,
    username: r.username as string,
    accessKeyId: r.access_key_id as string,
    issuedAt: r.issued_at as string,
    expiresAt: r.expires_at as string,
    maxExpiresAt: r.max_expires_at as string,
    renewable: r.renewable === 1,
    state: r.state as string,
    failures: r.failures as number,
    lastRenewal: (r.last_renewal as string | null) ?? null,
  };
}
