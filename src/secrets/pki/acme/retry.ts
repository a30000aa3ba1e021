import type { AcmeService } from './service.js';

/**
 * The reference's retry policy: a failed first attempt is retried up to six times, the n-th retry
 * 5·n seconds after the failure before it (5, 10, 15, 20, 25 and 30 s); the seventh failure is
 * final and the challenge, its authorization and order become invalid. The due time of each try
 * is a schedule row, so a restart carries on where the log left off.
 */
export const MAX_ATTEMPTS = 7;
export const retryDelayMs = (failures: number) => 5000 * failures;

/**
 * The `Retry-After` (seconds) of a challenge, authorization or order: while a challenge of one of
 * the authorizations is processing, the time until its next attempt is due (at least a second,
 * as an attempt may be running); nothing once none is.
 */
export function retryAfter(
  service: AcmeService,
  mount: string,
  authzIds: readonly string[],
): number | undefined {
  const now = service.now().getTime();
  let soonest: number | undefined;
  for (const authzId of authzIds) {
    for (const c of service.q.challenges(mount, authzId)) {
      if (c.status !== 'processing') continue;
      const due = service.q.validationDue(mount, authzId, c.type);
      const wait = due === undefined ? 1 : Math.ceil((Date.parse(due) - now) / 1000);
      soonest = Math.min(soonest ?? Infinity, Math.max(1, wait));
    }
  }
  return soonest;
}
