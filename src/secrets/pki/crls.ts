import type { AuditMetadata } from '../../core/events.js';
import type { Authority } from './authority.js';
import { crlDecider } from './deciders.js';
import { streams } from './events.js';
import type { Signer } from './issuance.js';
import type { IssuerRow } from './projection.js';
import { buildCrl } from './x509/crl.js';

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
  const config = authority.crlConfig(mount);
  let signer: Signer;
  try {
    signer = authority.signer(mount, issuer, 'crl-signing');
  } catch {
    return;
  }
  const now = authority.core.clock.now();
  const entries = config.disable
    ? []
    : authority.q.revokedOf(mount, issuer.issuer_id).map((r) => ({
        serial: Buffer.from(r.serial.replace(/:/g, ''), 'hex'),
        revokedAt: new Date(r.revoked_at),
        ...(r.reason === null ? {} : { reason: r.reason }),
      }));
  authority.core.handler.handle(
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
      });
      return [
        {
          type: 'PkiCrlBuilt' as const,
          data: {
            mount,
            issuerId: issuer.issuer_id,
            number,
            thisUpdate: now.toISOString(),
            nextUpdate: nextUpdate.toISOString(),
            crl: der.toString('base64'),
          },
        },
      ];
    },
    meta,
  );
}

/** Rebuilds the CRL of every issuer of the mount. */
export function rebuildAllCrls(authority: Authority, mount: string, meta: AuditMetadata): void {
  for (const issuer of authority.q.issuers(mount)) rebuildCrl(authority, mount, meta, issuer);
}
