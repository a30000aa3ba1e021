import { KeelError, ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import { parseFields } from '../fields.js';
import type { LeaseInfo, LeaseProvider } from '../sys/leases.js';
import type { Authority } from './authority.js';
import { REVOKE_PATH } from './paths.js';
import type { LeaseRow } from './projection.js';
import { revoke } from './revoke.js';
import { leaseDecider } from './deciders.js';
import { streams } from './events.js';
import type { Role } from './role.js';

/**
 * Certificate leases (a role's `generate_lease`), as the reference makes them: a certificate
 * issued or signed through such a role gets a lease that ends at its `notAfter` and cannot be
 * renewed. Revoking the lease (`sys/leases/revoke*`, the token that obtained it, the mount's
 * disabling) revokes the certificate, which its issuer's CRL then lists; a lease that reaches its
 * end is gone with nothing more to do, the certificate having expired.
 *
 * The lease lives in the certificate's own row and event: live until it is revoked itself or the
 * certificate's `notAfter` passes. A `revoke` of the certificate leaves it, as the reference's does.
 */

/** Whether a role makes leases: `generate_lease`, unless it stores nothing (`no_store` wins). */
export const leasesOf = (role: Role | undefined): boolean =>
  role !== undefined && role.generate_lease && !role.no_store;

/**
 * The lease id of a certificate issued at `requestPath` (the request's path under `/v1/`, e.g.
 * `pki/issue/web`) when `wanted`: the path and a random suffix, as the reference's.
 */
export function leaseFor(
  authority: Authority,
  wanted: boolean,
  requestPath: string | undefined,
): string | undefined {
  if (requestPath === undefined || !wanted) return undefined;
  return `${requestPath}/${authority.core.ids.secret(24)}`;
}

/** What an answer says of a lease: its id and the seconds until the certificate's `notAfter`. */
export function leaseAnswer(
  authority: Authority,
  leaseId: string | undefined,
  notAfter: Date,
): { id: string; duration: number } | undefined {
  if (leaseId === undefined) return undefined;
  const seconds = (notAfter.getTime() - authority.core.clock.now().getTime()) / 1000;
  return { id: leaseId, duration: Math.max(0, Math.floor(seconds)) };
}

/** The certificate authority's side of `sys/leases`, for every mount of the engine. */
export class PkiLeases implements LeaseProvider {
  readonly #authority: Authority;

  constructor(authority: Authority) {
    this.#authority = authority;
  }

  #now(): string {
    return this.#authority.core.clock.now().toISOString();
  }

  lookup(leaseId: string): LeaseInfo | undefined {
    const row = this.#authority.q.lease(leaseId, this.#now());
    return row === undefined ? undefined : this.#info(row);
  }

  list(prefix: string): string[] {
    return this.#authority.q.leasesWithPrefix(prefix, this.#now()).map((r) => r.lease_id);
  }

  /** A certificate's lease is never renewable: its end is the certificate's. */
  renew(leaseId: string): Promise<LeaseInfo> {
    const row = this.#authority.q.lease(leaseId, this.#now());
    return Promise.reject(
      new ValidationError(row === undefined ? 'lease not found' : 'lease is not renewable'),
    );
  }

  /** Revokes the lease's certificate (and so its issuer's CRL lists it); an ended lease: nothing. */
  async revoke(leaseId: string, metadata: AuditMetadata): Promise<void> {
    const row = this.#authority.q.lease(leaseId, this.#now());
    if (row !== undefined) await this.#revoke(row, metadata);
  }

  /**
   * Revokes every lease whose id starts with `prefix`. A certificate's revocation is recorded
   * before its CRL is built, so what fails here is the CRL: without `force` the error is answered
   * (the revocation stays, and a later build lists it), with it the rest go on.
   */
  async revokePrefix(prefix: string, metadata: AuditMetadata, force = false): Promise<number> {
    const rows = this.#authority.q.leasesWithPrefix(prefix, this.#now());
    const errors: string[] = [];
    for (const row of rows) {
      try {
        await this.#revoke(row, metadata);
      } catch (err) {
        if (!force) errors.push(err instanceof Error ? err.message : String(err));
      }
    }
    if (errors.length > 0) throw new KeelError('internal', errors.join('; '), { status: 500 });
    return rows.length;
  }

  /** The token that obtained these leases was revoked (or expired): their certificates are too. */
  async revokeForToken(accessor: string, metadata: AuditMetadata): Promise<void> {
    for (const row of this.#authority.q.leasesOfToken(accessor, this.#now())) {
      await this.#revoke(row, metadata).catch((err: unknown) =>
        this.#authority.core.logger.warn(
          { err, leaseId: row.lease_id },
          "a certificate's lease was not revoked with its token",
        ),
      );
    }
  }

  /**
   * Revokes the certificate (a certificate revoked already, or about to expire, is left as it is,
   * as `revoke` leaves it) and ends the lease, in one command.
   */
  async #revoke(row: LeaseRow, metadata: AuditMetadata): Promise<void> {
    const authority = this.#authority;
    const fields = parseFields(REVOKE_PATH, { serial_number: row.serial });
    const { mount, serial, lease_id: leaseId } = row;
    await authority.run(() =>
      authority.atomically(() => {
        revoke(authority, mount, metadata, fields);
        const revokedAt = authority.core.clock.now().toISOString();
        authority.append(
          streams.lease(mount, serial),
          leaseDecider,
          () => [{ type: 'PkiLeaseRevoked' as const, data: { mount, serial, leaseId, revokedAt } }],
          metadata,
        );
      }),
    );
  }

  #info(row: LeaseRow): LeaseInfo {
    const now = this.#authority.core.clock.now().getTime();
    return {
      id: row.lease_id,
      issue_time: row.leased_at,
      expire_time: row.not_after,
      last_renewal: null,
      renewable: false,
      ttl: Math.max(0, Math.round((Date.parse(row.not_after) - now) / 1000)),
    };
  }
}
