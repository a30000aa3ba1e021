import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { initialTransition, transition } from 'xstate';
import {
  LEASE_STATES,
  leaseMachine,
  type LeaseEvent,
  type LeaseState,
} from '../../../machines/lease.machine.js';
import type { TestResponse } from '../../support/app.js';
import { createDevRole, startAws, type AwsHarness } from '../../support/aws.js';
import type { CloudGate } from '../../support/cloud-gate.js';
import { edgesToCover, statesReached, uncovered } from '../../support/graph-edges.js';

/**
 * Model-based tests: every transition of the lease machine, taken through the API (`creds`,
 * `sys/leases/renew|revoke|lookup`), the fake clock (expiry, retries) and the provider (a proxy
 * holds the IAM user's cleanup so `revoking` can be looked at, then lets it through or fails it).
 * After each step the lease as `sys/leases/lookup` shows it, and whether its key still works, are
 * compared with what the docs say its state shows.
 * Mutation check: `issued` LeaseRenewed → `revoking` fails issued|LeaseRenewed ("the machine after LeaseRenewed: expected 'revoking' to be 'renewed'").
 */

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
// The revocation reason decides the final state, so it is part of a node's identity; the retry
// counter is not, so the graph is finite.
const EDGES = edgesToCover(leaseMachine, leaseEvents, (s) =>
  JSON.stringify([s.value, (s.context as { reason: unknown }).reason]),
);

/** The state each step leads to (docs/api/cloud-credentials.md, leases). */
function after(state: string, reason: string | null, event: LeaseEvent): string {
  switch (event.type) {
    case 'LeaseIssued':
      return 'issued';
    case 'LeaseRenewed':
      return 'renewed';
    case 'LeaseRevocationRequested':
    case 'LeaseRevocationFailed':
      return 'revoking';
    case 'LeaseRevoked':
      // a revoke while expiry cleanup is pending is not an error and the lease ends expired
      return reason === 'expired' ? 'expired' : 'revoked';
    default: {
      const _never: never = event;
      return _never || state;
    }
  }
}

interface Shown {
  lookup: number;
  renewable: boolean | null;
  renewed: boolean;
  keyWorks: boolean;
}

/**
 * What each state shows: a live lease is found and renewable (with a last renewal once renewed);
 * while revoking it is found, no longer renewable, and its key still works (the user is not gone
 * yet); once expired or revoked it is not found and its key no longer works.
 */
const SHOWN: Record<Exclude<LeaseState, 'new'>, Shown> = {
  issued: { lookup: 200, renewable: true, renewed: false, keyWorks: true },
  renewed: { lookup: 200, renewable: true, renewed: true, keyWorks: true },
  revoking: { lookup: 200, renewable: false, renewed: false, keyWorks: true },
  expired: { lookup: 400, renewable: null, renewed: false, keyWorks: false },
  revoked: { lookup: 400, renewable: null, renewed: false, keyWorks: false },
};

let h: AwsHarness;
let gate: CloudGate;
beforeAll(async () => {
  h = await startAws({ gate: true });
  gate = h.gate!;
  const lease = await h.v1('POST', 'aws/config/lease', { body: { lease: '1h', lease_max: '24h' } });
  expect(lease.status, lease.text).toBe(204);
  await createDevRole(h);
});
afterAll(async () => h.close());

interface Lease {
  id: string;
  key: { access_key: string; secret_key: string };
  /** the IAM user the lease created */
  user: string;
  /** the cleanup held at the provider (a revoke request or the expiry timer), if any */
  inFlight: Promise<unknown> | null;
}

const expectStatus = (status: number) => (res: TestResponse) =>
  expect(res.status, res.text).toBe(status);

/** The IAM user's cleanup is held at its first call while `start` begins it. */
async function held(lease: Lease, start: () => Promise<unknown>): Promise<void> {
  gate.hold('ListGroupsForUser', lease.user);
  lease.inFlight = start();
  await gate.arrived();
}

/** Past any expiry or retry backoff, so the schedule fires. */
const due = () => h.clock.advance(3 * 3600_000);

async function perform(lease: Lease, event: LeaseEvent): Promise<void> {
  switch (event.type) {
    case 'LeaseIssued': {
      const res = await h.v1('GET', 'aws/creds/dev');
      expectStatus(200)(res);
      const env = res.json as { lease_id: string; data: Lease['key'] };
      lease.id = env.lease_id;
      lease.key = { access_key: env.data.access_key, secret_key: env.data.secret_key };
      const { Arn } = await h.cloud
        .sts({ accessKeyId: lease.key.access_key, secretAccessKey: lease.key.secret_key })
        .send(new GetCallerIdentityCommand({}));
      lease.user = Arn?.split('/').pop() ?? '';
      return;
    }
    case 'LeaseRenewed':
      expectStatus(200)(
        await h.v1('PUT', 'sys/leases/renew', { body: { lease_id: lease.id, increment: '2h' } }),
      );
      return;
    case 'LeaseRevocationRequested':
      if (event.data.reason === 'revoked')
        return held(lease, () =>
          h.v1('PUT', 'sys/leases/revoke', { body: { lease_id: lease.id } }),
        );
      due();
      return held(lease, () => h.settle());
    case 'LeaseRevocationFailed': {
      if (lease.inFlight === null) {
        due();
        await held(lease, () => h.settle());
      }
      const attempt = lease.inFlight;
      lease.inFlight = null;
      gate.fail();
      // a revoke request answers 500 (Keel retries it); the timer just records the failure
      await attempt;
      return;
    }
    case 'LeaseRevoked':
      if (lease.inFlight === null) {
        due();
        await h.settle();
        return;
      }
      gate.release();
      await lease.inFlight;
      lease.inFlight = null;
      return;
    default: {
      const _never: never = event;
      return _never;
    }
  }
}

async function shown(lease: Lease): Promise<Shown> {
  const res = await h.v1('PUT', 'sys/leases/lookup', { body: { lease_id: lease.id } });
  const data = (res.json as { data?: { renewable: boolean; last_renewal: string | null } }).data;
  return {
    lookup: res.status,
    renewable: res.status === 200 ? (data?.renewable ?? null) : null,
    renewed: res.status === 200 && (data?.last_renewal ?? null) !== null,
    keyWorks: await h.works(lease.key),
  };
}

describe('lease machine, every transition through the API, the clock and the provider', () => {
  it('has a path for every transition and every state', () => {
    expect(uncovered(leaseMachine, EDGES)).toEqual([]);
    expect(statesReached(EDGES)).toEqual([...LEASE_STATES].sort());
  });

  it.each(EDGES.map((e) => [e.key, e] as const))('%s', async (_key, edge) => {
    const lease: Lease = {
      id: '',
      key: { access_key: '', secret_key: '' },
      user: '',
      inFlight: null,
    };
    let model = initialTransition(leaseMachine)[0];
    let reason: string | null = null;
    try {
      for (const step of edge.steps) {
        // the payload follows the lease's history (retry numbers), the path gives the rest
        const event =
          step.type === 'LeaseRevocationFailed'
            ? leaseEvents(model).find((e) => e.type === step.type)!
            : step;
        expect(model.can(event), `${event.type} in ${String(model.value)}`).toBe(true);
        await perform(lease, event);
        const want = after(String(model.value), reason, event);
        if (event.type === 'LeaseRevocationRequested') reason = event.data.reason;
        model = transition(leaseMachine, model, event)[0];
        expect(model.value, `the machine after ${event.type}`).toBe(want);
        const now = await shown(lease);
        expect(now, `after ${event.type}`).toEqual(SHOWN[want as Exclude<LeaseState, 'new'>]);
      }
      // a lease no longer live refuses a renewal with a 400 and nothing changes
      if (model.value !== 'issued' && model.value !== 'renewed') {
        const position = h.app.core.store.lastPosition();
        const renew = await h.v1('PUT', 'sys/leases/renew', { body: { lease_id: lease.id } });
        expect(renew.status, renew.text).toBe(400);
        expect(h.app.core.store.lastPosition()).toBe(position);
      }
    } finally {
      gate.fail();
      await Promise.allSettled([lease.inFlight]);
      // no expiry of this lease may fall due while a later path holds the provider
      if (lease.id !== '') await h.v1('PUT', 'sys/leases/revoke', { body: { lease_id: lease.id } });
    }
  });
});
