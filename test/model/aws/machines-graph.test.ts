import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { getShortestPaths, getSimplePaths } from '@xstate/graph';
import { initialTransition, transition } from 'xstate';
import type { AnyMachineSnapshot } from 'xstate';
import { STATIC_ROLE_STATES, staticRoleMachine } from '../../../machines/static-role.machine.js';
import type { StaticRoleEvent } from '../../../machines/static-role.machine.js';
import { LEASE_STATES, leaseMachine } from '../../../machines/lease.machine.js';
import type { LeaseEvent } from '../../../machines/lease.machine.js';

const sealed = { $sealed: 'x', $hmac: 'y' };
// The graph is explored with one representative of each event; state values alone identify nodes,
// so retry counters and key ids do not make the graph infinite.
const staticEvents = (snap: AnyMachineSnapshot): StaticRoleEvent[] => {
  const failures = (snap.context as { failures: number }).failures;
  const current = (snap.context as { currentKey: string | null }).currentKey;
  return [
    {
      type: 'StaticRoleAdopted',
      data: {
        mount: { accessor: 'm1', path: 'aws/' },
        name: 'r',
        username: 'u',
        userId: 'AIDA',
        rotationPeriod: 3600,
        assumeRoleArn: '',
        assumeRoleSessionName: '',
        externalId: '',
      },
    },
    {
      type: 'StaticRoleUpdated',
      data: { username: 'u', userId: 'AIDA', rotationPeriod: 120, nextRotationAt: 't' },
    },
    {
      type: 'StaticRoleKeyIssued',
      data: {
        accessKeyId: current === 'K1' ? 'K2' : 'K1',
        secretAccessKey: sealed,
        deletedAccessKeyId: null,
        issuedAt: 't',
        expiresAt: 't',
      },
    },
    { type: 'StaticRoleRotationStarted', data: { startedAt: 't', resumeAt: 't' } },
    { type: 'StaticRoleRotationFailed', data: { error: 'e', attempt: failures + 1, retryAt: 't' } },
    { type: 'StaticRoleDeleted', data: { deletedAccessKeyId: current } },
  ];
};
const serializeState = (s: AnyMachineSnapshot) => JSON.stringify(s.value);

describe('static role machine graph', () => {
  const paths = getShortestPaths(staticRoleMachine, { events: staticEvents, serializeState });

  it('reaches every state', () => {
    expect(new Set(paths.map((p) => p.state.value))).toEqual(new Set(STATIC_ROLE_STATES));
  });

  // Replaying each path through the pure fold (as the event store does) reaches the same state,
  // and the served key is set exactly in the states that serve one.
  it.each(paths.map((p) => [String(p.state.value), p] as const))(
    'path to %s replays',
    (_name, path) => {
      let [snap] = initialTransition(staticRoleMachine);
      for (const step of path.steps.slice(1)) {
        expect(snap.can(step.event)).toBe(true);
        [snap] = transition(staticRoleMachine, snap, step.event);
      }
      expect(snap.value).toEqual(path.state.value);
      if (snap.value === 'active') expect(snap.context.currentKey).not.toBeNull();
      if (snap.value === 'deleted' || snap.value === 'new')
        expect(snap.context.currentKey).toBeNull();
    },
  );

  it('every non-final state can reach deleted', () => {
    for (const state of STATIC_ROLE_STATES.filter((s) => s !== 'deleted' && s !== 'new')) {
      const from = paths.find((p) => p.state.value === state)?.state;
      expect(from).toBeDefined();
      const toDeleted = getShortestPaths(staticRoleMachine, {
        events: staticEvents,
        serializeState,
        fromState: from,
        toState: (s) => s.value === 'deleted',
      });
      expect(toDeleted.length, state).toBeGreaterThan(0);
    }
  });

  it('simple paths never issue the same key twice in a row', () => {
    const simple = getSimplePaths(staticRoleMachine, { events: staticEvents, serializeState });
    expect(simple.length).toBeGreaterThan(paths.length);
    for (const p of simple) {
      const keys = p.steps
        .map((s) => s.event)
        .filter(
          (e): e is Extract<StaticRoleEvent, { type: 'StaticRoleKeyIssued' }> =>
            e.type === 'StaticRoleKeyIssued',
        )
        .map((e) => e.data.accessKeyId);
      keys.forEach((k, i) => i > 0 && expect(k).not.toBe(keys[i - 1]));
    }
  });

  it('random event sequences: illegal events are refused and deleted absorbs', () => {
    const arb = fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 40 });
    fc.assert(
      fc.property(arb, (choices) => {
        let [snap] = initialTransition(staticRoleMachine);
        let wasDeleted = false;
        for (const c of choices) {
          const e = staticEvents(snap)[c] as StaticRoleEvent;
          if (!snap.can(e)) continue;
          [snap] = transition(staticRoleMachine, snap, e);
          if (wasDeleted) throw new Error('an event was accepted after deletion');
          wasDeleted = snap.value === 'deleted';
          expect(snap.context.rotationPeriod === 0 || snap.context.rotationPeriod >= 60).toBe(true);
        }
      }),
    );
  });
});

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
