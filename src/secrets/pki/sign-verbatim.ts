import { ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { Authority } from './authority.js';
import { checkMetadata, isSelfSigned, loadRole, verifiedCsr, type Issued } from './issue.js';
import { urlExtensions } from './issuance.js';
import { encodeIssued, issuedIdentity, formatOf } from './present.js';
import { resolveNotAfter } from './ttl.js';
import { buildCertificate, encodeName, pem, randomSerial, serialText } from './x509/certificate.js';
import * as der from './x509/der.js';
import * as ext from './x509/extensions.js';
import { keyIdentifier } from './x509/keys.js';
import { parseCertificate } from './x509/parse.js';
import type { FieldData } from '../fields.js';
import type { VerbatimFields } from './paths.js';

/**
 * `sign-verbatim[/:role]`: the CSR's subject and extensions as they are. Without a role, the
 * engine defaults apply (768h, no name policy); with one, its ttl, max_ttl, issuer, no_store and
 * not_before_duration do. Intermediate CA CSRs are refused.
 */
export function signVerbatim(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  roleName: string | undefined,
  issuerRef: string | undefined,
  body: FieldData<VerbatimFields>,
): Issued {
  const role = roleName ? loadRole(authority, mount, roleName) : undefined;
  checkMetadata(body, role);
  const format = formatOf(body.get('format'));
  const csr = verifiedCsr(body.get('csr') ?? '');
  const bc = csr.extensions.find((e) => e.id === '2.5.29.19');
  if (bc && bc.value.length > 2 && bc.value.includes(0xff)) {
    throw new ValidationError(
      'sign-verbatim refuses to issue an intermediate CA certificate; use sign-intermediate',
    );
  }
  const issuer = authority.resolveIssuer(mount, issuerRef ?? role?.issuer_ref ?? 'default');
  const signer = authority.signer(
    mount,
    issuer,
    'issuing-certificates',
    body.get('signature_bits'),
    body.get('use_pss') ?? false,
  );
  const now = authority.core.clock.now();
  const enforce = body.get('enforce_leaf_not_after_behavior') ?? false;
  const { notAfter, warnings } = resolveNotAfter({
    now,
    mountTtls: authority.mountTtls(mount),
    requestTtl: body.get('ttl'),
    notAfter: (body.get('not_after') ?? '') || undefined,
    roleTtl: role?.ttl ?? 0,
    roleMaxTtl: role?.max_ttl ?? 0,
    issuerNotAfter: signer.cert.notAfter,
    behavior: enforce ? issuer.settings.leafNotAfterBehavior : 'truncate',
  });
  const has = (id: string) => csr.extensions.some((e) => e.id === id);
  const extensions = csr.extensions
    .filter((e) => !['2.5.29.14', '2.5.29.35', '2.5.29.31', '1.3.6.1.5.5.7.1.1'].includes(e.id))
    .map((e) => e.encoded);
  if (!has('2.5.29.15')) {
    const names = !body.sent('key_usage')
      ? ['DigitalSignature', 'KeyAgreement', 'KeyEncipherment']
      : (body.get('key_usage') ?? []);
    const bits = names.flatMap((n) => {
      const b = ext.keyUsageBit(n);
      return b === undefined ? [] : [b];
    });
    if (bits.length) extensions.push(ext.keyUsage(bits));
  }
  if (!has('2.5.29.37')) {
    const oids = [
      ...(body.get('ext_key_usage') ?? []).map((n) => ext.extKeyUsageOid(n) ?? ''),
      ...(body.get('ext_key_usage_oids') ?? []),
    ].filter((o) => o);
    for (const o of oids)
      if (!ext.isOid(o))
        throw new ValidationError(
          `"${o}" could not be parsed as a valid oid for an extended key usage`,
        );
    if (oids.length) extensions.push(ext.extKeyUsage(oids));
  }
  extensions.push(ext.subjectKeyId(keyIdentifier(csr.spki)));
  if (signer.cert.subjectKeyId) extensions.push(ext.authorityKeyId(signer.cert.subjectKeyId));
  extensions.push(...urlExtensions(authority.urls(mount)));
  const userIds = body.get('user_ids') ?? [];
  const subject = userIds.length ? appendUserIds(csr.subject, userIds) : csr.subject;
  const serial = randomSerial();
  const der = buildCertificate({
    serial,
    issuer: signer.cert.subject,
    subject,
    notBefore: new Date(now.getTime() - (role?.not_before_duration ?? 30) * 1000),
    notAfter,
    spki: csr.spki,
    extensions,
    scheme: signer.scheme,
    signingKey: signer.key,
  });
  const serialHex = serialText(serial);
  const cert = parseCertificate(der);
  authority.recordIssued(mount, meta, {
    serial: serialHex,
    issuerId: issuer.issuer_id,
    certificate: pem('CERTIFICATE', der),
    notAfter,
    commonName: cert.commonName,
    isCa: false,
    stored: !(role?.no_store ?? false),
  });
  const data = encodeIssued(
    {
      certificate: der,
      chain: authority.chain(mount, issuer),
      bundleChain: true,
      removeRoots: body.get('remove_roots_from_chain') ?? false,
      isRoot: isSelfSigned,
    },
    format,
    'der',
  );
  return {
    data: {
      ...data,
      ...issuedIdentity(serialHex, notAfter),
    },
    warnings,
  };
}

/** Adds UID attributes to the end of a DER Name (sign-verbatim's `user_ids`). */
function appendUserIds(name: Buffer, userIds: readonly string[]): Buffer {
  const extra = encodeName({ userIds });
  return der.seq(der.content(name, der.read(name)), der.content(extra, der.read(extra)));
}
