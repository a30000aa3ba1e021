import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import {
  rotationRetryDelaySeconds,
  staticRoleMachine,
} from '../../../machines/static-role.machine.js';
import type { StaticRoleEvent } from '../../../machines/static-role.machine.js';
import { leaseMachine, revocationRetryDelaySeconds } from '../../../machines/lease.machine.js';
import type { LeaseEvent } from '../../../machines/lease.machine.js';
import {
  adopted,
  deleted,
  failed,
  issued,
  leaseIssued,
  renewed,
  request,
  revFailed,
  revoked,
  started,
  updated,
} from '../../support/aws-machine-events.js';

function foldStatic(events: readonly StaticRoleEvent[]) {
  let [snap] = initialTransition(staticRoleMachine);
  for (const e of events) {
    if (!snap.can(e)) throw new Error(`illegal ${e.type} in ${JSON.stringify(snap.value)}`);
    [snap] = transition(staticRoleMachine, snap, e);
  }
  return snap;
}

function foldLease(events: readonly LeaseEvent[]) {
  let [snap] = initialTransition(leaseMachine);
  for (const e of events) {
    if (!snap.can(e)) throw new Error(`illegal ${e.type} in ${JSON.stringify(snap.value)}`);
    [snap] = transition(leaseMachine, snap, e);
  }
  return snap;
}

describe('static role machine', () => {
  it('adopts, issues the first key and becomes active', () => {
    const s = foldStatic([adopted(), issued('K1')]);
    expect(s.value).toBe('active');
    expect(s.context.currentKey).toBe('K1');
  });

  it('refuses a rotation period under one minute, on adopt and on update', () => {
    const [init] = initialTransition(staticRoleMachine);
    expect(init.can(adopted(59))).toBe(false);
    expect(init.can(adopted(60))).toBe(true);
    const active = foldStatic([adopted(), issued('K1')]);
    expect(active.can(updated(30))).toBe(false);
    expect(active.can(updated(120))).toBe(true);
  });

  it('rotates: active → rotating → active with a new key', () => {
    const s = foldStatic([adopted(), issued('K1'), started, issued('K2')]);
    expect(s.value).toBe('active');
    expect(s.context.currentKey).toBe('K2');
  });

  it('refuses re-issuing the key already served', () => {
    const s = foldStatic([adopted(), issued('K1'), started]);
    expect(s.can(issued('K1'))).toBe(false);
  });

  it('counts failed attempts in order and resets them on success', () => {
    const s = foldStatic([adopted(), issued('K1'), started, failed(1), started, failed(2)]);
    expect(s.value).toBe('rotation_failed');
    expect(s.context.failures).toBe(2);
    expect(s.can(started)).toBe(true);
    const again = foldStatic([adopted(), issued('K1'), started, failed(1), started]);
    expect(again.can(failed(1))).toBe(false);
    const ok = foldStatic([adopted(), issued('K1'), started, failed(1), started, issued('K2')]);
    expect(ok.context.failures).toBe(0);
  });

  it('an adoption interrupted before its first key resumes as a rotation', () => {
    expect(foldStatic([adopted(), started, issued('K1')]).value).toBe('active');
  });

  it('a failed first key leaves the role waiting for a retry', () => {
    const s = foldStatic([adopted(), failed(1), started, issued('K1')]);
    expect(s.value).toBe('active');
  });

  it('updates keep the state and change the period', () => {
    const s = foldStatic([adopted(), issued('K1'), updated(120)]);
    expect(s.value).toBe('active');
    expect(s.context.rotationPeriod).toBe(120);
  });

  it('deleted is final and accepts nothing', () => {
    const s = foldStatic([adopted(), issued('K1'), deleted]);
    expect(s.status).toBe('done');
    for (const e of [adopted(), issued('K3'), started, updated(120), deleted])
      expect(s.can(e)).toBe(false);
  });

  it('backs off 10 s, doubling, capped at 10 minutes', () => {
    expect([1, 2, 3, 4, 7, 20].map(rotationRetryDelaySeconds)).toEqual([10, 20, 40, 80, 600, 600]);
  });
});

describe('lease machine', () => {
  it('renews an iam_user lease up to its max, not past it', () => {
    const s = foldLease([leaseIssued(), renewed('2026-01-01T05:00:00.000Z')]);
    expect(s.value).toBe('renewed');
    expect(s.can(renewed('2026-01-02T00:00:00.000Z'))).toBe(true);
    expect(s.can(renewed('2026-01-02T00:00:00.001Z'))).toBe(false);
  });

  it('never renews an STS lease', () => {
    expect(foldLease([leaseIssued(false)]).can(renewed('2026-01-01T00:30:00.000Z'))).toBe(false);
  });

  it('expiry ends in expired, revoke in revoked', () => {
    expect(foldLease([leaseIssued(), request('expired'), revoked]).value).toBe('expired');
    expect(
      foldLease([leaseIssued(), renewed('2026-01-01T02:00:00.000Z'), request('revoked'), revoked])
        .value,
    ).toBe('revoked');
  });

  it('retries failed revocations in order and refuses renewals meanwhile', () => {
    const s = foldLease([leaseIssued(), request('revoked'), revFailed(1), revFailed(2)]);
    expect(s.value).toBe('revoking');
    expect(s.context.failures).toBe(2);
    expect(s.can(revFailed(2))).toBe(false);
    expect(s.can(renewed('2026-01-01T02:00:00.000Z'))).toBe(false);
    expect(s.can(request('revoked'))).toBe(false);
    expect(s.can(revoked)).toBe(true);
  });

  it('final states accept nothing', () => {
    for (const end of [
      foldLease([leaseIssued(), request('expired'), revoked]),
      foldLease([leaseIssued(false), request('revoked'), revoked]),
    ]) {
      expect(end.status).toBe('done');
      for (const e of [
        leaseIssued(),
        renewed('2026-01-01T02:00:00.000Z'),
        request('revoked'),
        revFailed(1),
        revoked,
      ])
        expect(end.can(e)).toBe(false);
    }
  });

  it('backs off revocation retries like rotations', () => {
    expect([1, 2, 3, 10].map(revocationRetryDelaySeconds)).toEqual([10, 20, 40, 600]);
  });
});
