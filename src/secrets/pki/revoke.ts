import { ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { Authority } from './authority.js';
import { certificateDecider, issuerDecider } from './deciders.js';
import { streams } from './events.js';
import { normaliseSerial, pem, pemBlocks } from '../../x509/certificate.js';
import { keysMatch, parsePrivateKey } from '../../x509/keys.js';
import { isSignedBy, parseCertificate, type ParsedCertificate } from '../../x509/parse.js';
import { rebuildAllCrls, rebuildCrl, rebuildDeltaCrl } from './crls.js';
import type { IssuerRow } from './projection.js';
import type { FieldData } from '../fields.js';
import type { REVOKE } from './paths-fields.js';

/** What a revoke call answers: data (null when refused as expired) and warnings. */
export interface Revoked {
  data: Record<string, unknown> | null;
  warnings: string[];
}

/** RFC 3339 with nanosecond precision the way Go prints it (trailing zeros dropped). */
const rfc3339 = (d: Date) => d.toISOString().replace(/\.000Z$/, 'Z');

interface Target {
  serial: string;
  issuerId: string;
  notAfter: Date;
  /** PEM when the certificate was presented and had not been stored (it is stored on revocation) */
  presented?: string;
  publicKeySource: ParsedCertificate | undefined;
}

function findTarget(authority: Authority, mount: string, b: FieldData<typeof REVOKE>): Target {
  const serialIn = (b.get('serial_number') ?? '').trim();
  const certIn = (b.get('certificate') ?? '').trim();
  if (!serialIn && !certIn)
    throw new ValidationError('The serial number or certificate to revoke must be provided.');
  if (serialIn && certIn)
    throw new ValidationError(
      'Must provide either the certificate or the serial to revoke; not both.',
    );
  if (serialIn) {
    const serial = normaliseSerial(serialIn);
    const row = serial ? authority.q.cert(mount, serial) : undefined;
    if (!serial || !row || (!row.stored && !row.revoked_at))
      throw new ValidationError(`certificate with serial ${serialIn} not found.`);
    const parsed = row.certificate
      ? parseCertificate(pemBlocks(row.certificate)[0]!.der)
      : undefined;
    return {
      serial,
      issuerId: row.issuer_id,
      notAfter: new Date(row.not_after),
      publicKeySource: parsed,
    };
  }
  const block = pemBlocks(certIn).find((x) => x.label === 'CERTIFICATE');
  if (!block) throw new ValidationError('certificate contains no data; expected a PEM certificate');
  const cert = parseCertificate(block.der);
  const issuer = authority.q.issuers(mount).find((i) => isSignedBy(cert, authority.parsed(i)));
  if (!issuer) {
    throw new ValidationError(
      'unable to verify signature on presented cert from any present issuer in this mount; certificates from previous CAs will need to have their issuing CA and key re-imported if revocation is necessary',
    );
  }
  const row = authority.q.cert(mount, cert.serial);
  return {
    serial: cert.serial,
    issuerId: issuer.issuer_id,
    notAfter: cert.notAfter,
    ...(row?.stored ? {} : { presented: pem('CERTIFICATE', block.der) }),
    publicKeySource: cert,
  };
}

/**
 * Revokes by serial or certificate (research §3.7): issuers cannot be revoked this way, a second
 * revocation answers with the original time, an expired certificate is refused with a warning
 * and nothing recorded, and the issuer's CRL is rebuilt unless `auto_rebuild` is on.
 */
export function revoke(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  b: FieldData<typeof REVOKE>,
  /** revoke-with-key: the PEM private key proving possession ('' when not sent) */
  privateKey?: string,
): Revoked {
  const withKey = privateKey !== undefined;
  if (withKey) {
    const keyText = privateKey;
    if (!keyText)
      throw new ValidationError('Must have private key to revoke via the /revoke-with-key path.');
    if (keyText.length < 64) {
      throw new ValidationError(
        'Provided data for private_key was too short; perhaps a path was passed to the API rather than the contents of a PEM file?',
      );
    }
  }
  const target = findTarget(authority, mount, b);
  const asIssuer = authority.q.issuers(mount).find((i) => i.serial === target.serial);
  if (asIssuer)
    throw new ValidationError(
      `adding issuer (id: ${asIssuer.issuer_id}) to its own CRL is not allowed`,
    );
  if (withKey) {
    const key = parsePrivateKey(privateKey);
    const cert = target.publicKeySource;
    if (!cert) throw new ValidationError(`certificate with serial ${target.serial} not found.`);
    if (key.asymmetricKeyType !== cert.publicKey.asymmetricKeyType) {
      throw new ValidationError(
        "provided private key type does not match certificate's public key type",
      );
    }
    if (!keysMatch(key, cert.publicKey))
      throw new ValidationError("provided private key does not match certificate's public key");
  }
  const existing = authority.q.cert(mount, target.serial);
  if (existing?.revoked_at) {
    const t = new Date(existing.revoked_at);
    return {
      data: {
        revocation_time: Math.floor(t.getTime() / 1000),
        revocation_time_rfc3339: rfc3339(t),
        state: 'revoked',
      },
      warnings: [],
    };
  }
  const now = authority.core.clock.now();
  const config = authority.crlConfig(mount);
  if (target.notAfter.getTime() < now.getTime() + 2000 && !config.allow_expired_cert_revocation) {
    return {
      data: null,
      warnings: [
        `certificate with serial ${target.serial} already expired; refusing to add to CRL`,
      ],
    };
  }
  const reason = b.get('reason');
  if (reason !== undefined && (reason < 0 || reason > 10 || reason === 7))
    throw new ValidationError(`invalid revocation reason code ${reason}`);
  authority.atomically(() => {
    authority.append(
      streams.cert(mount, target.serial),
      certificateDecider,
      (state) => {
        // A serial known only from a presented certificate first gets its issuance recorded.
        const events = [];
        if (state.value === 'absent') {
          events.push({
            type: 'CertificateIssued' as const,
            data: {
              mount,
              serial: target.serial,
              issuerId: target.issuerId,
              certificate: target.presented ?? '',
              notAfter: target.notAfter.toISOString(),
              commonName: target.publicKeySource?.commonName ?? '',
              isCa: false,
              stored: true,
            },
          });
        }
        events.push({
          type: 'CertificateRevoked' as const,
          data: {
            mount,
            serial: target.serial,
            issuerId: target.issuerId,
            revokedAt: now.toISOString(),
            ...(reason === undefined ? {} : { reason }),
            ...(target.presented ? { certificate: target.presented } : {}),
            notAfter: target.notAfter.toISOString(),
          },
        });
        return events;
      },
      meta,
    );
    const issuer = authority.q.issuer(mount, target.issuerId);
    // Without auto_rebuild the complete CRL is rebuilt now; with it and enable_delta, the delta.
    if (issuer && !config.auto_rebuild) rebuildCrl(authority, mount, meta, issuer);
    else if (issuer && config.enable_delta) rebuildDeltaCrl(authority, mount, meta, issuer);
  });
  const warnings =
    config.auto_rebuild && !config.enable_delta
      ? [
          'auto_rebuild is enabled: the CRL will include this revocation when it is next rebuilt (crl/rotate rebuilds it now)',
        ]
      : [];
  return {
    data: {
      revocation_time: Math.floor(now.getTime() / 1000),
      revocation_time_rfc3339: rfc3339(now),
      state: 'revoked',
    },
    warnings,
  };
}

/**
 * `issuer/:ref/revoke`: the issuer is marked revoked and loses `issuing-certificates`; its own
 * certificate, when a parent issuer of this mount signed and stored it, is revoked on that
 * parent's CRL; every CRL is rebuilt. A second call changes nothing, as the reference.
 */
export function revokeIssuer(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  issuer: IssuerRow,
): void {
  if (issuer.settings.revokedAt !== undefined) return;
  const now = authority.core.clock.now().toISOString();
  authority.atomically(() => {
    authority.append(
      streams.issuer(mount, issuer.issuer_id),
      issuerDecider,
      () => [
        {
          type: 'PkiIssuerUpdated' as const,
          data: {
            mount,
            issuerId: issuer.issuer_id,
            ...issuer.settings,
            usage: issuer.settings.usage.filter((u) => u !== 'issuing-certificates'),
            revokedAt: now,
          },
        },
      ],
      meta,
    );
    const stored = authority.q.cert(mount, issuer.serial);
    if (stored && stored.issuer_id !== issuer.issuer_id && stored.revoked_at === null)
      authority.append(
        streams.cert(mount, issuer.serial),
        certificateDecider,
        () => [
          {
            type: 'CertificateRevoked' as const,
            data: {
              mount,
              serial: issuer.serial,
              issuerId: stored.issuer_id,
              revokedAt: now,
              notAfter: stored.not_after,
            },
          },
        ],
        meta,
      );
    rebuildAllCrls(authority, mount, meta);
  });
}
