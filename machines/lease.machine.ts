import { assign, setup } from 'xstate';

/**
 * The lifecycle of a lease on dynamic cloud credentials.
 *
 * issued   → credentials handed out; expiry is scheduled
 * renewed  → the TTL was extended (iam_user leases only, never past the lease's max)
 * revoking → expiry or a revoke asked for cleanup; IAM work pending, failures retried with backoff
 * expired / revoked → final; nothing of the credentials is left at the provider (IAM user leases)
 *
 * STS leases have nothing to clean up: their revocation is requested and completed in one append.
 */

export type LeaseKind = 'iam_user' | 'assumed_role' | 'federation_token' | 'session_token';

export interface LeaseIssuedData {
  leaseId: string;
  /** The mount's accessor and path. */
  mount: { accessor: string; path: string };
  role: string;
  kind: LeaseKind;
  /** IAM user name (iam_user), session or federation name (STS types); used for cleanup. */
  username: string;
  /** The access key issued under this lease (the secret is never stored). */
  accessKeyId: string;
  issuedAt: string;
  expiresAt: string;
  /** The latest expiry a renewal may reach: issuedAt + lease_max. */
  maxExpiresAt: string;
  renewable: boolean;
  /** The accessor of the secrets token that obtained it: revoking the token revokes the lease. */
  tokenAccessor?: string;
}

export interface LeaseRenewedData {
  renewedAt: string;
  expiresAt: string;
}

export type RevocationReason = 'expired' | 'revoked';

export interface LeaseRevocationRequestedData {
  reason: RevocationReason;
  requestedAt: string;
}

export interface LeaseRevocationFailedData {
  error: string;
  attempt: number;
  retryAt: string;
}

export interface LeaseRevokedData {
  revokedAt: string;
}

export type LeaseEvent =
  | { type: 'LeaseIssued'; data: LeaseIssuedData }
  | { type: 'LeaseRenewed'; data: LeaseRenewedData }
  | { type: 'LeaseRevocationRequested'; data: LeaseRevocationRequestedData }
  | { type: 'LeaseRevocationFailed'; data: LeaseRevocationFailedData }
  | { type: 'LeaseRevoked'; data: LeaseRevokedData };

export interface LeaseContext {
  renewable: boolean;
  maxExpiresAt: string;
  reason: RevocationReason | null;
  failures: number;
}

/** Delay before revocation retry number `attempt` (1-based): 10 s doubling, capped at 10 minutes. */
export const revocationRetryDelaySeconds = (attempt: number): number =>
  Math.min(10 * 2 ** Math.max(0, attempt - 1), 600);

export const leaseMachine = setup({
  types: {
    context: {} as LeaseContext,
    events: {} as LeaseEvent,
  },
  guards: {
    // Only renewable (iam_user) leases, never past issue + lease_max. ISO timestamps in one
    // format compare correctly as strings.
    isRenewableWithinMax: ({ context, event }) =>
      context.renewable &&
      event.type === 'LeaseRenewed' &&
      event.data.expiresAt <= context.maxExpiresAt,
    isNextAttempt: ({ context, event }) =>
      event.type === 'LeaseRevocationFailed' && event.data.attempt === context.failures + 1,
    isExpiry: ({ context }) => context.reason === 'expired',
  },
  actions: {
    issue: assign(({ event }) =>
      event.type === 'LeaseIssued'
        ? {
            renewable: event.data.renewable,
            maxExpiresAt: event.data.maxExpiresAt,
            reason: null,
            failures: 0,
          }
        : {},
    ),
    request: assign(({ event }) =>
      event.type === 'LeaseRevocationRequested' ? { reason: event.data.reason } : {},
    ),
    fail: assign(({ context }) => ({ failures: context.failures + 1 })),
  },
}).createMachine({
  id: 'lease',
  initial: 'new',
  context: { renewable: false, maxExpiresAt: '', reason: null, failures: 0 },
  states: {
    new: { on: { LeaseIssued: { target: 'issued', actions: 'issue' } } },
    issued: {
      on: {
        LeaseRenewed: { target: 'renewed', guard: 'isRenewableWithinMax' },
        LeaseRevocationRequested: { target: 'revoking', actions: 'request' },
      },
    },
    renewed: {
      on: {
        LeaseRenewed: { target: 'renewed', guard: 'isRenewableWithinMax' },
        LeaseRevocationRequested: { target: 'revoking', actions: 'request' },
      },
    },
    revoking: {
      on: {
        LeaseRevocationFailed: { target: 'revoking', guard: 'isNextAttempt', actions: 'fail' },
        // A revoke while expiry cleanup is pending changes nothing but is not an error.
        LeaseRevoked: [{ target: 'expired', guard: 'isExpiry' }, { target: 'revoked' }],
      },
    },
    expired: { type: 'final' },
    revoked: { type: 'final' },
  },
});

export const LEASE_STATES = ['new', 'issued', 'renewed', 'revoking', 'expired', 'revoked'] as const;
export type LeaseState = (typeof LEASE_STATES)[number];
