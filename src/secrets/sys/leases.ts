import { systemMetadata, type AuditMetadata } from '../../core/events.js';
import type { Reactor } from '../../core/reactors.js';
import type { SecretsTokenRevoked } from './events.js';

/** What `sys/leases/lookup` shows of a lease. */
export interface LeaseInfo {
  id: string;
  issue_time: string;
  expire_time: string | null;
  last_renewal: string | null;
  renewable: boolean;
  ttl: number;
}

/**
 * Engines that hand out leases implement this; `sys/leases/*` routes a lease id to the provider
 * of the mount it starts with.
 */
export interface LeaseProvider {
  lookup(leaseId: string): LeaseInfo | undefined;
  renew(
    leaseId: string,
    incrementSeconds: number | undefined,
    metadata: AuditMetadata,
  ): Promise<LeaseInfo>;
  revoke(leaseId: string, metadata: AuditMetadata): Promise<void>;
  /** The ids of the live leases that start with the prefix, sorted. */
  list(prefix: string): string[];
  /**
   * Revoke every lease whose id starts with the prefix; returns how many. With `force`
   * (`sys/leases/revoke-force`), a lease whose clean-up at the provider fails is revoked all the
   * same instead of being retried: what it stood for may live on at the provider.
   */
  revokePrefix(prefix: string, metadata: AuditMetadata, force?: boolean): Promise<number>;
}

/**
 * The reactor of an engine whose leases go with the token that obtained them (the reference's
 * lease tree): a revoked or expired token's leases are revoked by `revokeForToken`.
 */
export const tokenLeasesReactor = (
  name: string,
  revokeForToken: (tokenAccessor: string, metadata: AuditMetadata) => Promise<void>,
): Reactor => ({
  name,
  types: ['SecretsTokenRevoked'],
  react: (e) =>
    revokeForToken(
      (e.data as SecretsTokenRevoked['data']).accessor,
      systemMetadata('token revocation', e.metadata.requestId),
    ),
});
