import { describe, expect, it } from 'vitest';
import { getShortestPaths, getSimplePaths } from '@xstate/graph';
import type { AnyMachineSnapshot } from 'xstate';
import { LEASE_STATES, leaseMachine } from '../../../machines/lease.machine.js';
import type { LeaseEvent } from '../../../machines/lease.machine.js';

const leaseEvents = (snap: AnyMachineSnapshot): LeaseEvent[] => {
  const failures = (snap.context as { failures: number }).failures;
  return [
    {
      type: 'LeaseIssued',
      data: {
        leaseId: 'aws/creds/r/x',
        mount: { accessor: 'm1', path: 'aws/' },
        role: 'r',
        kind: 'iam_user',
        username: 'u',
        accessKeyId: 'A',
        issuedAt: '2026-01-01T00:00:00.000Z',
        expiresAt: '2026-01-01T01:00:00.000Z',
        maxExpiresAt: '2026-01-02T00:00:00.000Z',
        renewable: true,
      },
    },
    { type: 'LeaseRenewed', data: { renewedAt: 't', expiresAt: '2026-01-01T02:00:00.000Z' } },
    { type: 'LeaseRevocationRequested', data: { reason: 'expired', requestedAt: 't' } },
    { type: 'LeaseRevocationRequested', data: { reason: 'revoked', requestedAt: 't' } },
    { type: 'LeaseRevocationFailed', data: { error: 'e', attempt: failures + 1, retryAt: 't' } },
    { type: 'LeaseRevoked', data: { revokedAt: 't' } },
  ];
};

// The revocation reason decides the final state, so it is part of a lease node's identity.
const leaseSerialize = (s: AnyMachineSnapshot) =>
  JSON.stringify([s.value, (s.context as { reason: unknown }).reason]);

describe('lease machine graph', () => {
  const paths = getShortestPaths(leaseMachine, {
    events: leaseEvents,
    serializeState: leaseSerialize,
  });

  it('reaches every state', () => {
    expect(new Set(paths.map((p) => p.state.value))).toEqual(new Set(LEASE_STATES));
  });

  it('expired is reached only through an expiry request, revoked only through a revoke', () => {
    for (const p of getSimplePaths(leaseMachine, {
      events: leaseEvents,
      serializeState: leaseSerialize,
    })) {
      const req = p.steps.map((s) => s.event).find((e) => e.type === 'LeaseRevocationRequested');
      if (p.state.value === 'expired') expect(req?.data).toMatchObject({ reason: 'expired' });
      if (p.state.value === 'revoked') expect(req?.data).toMatchObject({ reason: 'revoked' });
    }
  });
});
