import { describe, it } from 'vitest';
import type { LeaseEvent } from '../../../machines/lease.machine.js';
import type { StaticRoleEvent } from '../../../machines/static-role.machine.js';
import { IllegalTransitionError } from '../../../src/core/errors.js';
import {
  configDecider,
  leaseDecider,
  roleDecider,
  staticRoleDecider,
} from '../../../src/secrets/aws/commands.js';
import type { ConfigEvent, RoleEvent } from '../../../src/secrets/aws/events.js';
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
  sealed,
  started,
  updated,
} from '../../support/aws-machine-events.js';
import { propose, spec } from '../../support/decider-spec.js';

/**
 * The cloud-credentials engine's streams, given their history: what a service's decision may
 * append and what is refused (rotation periods, repeated keys, retry numbering, renewals past the
 * maximum, work on what is gone).
 */

const mount = { accessor: 'm1', path: 'aws/' };
const SR = 'aws-static-role:m1:r';
const key = issued;
const deletedRole = deleted;

const role = (...given: StaticRoleEvent[]) => spec().given(SR, staticRoleDecider, ...given);
const proposeRole = (...events: StaticRoleEvent[]) => propose(SR, staticRoleDecider, ...events);

describe('static-role stream', () => {
  it('adopts with a period of a minute or more, and refuses a shorter one', () => {
    spec()
      .when(proposeRole(adopted(60)))
      .then([{ type: 'StaticRoleAdopted' }]);
    spec()
      .when(proposeRole(adopted(59)))
      .refused(IllegalTransitionError, 'StaticRoleAdopted is not allowed');
    role(adopted(), key('K1'))
      .when(proposeRole(updated(30)))
      .refused(IllegalTransitionError, 'StaticRoleUpdated is not allowed');
  });

  it('issues a new key, never the served one again, and never an empty one', () => {
    role(adopted(), key('K1'), started)
      .when(proposeRole(key('K2')))
      .then([{ type: 'StaticRoleKeyIssued', data: { accessKeyId: 'K2' } }]);
    role(adopted(), key('K1'), started)
      .when(proposeRole(key('K1')))
      .refused(IllegalTransitionError, 'StaticRoleKeyIssued is not allowed');
    role(adopted())
      .when(proposeRole(key('')))
      .refused(IllegalTransitionError, 'StaticRoleKeyIssued is not allowed');
  });

  it('numbers failed attempts one by one, from one after each issued key', () => {
    role(adopted(), key('K1'), started, failed(1), started)
      .when(proposeRole(failed(2)))
      .then([{ type: 'StaticRoleRotationFailed', data: { attempt: 2 } }]);
    role(adopted(), key('K1'), started)
      .when(proposeRole(failed(2)))
      .refused(IllegalTransitionError, 'StaticRoleRotationFailed is not allowed');
    role(adopted(), key('K1'), started, failed(1), started, key('K2'), started)
      .when(proposeRole(failed(1)))
      .then([{ type: 'StaticRoleRotationFailed', data: { attempt: 1 } }]);
  });

  it('a rotation starts only from a settled role, and nothing follows a deletion', () => {
    role(adopted(), key('K1'))
      .when(proposeRole(failed(1)))
      .refused(IllegalTransitionError, 'is not allowed');
    role(adopted(), key('K1'), deletedRole)
      .when(proposeRole(started))
      .refused(IllegalTransitionError, 'StaticRoleRotationStarted is not allowed');
    role(adopted(), key('K1'), deletedRole)
      .when(proposeRole(updated(120)))
      .refused(IllegalTransitionError, 'is not allowed');
  });
});

const LS = 'aws-lease:aws/creds/r/x';
const issuedLease = leaseIssued;
const renewedTo = renewed;
const requested = request;
const leaseFailed = revFailed;
const revokedLease = revoked;

const lease = (...given: LeaseEvent[]) => spec().given(LS, leaseDecider, ...given);
const proposeLease = (...events: LeaseEvent[]) => propose(LS, leaseDecider, ...events);

describe('lease stream', () => {
  it('renews an iam_user lease up to its maximum, never past it, and never an STS lease', () => {
    lease(issuedLease())
      .when(proposeLease(renewedTo('2026-01-02T00:00:00.000Z')))
      .then([{ type: 'LeaseRenewed' }]);
    lease(issuedLease())
      .when(proposeLease(renewedTo('2026-01-02T00:00:00.001Z')))
      .refused(IllegalTransitionError, 'LeaseRenewed is not allowed');
    lease(issuedLease(false))
      .when(proposeLease(renewedTo('2026-01-01T02:00:00.000Z')))
      .refused(IllegalTransitionError, 'LeaseRenewed is not allowed');
  });

  it('once revoking: no renewal, failures numbered one by one, then revoked or expired', () => {
    lease(issuedLease(), requested('revoked'))
      .when(proposeLease(renewedTo('2026-01-01T02:00:00.000Z')))
      .refused(IllegalTransitionError, 'LeaseRenewed is not allowed');
    lease(issuedLease(), requested('expired'), leaseFailed(1))
      .when(proposeLease(leaseFailed(3)))
      .refused(IllegalTransitionError, 'LeaseRevocationFailed is not allowed');
    lease(issuedLease(), requested('expired'), leaseFailed(1))
      .when(proposeLease(leaseFailed(2), revokedLease))
      .then([{ type: 'LeaseRevocationFailed' }, { type: 'LeaseRevoked' }]);
  });

  it('nothing follows the end of a lease, and a lease is issued once', () => {
    lease(issuedLease(), requested('revoked'), revokedLease)
      .when(proposeLease(requested('revoked')))
      .refused(IllegalTransitionError, 'is not allowed');
    lease(issuedLease())
      .when(proposeLease(issuedLease()))
      .refused(IllegalTransitionError, 'LeaseIssued is not allowed');
    spec()
      .when(proposeLease(revokedLease))
      .refused(IllegalTransitionError, 'LeaseRevoked is not allowed');
  });
});

describe('config and role streams', () => {
  const rotated: ConfigEvent = {
    type: 'AwsRootRotated',
    data: {
      mount,
      accessKey: 'AK2',
      secretKey: sealed,
      previousAccessKey: 'AK1',
      rotatedAt: 't',
      scheduled: false,
    },
  };

  it('rotates the root key only of a mount configured with static keys', () => {
    spec()
      .when(propose('aws-config:m1', configDecider, rotated))
      .refused(IllegalTransitionError, 'AwsRootRotated is not allowed while');
  });

  it('deletes only a role that exists', () => {
    const deleted: RoleEvent = { type: 'AwsRoleDeleted', data: { mount, name: 'dev' } };
    spec()
      .when(propose('aws-role:m1:dev', roleDecider, deleted))
      .refused(IllegalTransitionError, 'is absent');
  });
});
