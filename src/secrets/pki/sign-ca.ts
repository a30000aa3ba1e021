import { ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { Authority } from './authority.js';
import { CA_ROLE, caKeyUsage, caNameRequest, caNotAfter, constraintsOf, subjectOf } from './ca.js';
import { buildCa, effectivePathLength, urlExtensions, type Signer } from './issuance.js';
import { signedData, verifiedCsr, type Issued } from './issue.js';
import { resolveNames } from './names.js';
import { formatOf } from './present.js';
import {
  buildCertificate,
  encodeName,
  pem,
  pemBlocks,
  randomSerial,
  serialText,
} from '../../x509/certificate.js';
import * as ext from '../../x509/extensions.js';
import { isSignedBy, parseCertificate } from '../../x509/parse.js';
import type { FieldData } from '../fields.js';
import type { SelfIssuedFields, SignIntermediateFields } from './paths.js';

/** `root/sign-intermediate` and `issuer/:ref/sign-intermediate`. */
export function signIntermediate(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  issuerRef: string,
  b: FieldData<SignIntermediateFields>,
): Promise<Issued> {
  const csr = verifiedCsr(b.get('csr') ?? '');
  const useCsr = b.get('use_csr_values') ?? false;
  const format = formatOf(b.get('format'));
  return authority.run(() => {
    const issuer = authority.resolveIssuer(mount, issuerRef);
    const signer: Signer = authority.signer(
      mount,
      issuer,
      'issuing-certificates',
      b.get('signature_bits') ?? 0,
      b.get('use_pss') ?? false,
    );
    if (signer.cert.isCA && signer.cert.pathLen === 0)
      throw new ValidationError(
        'signing certificate has a max path length of zero, and cannot issue further CA certificates',
      );
    // Without a common_name the CSR's is used, as the reference sets use_csr_common_name then.
    const commonName = useCsr
      ? csr.commonName
      : (b.get('common_name') ?? '').trim() || csr.commonName;
    if (!commonName && !useCsr)
      throw new ValidationError(
        'the common_name field is required, or must be provided in a CSR with "use_csr_common_name" set to true, unless "require_cn" is set to false',
      );
    const names = resolveNames(
      { ...CA_ROLE, use_csr_common_name: useCsr, use_csr_sans: useCsr },
      caNameRequest(b, commonName),
      useCsr ? csr : undefined,
    );
    const now = authority.core.clock.now();
    const enforce = b.get('enforce_leaf_not_after_behavior') ?? false;
    const { notAfter, warnings } = caNotAfter(authority, mount, now, b, {
      notAfter: signer.cert.notAfter,
      behavior: enforce ? issuer.settings.leafNotAfterBehavior : 'truncate',
    });
    const keyUsage = caKeyUsage(b);
    const maxPathLength = effectivePathLength(b.get('max_path_length') ?? -1, signer.cert);
    const copied = useCsr
      ? csr.extensions.filter((e) => !['2.5.29.19', '2.5.29.14', '2.5.29.35'].includes(e.id))
      : [];
    const serial = randomSerial();
    const derBytes = buildCa({
      subject: useCsr ? csr.subject : encodeName(subjectOf(b, commonName)),
      altNames: names.altNames,
      spki: csr.spki,
      signer,
      maxPathLength,
      keyUsage,
      nameConstraints: constraintsOf(b),
      urls: authority.urls(mount),
      serial,
      notBefore: new Date(now.getTime() - (b.get('not_before_duration') ?? 30) * 1000),
      notAfter,
      ...((b.get('skid') ?? '') ? { skid: b.get('skid') ?? '' } : {}),
      copied,
    });
    const certPem = pem('CERTIFICATE', derBytes);
    authority.recordIssued(mount, meta, {
      serial: serialText(serial),
      issuerId: issuer.issuer_id,
      certificate: certPem,
      notAfter,
      commonName,
      isCa: true,
      stored: true,
    });
    const signed = { der: derBytes, serial: serialText(serial), notAfter };
    return {
      data: signedData(authority, mount, issuer, signed, format, false),
      warnings: [
        ...names.warnings,
        ...warnings,
        ...intermediateWarnings(b, notAfter, signer.cert.notAfter, maxPathLength, enforce),
      ],
    };
  });
}

/** What the reference warns about a signed intermediate, in its words. */
function intermediateWarnings(
  b: FieldData<SignIntermediateFields>,
  notAfter: Date,
  signerNotAfter: Date,
  maxPathLength: number,
  enforce: boolean,
): string[] {
  const out: string[] = [];
  if (notAfter.getTime() > signerNotAfter.getTime())
    out.push(
      "The expiration time for the signed certificate is after the CA's expiration time. If the new certificate is not treated as a root, validation paths with the certificate past the issuing CA's expiration time will fail.",
    );
  if (maxPathLength === 0)
    out.push(
      'Max path length of the signed certificate is zero. This certificate cannot be used to issue intermediate CA certificates.',
    );
  if (!enforce && notAfter.getTime() === signerNotAfter.getTime())
    out.push(
      "the signed intermediary CA certificate's notAfter was truncated to the issuer's notAfter",
    );
  const invalid = (b.get('key_usage') ?? []).flatMap((usage) => {
    const clean = usage.trim().toLowerCase();
    if (['crlsign', 'certsign', 'digitalsignature'].includes(clean)) return [];
    if (
      [
        'contentcommitment',
        'keyencipherment',
        'dataencipherment',
        'keyagreement',
        'encipheronly',
        'decipheronly',
      ].includes(clean)
    )
      return [`key usage ${usage} is only valid for non-Ca certs`];
    return [`unrecognized key usage ${usage}`];
  });
  if (invalid.length > 0) out.push(`Invalid key usage: ${invalid.join('; ')}`);
  return out;
}

/**
 * `root/sign-self-issued` and `issuer/:ref/sign-self-issued`: re-signs a self-issued CA
 * certificate as it is; only the issuer, the authority key id and the signature change.
 */
export function signSelfIssued(
  authority: Authority,
  mount: string,
  issuerRef: string,
  b: FieldData<SelfIssuedFields>,
): Issued {
  const blocks = pemBlocks(b.get('certificate') ?? '').filter((x) => x.label === 'CERTIFICATE');
  if (blocks.length === 0) throw new ValidationError('no certificate found in input');
  if (blocks.length > 1) throw new ValidationError('more than one certificate found in input');
  const cert = parseCertificate(blocks[0]!.der);
  if (!cert.issuer.equals(cert.subject))
    throw new ValidationError('given certificate is not self-issued');
  if (!cert.isCA) throw new ValidationError('given certificate is not a CA certificate');
  const issuer = authority.resolveIssuer(mount, issuerRef);
  const signer = authority.signer(mount, issuer, 'issuing-certificates');
  if (
    (b.get('require_matching_certificate_algorithms') ?? false) &&
    signer.cert.key.type !== cert.key.type
  ) {
    throw new ValidationError(
      "signing certificate's public key algorithm does not match submitted certificate's, and require_matching_certificate_algorithms is set",
    );
  }
  const kept = cert.extensions
    .filter((e) => !['2.5.29.35', '2.5.29.31', '1.3.6.1.5.5.7.1.1'].includes(e.id))
    .map((e) => e.encoded);
  if (signer.cert.subjectKeyId) kept.push(ext.authorityKeyId(signer.cert.subjectKeyId));
  kept.push(...urlExtensions(authority.urls(mount)));
  const derBytes = buildCertificate({
    serial: cert.serialBytes,
    issuer: signer.cert.subject,
    subject: cert.subject,
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    spki: cert.spki,
    extensions: kept,
    scheme: signer.scheme,
    signingKey: signer.key,
  });
  const certPem = pem('CERTIFICATE', derBytes);
  const issued = parseCertificate(derBytes);
  if (!isSignedBy(issued, signer.cert))
    throw new Error('self-issued re-signing produced an unverifiable certificate');
  return { data: { certificate: certPem, issuing_ca: issuer.certificate }, warnings: [] };
}
