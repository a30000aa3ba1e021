import { KeelError, ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { LeaseEvent, RevocationReason } from '../../../machines/lease.machine.js';
import { revocationRetryDelaySeconds } from '../../../machines/lease.machine.js';
import { leaseDecider } from './commands.js';
import { awsErrorText, deleteIamUser } from './cloud-calls.js';
import type { EngineDeps } from './deps.js';
import { addSeconds, systemMetadata } from './deps.js';
import { leaseStream } from './events.js';
import type { LeaseRow } from './queries.js';
import type { RootService } from './root.js';
import type { LeaseInfo, LeaseProvider } from '../sys/index.js';

/** Leases: renewal (iam_user only, up to lease_max), expiry and revocation with full IAM cleanup. */
export class LeaseService implements LeaseProvider {
  constructor(
    private readonly d: EngineDeps,
    private readonly root: RootService,
  ) {}

  private append(leaseId: string, events: LeaseEvent[], metadata: AuditMetadata) {
    return this.d.core.handler.handle(leaseStream(leaseId), leaseDecider, () => events, metadata);
  }

  /**
   * The end of a revocation (or a failed attempt), unless the lease has already ended: the
   * request that revokes a lease and the timer that drives its clean-up can both reach here.
   */
  private async conclude(
    leaseId: string,
    event: LeaseEvent,
    metadata: AuditMetadata,
  ): Promise<void> {
    await this.d.core.handler.handle(
      leaseStream(leaseId),
      leaseDecider,
      (s) => (s.status === 'done' ? [] : [event]),
      metadata,
    );
  }

  lookup(leaseId: string): LeaseInfo | undefined {
    const row = this.d.reads.lease(leaseId);
    if (!row) return undefined;
    return {
      id: row.leaseId,
      issue_time: row.issuedAt,
      expire_time: row.expiresAt,
      last_renewal: row.state === 'renewed' ? row.lastRenewal : null,
      renewable: row.renewable && row.state !== 'revoking',
      ttl: Math.max(
        0,
        Math.round((new Date(row.expiresAt).getTime() - this.d.core.clock.now().getTime()) / 1000),
      ),
    };
  }

  list(prefix: string): string[] {
    return this.d.reads.leasesWithPrefix(prefix).map((l) => l.leaseId);
  }

  /**
   * New TTL = increment, else the mount's `lease`, capped at issue + `lease_max`
   * (research §3.5). STS leases are not renewable.
   */
  async renew(
    leaseId: string,
    incrementSeconds: number | undefined,
    metadata: AuditMetadata,
  ): Promise<LeaseInfo> {
    const row = this.d.reads.lease(leaseId);
    if (!row) throw new ValidationError('lease not found');
    if (!row.renewable || row.state === 'revoking')
      throw new ValidationError('lease is not renewable');
    const now = this.d.core.clock.now();
    const max = new Date(row.maxExpiresAt);
    if (now >= max) throw new ValidationError('past the max TTL, cannot renew');
    const ttl =
      incrementSeconds && incrementSeconds > 0
        ? incrementSeconds
        : this.root.lease({ accessor: row.accessor, path: row.mountPath }).lease;
    const wanted = addSeconds(now, ttl);
    const expiresAt = wanted > max ? max : wanted;
    await this.append(
      leaseId,
      [
        {
          type: 'LeaseRenewed',
          data: { renewedAt: now.toISOString(), expiresAt: expiresAt.toISOString() },
        },
      ],
      metadata,
    );
    return {
      id: leaseId,
      issue_time: row.issuedAt,
      expire_time: expiresAt.toISOString(),
      last_renewal: now.toISOString(),
      renewable: true,
      ttl: Math.round((expiresAt.getTime() - now.getTime()) / 1000),
    };
  }

  /** Revokes now; an IAM cleanup failure keeps the lease revoking and retries it with backoff. */
  async revoke(leaseId: string, metadata: AuditMetadata): Promise<void> {
    const row = this.d.reads.lease(leaseId);
    if (!row) return;
    if (row.state !== 'revoking') await this.request(row, 'revoked', metadata);
    const error = await this.cleanup(row, metadata);
    if (error) {
      throw new KeelError(
        'internal',
        `failed to revoke lease "${leaseId}" (Keel retries it with backoff): ${error}`,
        { status: 500 },
      );
    }
  }

  async revokePrefix(prefix: string, metadata: AuditMetadata, force = false): Promise<number> {
    const errors: string[] = [];
    const rows = this.d.reads.leasesWithPrefix(prefix);
    for (const row of rows) {
      try {
        await this.revoke(row.leaseId, metadata);
      } catch (e) {
        if (!force) {
          errors.push((e as Error).message);
          continue;
        }
        // Forced: the lease ends here although its IAM user may remain (the reference's
        // revoke-force); the failure stays in the log and the daemon's warning.
        this.d.core.logger.warn(
          { leaseId: row.leaseId, err: (e as Error).message },
          'lease revoked by force; its IAM user may remain',
        );
        await this.conclude(
          row.leaseId,
          { type: 'LeaseRevoked', data: { revokedAt: this.d.core.clock.now().toISOString() } },
          metadata,
        );
      }
    }
    if (errors.length) throw new KeelError('internal', errors.join('; '), { status: 500 });
    return rows.length;
  }

  /**
   * The token that obtained these leases was revoked (or expired): revoke them. A cleanup failure
   * leaves the lease revoking; its retry timer takes over.
   */
  async revokeForToken(tokenAccessor: string, metadata: AuditMetadata): Promise<void> {
    for (const row of this.d.reads.leasesOfToken(tokenAccessor)) {
      await this.revoke(row.leaseId, metadata).catch((err: unknown) =>
        this.d.core.logger.warn({ err, leaseId: row.leaseId }, 'lease revocation failed'),
      );
    }
  }

  /** The expiry timer: an expired lease is revoked; a revoking one is retried. */
  async fire(leaseId: string): Promise<void> {
    const row = this.d.reads.lease(leaseId);
    if (!row) return;
    if (row.state !== 'revoking') {
      if (new Date(row.expiresAt) > this.d.core.clock.now()) return;
      await this.request(row, 'expired', systemMetadata);
    }
    await this.cleanup(row, systemMetadata);
  }

  private async request(
    row: LeaseRow,
    reason: RevocationReason,
    metadata: AuditMetadata,
  ): Promise<void> {
    await this.append(
      row.leaseId,
      [
        {
          type: 'LeaseRevocationRequested',
          data: { reason, requestedAt: this.d.core.clock.now().toISOString() },
        },
      ],
      metadata,
    );
  }

  /** Deletes the IAM user of an iam_user lease (STS credentials cannot be revoked early). */
  private async cleanup(row: LeaseRow, metadata: AuditMetadata): Promise<string | null> {
    if (row.kind === 'iam_user') {
      try {
        await deleteIamUser(
          this.d.clientsFor({ accessor: row.accessor, path: row.mountPath }).iam(),
          row.username,
        );
      } catch (e) {
        const error = awsErrorText(e);
        const attempt =
          this.d.core.handler.load(leaseStream(row.leaseId), leaseDecider).state.context.failures +
          1;
        const retryAt = addSeconds(
          this.d.core.clock.now(),
          revocationRetryDelaySeconds(attempt),
        ).toISOString();
        this.d.core.logger.warn(
          { leaseId: row.leaseId, attempt, err: error },
          'lease revocation failed',
        );
        await this.conclude(
          row.leaseId,
          { type: 'LeaseRevocationFailed', data: { error, attempt, retryAt } },
          metadata,
        );
        return error;
      }
    }
    await this.conclude(
      row.leaseId,
      { type: 'LeaseRevoked', data: { revokedAt: this.d.core.clock.now().toISOString() } },
      metadata,
    );
    return null;
  }
}
