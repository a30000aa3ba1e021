import type { AcmeChallengeType } from '../../../../machines/acme-challenge.machine.js';
import { systemMetadata, type AuditMetadata } from '../../../core/events.js';
import { directoryName } from './directory.js';
import { malformed, AcmeProblem, otherDirectory, unauthorized } from './problem.js';
import { accountOf, type AcmeReply, type AcmeRequest } from './protocol.js';
import { authzView } from './present.js';
import type { AcmeAuthzRow } from './projection.js';
import type { AcmeService } from './service.js';
import { retryAfter } from './retry.js';

/**
 * An authorization (`what`: or one of its challenges) of the signing account whose order was
 * placed through this directory; otherwise a 404, `unauthorized` or the other-directory problem.
 */
export function ownAuthz(
  service: AcmeService,
  req: AcmeRequest,
  id: string,
  what: 'authorization' | 'challenge',
): AcmeAuthzRow {
  const row = service.q.authz(req.mount, id);
  if (!row) throw new AcmeProblem('malformed', `no such ${what}`, 404);
  if (row.account_id !== accountOf(req).account_id)
    throw unauthorized(`the ${what} belongs to another account`);
  if (service.q.order(req.mount, row.order_id)?.directory !== directoryName(req.dir))
    throw otherDirectory(what);
  return row;
}

/** `authorization/:id` (RFC 8555 §7.5, §7.5.2): read, or deactivate. */
export function authorization(service: AcmeService, req: AcmeRequest, id: string): AcmeReply {
  const row = ownAuthz(service, req, id, 'authorization');
  if (req.payload !== undefined) {
    if (req.payload.status !== 'deactivated')
      throw malformed('an authorization can only be deactivated');
    if (row.status !== 'pending' && row.status !== 'valid')
      throw malformed(`the authorization is ${row.status}`);
    settle(service, req.mount, req.meta, id, { kind: 'deactivated' });
  }
  return {
    body: authzView(service.q, req.mount, req.base, id),
    retryAfter: retryAfter(service, req.mount, [id]),
  };
}

/** How a challenge (or its authorization) ended. */
export type Outcome =
  | { kind: 'valid'; type: AcmeChallengeType }
  | { kind: 'invalid'; error: string }
  | { kind: 'deactivated' };

/**
 * Records the end of an authorization in one transaction: the challenge, the authorization, and
 * the order (ready when every authorization is valid, invalid when one failed or was deactivated).
 */
export function settle(
  service: AcmeService,
  mount: string,
  meta: AuditMetadata,
  authzId: string,
  outcome: Outcome,
): void {
  const { q, record } = service;
  const authz = q.authz(mount, authzId)!;
  const now = service.now().toISOString();
  service.authority.atomically(() => {
    for (const c of q.challenges(mount, authzId)) {
      if (c.status !== 'processing') continue;
      const ref = { mount, authorizationId: authzId, challengeType: c.type as AcmeChallengeType };
      const valid = outcome.kind === 'valid' && outcome.type === c.type;
      const error =
        outcome.kind === 'invalid'
          ? outcome.error
          : 'unauthorized: the authorization was deactivated';
      record.challenge(
        mount,
        authzId,
        c.type,
        valid
          ? { type: 'AcmeChallengeValidated', data: { ...ref, validatedAt: now } }
          : { type: 'AcmeChallengeFailed', data: { ...ref, error } },
        meta,
      );
    }
    const base = { mount, authorizationId: authzId };
    record.authorization(
      mount,
      authzId,
      outcome.kind === 'valid'
        ? { type: 'AcmeAuthorizationValidated', data: base }
        : outcome.kind === 'invalid'
          ? { type: 'AcmeAuthorizationInvalidated', data: { ...base, reason: outcome.error } }
          : { type: 'AcmeAuthorizationDeactivated', data: base },
      meta,
    );
    const order = q.order(mount, authz.order_id)!;
    const ref = { mount, orderId: order.order_id };
    if (outcome.kind !== 'valid') {
      if (order.status === 'pending' || order.status === 'ready') {
        const reason =
          outcome.kind === 'invalid'
            ? outcome.error
            : 'unauthorized: an authorization was deactivated';
        record.order(
          mount,
          order.order_id,
          { type: 'AcmeOrderInvalidated', data: { ...ref, reason } },
          meta,
        );
      }
      return;
    }
    const all = (JSON.parse(order.authorizations) as string[]).every(
      (id) => q.authz(mount, id)?.status === 'valid',
    );
    if (all && order.status === 'pending') {
      record.order(mount, order.order_id, { type: 'AcmeOrderReady', data: ref }, meta);
    }
  });
}

/**
 * An order not finalized by its `expires` becomes invalid, with its authorizations still pending
 * (and their challenges being validated): the expiry timer's command.
 */
export function expireOrder(service: AcmeService, mount: string, orderId: string): Promise<void> {
  return service.authority.run(() => {
    const order = service.q.order(mount, orderId);
    if (!order || (order.status !== 'pending' && order.status !== 'ready')) return;
    const meta = systemMetadata('pki-acme-expiry');
    const error = 'unauthorized: the order expired before it was finalized';
    service.authority.atomically(() => {
      for (const id of JSON.parse(order.authorizations) as string[])
        if (service.q.authz(mount, id)?.status === 'pending')
          settle(service, mount, meta, id, { kind: 'invalid', error });
      if (service.q.order(mount, orderId)?.status === 'ready') {
        service.record.order(
          mount,
          orderId,
          { type: 'AcmeOrderInvalidated', data: { mount, orderId, reason: error } },
          meta,
        );
      }
    });
  });
}
