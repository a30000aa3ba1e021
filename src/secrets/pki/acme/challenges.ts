import type { AcmeChallengeType } from '../../../../machines/acme-challenge.machine.js';
import { systemMetadata } from '../../../core/events.js';
import type { ScheduleEntry } from '../../../core/schedule.js';
import { keyAuthorization } from './jws.js';
import { AcmeProblem } from './problem.js';
import { accountOf, type AcmeReply, type AcmeRequest } from './protocol.js';
import { authzUrl, challengeView } from './present.js';
import { identifierOf } from './projection.js';
import type { AcmeService } from './service.js';
import { ownAuthz, settle } from './authorizations.js';
import { validateChallenge } from './validate.js';
import { MAX_ATTEMPTS, retryAfter, retryDelayMs } from './retry.js';

const CHALLENGE_TYPES: readonly string[] = ['http-01', 'dns-01', 'tls-alpn-01'];

/**
 * `challenge/:authz/:type` (RFC 8555 §7.5.1): a payload of `{}` asks for validation, which is
 * then due at once (a schedule row); POST-as-GET reads it.
 */
export function respond(
  service: AcmeService,
  req: AcmeRequest,
  authzId: string,
  type: string,
): AcmeReply {
  const account = accountOf(req);
  const authz = ownAuthz(service, req, authzId, 'challenge');
  const found = CHALLENGE_TYPES.includes(type)
    ? service.q.challenges(req.mount, authzId).find((c) => c.type === type)
    : undefined;
  if (!found) throw new AcmeProblem('malformed', 'no such challenge', 404);
  if (req.payload !== undefined && found.status === 'pending' && authz.status === 'pending') {
    const challengeType = type as AcmeChallengeType;
    service.record.challenge(
      req.mount,
      authzId,
      type,
      {
        type: 'AcmeChallengeStarted',
        data: {
          mount: req.mount,
          authorizationId: authzId,
          challengeType,
          keyAuthorization: keyAuthorization(authz.token, account.thumbprint),
          dueAt: service.now().toISOString(),
        },
      },
      req.meta,
    );
  }
  const now = service.q.challenges(req.mount, authzId).find((c) => c.type === type)!;
  return {
    body: challengeView(req.base, authzId, authz.token, now),
    links: [`<${authzUrl(req.base, authzId)}>;rel="up"`],
    retryAfter: now.status === 'processing' ? retryAfter(service, req.mount, [authzId]) : undefined,
  };
}

/**
 * The validation timer: one attempt per due row, off the request path. Success or the last
 * failure settles the authorization and order; an earlier failure records the attempt and moves
 * the row to the next try. A restart finds the rows and carries on.
 */
export async function fireValidation(service: AcmeService, entry: ScheduleEntry): Promise<void> {
  // A validation may outlast the schedule's poll (a 10 s timeout); the scheduler leaves an entry
  // it is firing to that tick, so one attempt is one recorded outcome.
  const { mount, authorizationId, type } = entry.data as {
    mount: string;
    authorizationId: string;
    type: AcmeChallengeType;
  };
  const authz = service.q.authz(mount, authorizationId);
  const challenge = service.q.challenges(mount, authorizationId).find((c) => c.type === type);
  if (!authz || challenge?.status !== 'processing') return;
  const meta = systemMetadata('pki-acme-validation');
  const failure = await validateChallenge({
    type,
    identifier: identifierOf(authz),
    token: authz.token,
    keyAuthorization: challenge.key_authorization,
    dnsResolver: service.config(mount).dns_resolver,
    ports: service.ports,
  });
  // The outcome is one command, decided on the world as it is then (the authorization may have
  // been deactivated while we waited).
  await service.authority.run(() => {
    const current = service.q.challenges(mount, authorizationId).find((c) => c.type === type);
    if (current?.status !== 'processing') return;
    if (failure === null) {
      settle(service, mount, meta, authorizationId, { kind: 'valid', type });
      return;
    }
    const attempts = current.attempts + 1;
    const error = `${failure.kind}: ${failure.detail}`;
    if (attempts >= MAX_ATTEMPTS) {
      settle(service, mount, meta, authorizationId, { kind: 'invalid', error });
      return;
    }
    service.record.challenge(
      mount,
      authorizationId,
      type,
      {
        type: 'AcmeChallengeAttemptFailed',
        data: {
          mount,
          authorizationId,
          challengeType: type,
          attempt: attempts,
          error,
          retryAt: new Date(service.now().getTime() + retryDelayMs(attempts)).toISOString(),
        },
      },
      meta,
    );
  });
}
