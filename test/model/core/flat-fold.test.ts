import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createActor, initialTransition } from 'xstate';
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import { machines } from '../../../machines/index.js';
import { flatFold } from '../../../src/core/flat-fold.js';
import { accountMachine } from '../../support/ledger/machine.js';
import { RUN_EVENTS } from '../../support/run-machine-events.js';

/**
 * The flat fold against xstate's own `transition`: random sequences of events (with the payload
 * variants the guards tell apart) folded both ways give the same snapshot after every event, and
 * the snapshots answer `can`, `matches` and `hasTag` alike, as does the flat fold's own `can`.
 */

const T5 = '2026-01-01T00:00:05.000Z';
const T10 = '2026-01-01T00:00:10.000Z';

const plain = (...types: string[]): Sample[] => types.map((type) => ({ type, data: {} }));

/** An event with a payload, as the machines' events are. */
type Sample = EventObject & { data: object };

const SAMPLES: Record<string, Sample[]> = {
  run: [
    ...RUN_EVENTS,
    // Before the cool-off ends: the guard refuses it.
    { type: 'RunForceCanceled', data: { at: T5 } },
  ],
  'configuration-version': plain(
    'ConfigurationVersionCreated',
    'ConfigurationVersionUploaded',
    'ConfigurationVersionErrored',
    'ConfigurationVersionArchived',
  ),
  certificate: plain('CertificateIssued', 'CertificateRevoked', 'CertificateDeleted'),
  'static-role': [
    { type: 'StaticRoleAdopted', data: { rotationPeriod: 3600 } },
    { type: 'StaticRoleAdopted', data: { rotationPeriod: 1 } },
    { type: 'StaticRoleUpdated', data: { rotationPeriod: 7200 } },
    { type: 'StaticRoleUpdated', data: { rotationPeriod: 1 } },
    { type: 'StaticRoleKeyIssued', data: { accessKeyId: 'K1' } },
    { type: 'StaticRoleKeyIssued', data: { accessKeyId: 'K2' } },
    { type: 'StaticRoleKeyIssued', data: { accessKeyId: '' } },
    { type: 'StaticRoleRotationFailed', data: { attempt: 1 } },
    { type: 'StaticRoleRotationFailed', data: { attempt: 2 } },
    ...plain('StaticRoleRotationStarted', 'StaticRoleDeleted'),
  ],
  lease: [
    { type: 'LeaseIssued', data: { renewable: true, maxExpiresAt: T10 } },
    { type: 'LeaseIssued', data: { renewable: false, maxExpiresAt: T10 } },
    { type: 'LeaseRenewed', data: { expiresAt: T5 } },
    { type: 'LeaseRenewed', data: { expiresAt: '2026-01-02T00:00:00.000Z' } },
    { type: 'LeaseRevocationRequested', data: { reason: 'expired' } },
    { type: 'LeaseRevocationRequested', data: { reason: 'revoked' } },
    { type: 'LeaseRevocationFailed', data: { attempt: 1 } },
    { type: 'LeaseRevocationFailed', data: { attempt: 3 } },
    ...plain('LeaseRevoked'),
  ],
  'acme-account': plain(
    'AcmeAccountCreated',
    'AcmeAccountUpdated',
    'AcmeAccountKeyChanged',
    'AcmeAccountDeactivated',
  ),
  'acme-order': plain(
    'AcmeOrderCreated',
    'AcmeOrderReady',
    'AcmeOrderIssued',
    'AcmeOrderInvalidated',
  ),
  'acme-authorization': plain(
    'AcmeAuthorizationCreated',
    'AcmeAuthorizationValidated',
    'AcmeAuthorizationInvalidated',
    'AcmeAuthorizationDeactivated',
  ),
  'acme-challenge': plain(
    'AcmeChallengeOffered',
    'AcmeChallengeStarted',
    'AcmeChallengeAttemptFailed',
    'AcmeChallengeValidated',
    'AcmeChallengeFailed',
  ),
  account: [
    ...plain('AccountOpened', 'StatementIssued', 'AccountClosed'),
    { type: 'FundsDeposited', data: { amount: 5 } },
    { type: 'FundsWithdrawn', data: { amount: 3 } },
    { type: 'FundsWithdrawn', data: { amount: 50 } },
  ],
};

const all: [string, AnyStateMachine][] = [
  ...Object.entries(machines),
  ['account', accountMachine as AnyStateMachine],
];

function folds(machine: AnyStateMachine) {
  const actor = createActor(machine);
  const ignore = () => undefined;
  const scope = {
    self: actor,
    id: actor.id,
    sessionId: actor.sessionId,
    logger: ignore,
    defer: ignore,
    emit: ignore,
    system: actor.system,
    stopChild: ignore,
    actionExecutor: ignore,
  };
  const full = (state: AnyMachineSnapshot, event: EventObject) =>
    (machine.transition as (s: unknown, e: unknown, x: unknown) => AnyMachineSnapshot)(
      state,
      event,
      scope,
    );
  const flat = flatFold(machine, scope, full);
  if (!('step' in flat)) throw new Error(`${machine.id} is not flat: ${flat.unsupported}`);
  return { step: flat.step, can: flat.can, full };
}

describe('the flat fold gives the snapshots transition gives', () => {
  it('covers every registered machine', () => {
    expect(all.map(([name]) => name).sort()).toEqual(Object.keys(SAMPLES).sort());
  });

  for (const [name, machine] of all) {
    it(`${name}: random event sequences fold alike`, () => {
      const samples = SAMPLES[name]!;
      const { step, can, full } = folds(machine);
      const tags = [...new Set(Object.values(machine.root.states).flatMap((s) => s.tags))];
      fc.assert(
        fc.property(fc.array(fc.nat({ max: samples.length - 1 }), { maxLength: 40 }), (indices) => {
          let fast = initialTransition(machine)[0] as AnyMachineSnapshot;
          let slow = fast;
          for (const i of indices) {
            const event = samples[i]!;
            fast = step(fast, event);
            slow = full(slow, event);
            expect(fast.value).toEqual(slow.value);
            expect(fast.context).toEqual(slow.context);
            expect(fast.status).toBe(slow.status);
            expect(fast.output).toEqual(slow.output);
            for (const e of samples) {
              expect(fast.can(e)).toBe(slow.can(e));
              expect(can(fast, e)).toBe(slow.can(e));
            }
            for (const state of Object.keys(machine.root.states)) {
              expect(fast.matches(state)).toBe(slow.matches(state));
            }
            for (const tag of tags) expect(fast.hasTag(tag)).toBe(slow.hasTag(tag));
          }
        }),
        { numRuns: 300 },
      );
    });
  }
});
