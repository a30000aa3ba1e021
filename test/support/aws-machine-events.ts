import type { LeaseEvent } from '../../machines/lease.machine.js';
import type { StaticRoleEvent } from '../../machines/static-role.machine.js';

/** Static-role and lease events for tests of the machines and their streams. */

export const sealed = { $sealed: 'x', $hmac: 'y' };

export const adopted = (rotationPeriod = 3600): StaticRoleEvent => ({
  type: 'StaticRoleAdopted',
  data: {
    mount: { accessor: 'm1', path: 'aws/' },
    name: 'r',
    username: 'u',
    userId: 'AIDA1',
    rotationPeriod,
    assumeRoleArn: '',
    assumeRoleSessionName: '',
    externalId: '',
  },
});
export const issued = (key: string): StaticRoleEvent => ({
  type: 'StaticRoleKeyIssued',
  data: {
    accessKeyId: key,
    secretAccessKey: sealed,
    deletedAccessKeyId: null,
    issuedAt: 't',
    expiresAt: 't',
  },
});
export const started: StaticRoleEvent = {
  type: 'StaticRoleRotationStarted',
  data: { startedAt: 't', resumeAt: 't' },
};
export const failed = (attempt: number): StaticRoleEvent => ({
  type: 'StaticRoleRotationFailed',
  data: { error: 'e', attempt, retryAt: 't' },
});
export const updated = (rotationPeriod: number): StaticRoleEvent => ({
  type: 'StaticRoleUpdated',
  data: { username: 'u', userId: 'AIDA1', rotationPeriod, nextRotationAt: 't' },
});
export const deleted: StaticRoleEvent = {
  type: 'StaticRoleDeleted',
  data: { deletedAccessKeyId: 'K2' },
};

export const leaseIssued = (renewable = true): LeaseEvent => ({
  type: 'LeaseIssued',
  data: {
    leaseId: 'aws/creds/r/x',
    mount: { accessor: 'm1', path: 'aws/' },
    role: 'r',
    kind: renewable ? 'iam_user' : 'assumed_role',
    username: 'u',
    accessKeyId: 'AKIA',
    issuedAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-01T01:00:00.000Z',
    maxExpiresAt: '2026-01-02T00:00:00.000Z',
    renewable,
  },
});
export const renewed = (expiresAt: string): LeaseEvent => ({
  type: 'LeaseRenewed',
  data: { renewedAt: 't', expiresAt },
});
export const request = (reason: 'expired' | 'revoked'): LeaseEvent => ({
  type: 'LeaseRevocationRequested',
  data: { reason, requestedAt: 't' },
});
export const revFailed = (attempt: number): LeaseEvent => ({
  type: 'LeaseRevocationFailed',
  data: { error: 'e', attempt, retryAt: 't' },
});
export const revoked: LeaseEvent = { type: 'LeaseRevoked', data: { revokedAt: 't' } };
