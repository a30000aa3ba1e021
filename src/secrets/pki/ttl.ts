import { ValidationError } from '../../core/errors.js';

import { formatGoDuration as goDuration } from '../duration.js';
import type { MountTtls } from '../sys/projection.js';

export { parseDuration } from '../duration.js';
export { goDuration };

/** How an issuer treats a leaf that would outlive it. */
export type LeafNotAfterBehavior = 'err' | 'truncate' | 'permit';

/** The latest notAfter a caller may ask for. */
export const LATEST_NOT_AFTER = '9999-12-31T23:59:59Z';

/** The inputs of notAfter resolution (research §3.1). */
export interface NotAfterInput {
  now: Date;
  /** the mount's default and maximum lease (tuned, else the system's 768h) */
  mountTtls: MountTtls;
  /** request `ttl` in seconds, undefined when absent */
  requestTtl: number | undefined;
  /** request `not_after`, undefined or '' when absent */
  notAfter: string | undefined;
  /** role ttl in seconds, 0 when unset */
  roleTtl: number;
  /** role max_ttl in seconds, 0 when unset */
  roleMaxTtl: number;
  /** the signing issuer's notAfter; undefined for self-signed roots */
  issuerNotAfter: Date | undefined;
  behavior: LeafNotAfterBehavior;
}

/** The resolved notAfter and any warnings. */
export interface NotAfterResult {
  notAfter: Date;
  warnings: string[];
}

/** Parses an RFC 3339 time (offsets allowed); throws the reference's style of error. */
export function parseNotAfter(text: string): Date {
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(
    text.trim(),
  );
  const d = m ? new Date(text.trim()) : undefined;
  if (!m || !d || Number.isNaN(d.getTime())) {
    throw new ValidationError(
      `parsing time "${text}" as "2006-01-02T15:04:05Z07:00": cannot parse "${text}" as RFC 3339`,
    );
  }
  return d;
}

const rfc3339Nano = (d: Date) => d.toISOString().replace('.000Z', 'Z');

/**
 * Resolves a certificate's notAfter: request ttl, else role ttl, else the mount default; capped at
 * max_ttl (role, else mount) with the reference's warning; `not_after` instead of a ttl (never
 * both), capped by an explicit role max_ttl (hashicorp/vault#29928); then the issuer's expiry decides through
 * `leaf_not_after_behavior`.
 */
export function resolveNotAfter(input: NotAfterInput): NotAfterResult {
  const warnings: string[] = [];
  const hasNotAfter = input.notAfter !== undefined && input.notAfter !== '';
  if (hasNotAfter && input.requestTtl !== undefined && input.requestTtl > 0) {
    throw new ValidationError(
      'Either ttl or not_after should be provided. Both should not be provided in the same request.',
    );
  }
  const maxTtl = input.roleMaxTtl > 0 ? input.roleMaxTtl : input.mountTtls.maxTtl;
  const nowMs = input.now.getTime();
  let notAfter: Date;
  if (hasNotAfter) {
    notAfter = parseNotAfter(input.notAfter ?? '');
    // An explicit role max_ttl caps not_after too (hashicorp/vault#29928); without one the
    // caller's date stands, so 9999-12-31T23:59:59Z works for roots and long-lived roles.
    if (input.roleMaxTtl > 0 && notAfter.getTime() > nowMs + maxTtl * 1000) {
      warnings.push(
        `not_after ${rfc3339Nano(notAfter)} is later than permitted by max_ttl "${goDuration(maxTtl)}", so max_ttl is being used`,
      );
      notAfter = new Date(nowMs + maxTtl * 1000);
    }
  } else {
    let ttl = input.requestTtl || input.roleTtl || input.mountTtls.defaultTtl;
    if (ttl > maxTtl) {
      warnings.push(
        `TTL "${goDuration(ttl)}" is longer than permitted maxTTL "${goDuration(maxTtl)}", so maxTTL is being used`,
      );
      ttl = maxTtl;
    }
    notAfter = new Date(nowMs + ttl * 1000);
  }
  if (input.issuerNotAfter && notAfter.getTime() > input.issuerNotAfter.getTime()) {
    switch (input.behavior) {
      case 'err':
        throw new ValidationError(
          `cannot satisfy request, as TTL would result in notAfter of ${rfc3339Nano(notAfter)} that is beyond the expiration of the CA certificate at ${rfc3339Nano(input.issuerNotAfter)}`,
        );
      case 'truncate':
        if (input.issuerNotAfter.getTime() <= nowMs) {
          throw new ValidationError(
            `cannot satisfy request, as the CA certificate expired at ${rfc3339Nano(input.issuerNotAfter)}`,
          );
        }
        notAfter = input.issuerNotAfter;
        break;
      case 'permit':
        break;
      default: {
        const _never: never = input.behavior;
        throw new Error(`unknown behavior ${String(_never)}`);
      }
    }
  }
  if (notAfter.getTime() <= nowMs)
    throw new ValidationError(
      `cannot satisfy request, as notAfter ${rfc3339Nano(notAfter)} is in the past`,
    );
  return { notAfter, warnings };
}
