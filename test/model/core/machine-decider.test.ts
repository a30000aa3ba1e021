import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { initialTransition, transition } from 'xstate';
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import { machines } from '../../../machines/index.js';
import { machineDecider } from '../../../src/core/machine-decider.js';
import { accountMachine } from '../../support/ledger/machine.js';
import { RUN_EVENTS } from '../../support/run-machine-events.js';

/**
 * `machineDecider` against xstate's own `transition()`: random sequences of events (with the
 * payload variants the guards tell apart) folded through the decider, with its one inert scope
 * per machine, and through `transition()`, with a fresh actor each call, give the same snapshot
 * after every event; the snapshots answer `can`, `matches` and `hasTag` alike, and the decider's
 * `accepts` answers `can`.
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

describe('machineDecider folds as xstate transition() does', () => {
  it('covers every registered machine', () => {
    expect(all.map(([name]) => name).sort()).toEqual(Object.keys(SAMPLES).sort());
  });

  for (const [name, machine] of all) {
    it(`${name}: random event sequences fold alike`, () => {
      const samples = SAMPLES[name]!;
      const decider = machineDecider(machine);
      const tags = [...new Set(Object.values(machine.root.states).flatMap((s) => s.tags))];
      fc.assert(
        fc.property(fc.array(fc.nat({ max: samples.length - 1 }), { maxLength: 40 }), (indices) => {
          let ours = decider.initialState() as AnyMachineSnapshot;
          let theirs = initialTransition(machine)[0] as AnyMachineSnapshot;
          for (const i of indices) {
            const event = samples[i]!;
            // An event type the machine does not know is allowed and changes nothing.
            const known = machine.events.includes(event.type);
            expect(decider.accepts!(ours as never, event as never)).toBe(
              !known || theirs.can(event),
            );
            ours = decider.evolve(ours as never, event) as AnyMachineSnapshot;
            theirs = transition(machine, theirs as never, event as never)[0] as AnyMachineSnapshot;
            expect(ours.value).toEqual(theirs.value);
            expect(ours.context).toEqual(theirs.context);
            expect(ours.status).toBe(theirs.status);
            expect(ours.output).toEqual(theirs.output);
            for (const e of samples) expect(ours.can(e)).toBe(theirs.can(e));
            for (const state of Object.keys(machine.root.states)) {
              expect(ours.matches(state)).toBe(theirs.matches(state));
            }
            for (const tag of tags) expect(ours.hasTag(tag)).toBe(theirs.hasTag(tag));
          }
        }),
        { numRuns: 300 },
      );
    });
  }
});
