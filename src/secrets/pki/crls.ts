import type { AuditMetadata } from '../../core/events.js';
import type { Authority } from './authority.js';
import { crlDecider } from './deciders.js';
import { streams } from './events.js';
import type { CrlRow, IssuerRow } from './projection.js';
import { buildCrl } from '../../x509/crl.js';

/**
 * Builds and signs the issuer's CRL from the revoked certificates in the read model and appends
 * it with the next CRL number. With `disable`, the CRL is signed but empty, as the reference does.
 * An issuer without a key (or without the crl-signing usage) has no CRL of its own.
 */
export function rebuildCrl(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  issuer: IssuerRow,
): void {
  appendCrl(authority, mount, meta, issuer, undefined);
  // A new complete CRL starts a new delta (empty, or what was revoked in this same instant).
  rebuildDeltaCrl(authority, mount, meta, issuer);
}

/**
 * Builds the issuer's delta CRL (`enable_delta`): every certificate revoked since its complete
 * CRL was built, with the Delta CRL Indicator naming that CRL's number, numbered in the same
 * sequence (RFC 5280 §5.2.4). Nothing without a complete CRL, a key, or with `enable_delta` off.
 */
export function rebuildDeltaCrl(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  issuer: IssuerRow,
): void {
  const base = authority.q.crl(mount, issuer.issuer_id);
  if (authority.crlConfig(mount).enable_delta && base !== undefined)
    appendCrl(authority, mount, meta, issuer, base);
}

/** Signs and appends a complete CRL, or with `base` a delta CRL over that complete one. */
function appendCrl(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  issuer: IssuerRow,
  base: CrlRow | undefined,
): void {
  const config = authority.crlConfig(mount);
  // An issuer without its key here, or without the crl-signing usage, has no CRL of its own;
  // any other failure to sign is an error the caller sees, not a CRL quietly left stale.
  if (!authority.canSign(mount, issuer, 'crl-signing')) return;
  const signer = authority.signer(mount, issuer, 'crl-signing');
  const now = authority.core.clock.now();
  // A delta lists what was revoked at or after its base's thisUpdate: a revocation in that same
  // instant may be in both, which RFC 5280 allows.
  const entries = config.disable
    ? []
    : authority.q.revokedOf(mount, issuer.issuer_id, base?.this_update).map((r) => ({
        serial: r.serial,
        revokedAt: r.revoked_at,
        ...(r.reason === null ? {} : { reason: r.reason }),
      }));
  authority.append(
    streams.crl(mount, issuer.issuer_id),
    crlDecider,
    (state) => {
      const number = state.number + 1;
      const nextUpdate = new Date(now.getTime() + config.expiry * 1000);
      const der = buildCrl({
        issuer: signer.cert.subject,
        issuerKeyId: signer.cert.subjectKeyId,
        number,
        thisUpdate: now,
        nextUpdate,
        entries,
        scheme: signer.scheme,
        signingKey: signer.key,
        ...(base ? { deltaOf: base.number } : {}),
      });
      const data = {
        mount,
        issuerId: issuer.issuer_id,
        number,
        thisUpdate: now.toISOString(),
        nextUpdate: nextUpdate.toISOString(),
        crl: der.toString('base64'),
      };
      return [
        base
          ? { type: 'PkiDeltaCrlBuilt' as const, data: { ...data, baseNumber: base.number } }
          : { type: 'PkiCrlBuilt' as const, data },
      ];
    },
    meta,
  );
}

/** Rebuilds the CRL of every issuer of the mount. */
export function rebuildAllCrls(authority: Authority, mount: string, meta: AuditMetadata): void {
  for (const issuer of authority.q.issuers(mount)) rebuildCrl(authority, mount, meta, issuer);
}

/** Rebuilds the delta CRL of every issuer of the mount (`crl/rotate-delta`). */
export function rebuildAllDeltaCrls(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
): void {
  for (const issuer of authority.q.issuers(mount)) rebuildDeltaCrl(authority, mount, meta, issuer);
}
