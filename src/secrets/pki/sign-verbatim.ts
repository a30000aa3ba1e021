import { ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import { deepFreeze } from '../../core/read-memo.js';
import type { Authority } from './authority.js';
import { defaultRole, type Role } from './role.js';
import { leaseAnswer, leaseFor, leasesOf } from './leases.js';
import { checkMetadata, loadRole, signedData, verifiedCsr, type Issued } from './issue.js';
import { urlExtensions } from './issuance.js';
import { formatOf } from './present.js';
import { resolveNotAfter } from './ttl.js';
import { encodeName, pem, serialText, unsignedCertificate } from '../../x509/certificate.js';
import * as der from '../../x509/der.js';
import * as ext from '../../x509/extensions.js';
import { keyIdentifier } from '../../x509/keys.js';
import { OID } from '../../x509/extension-values.js';
import { keyUsageFor, rewriteExtensions, type RewriteRules } from './rewrite-extensions.js';
import type { ParsedCsr } from '../../x509/parse.js';
import type { FieldData } from '../fields.js';
import type { VerbatimFields } from './paths.js';

/**
 * `sign-verbatim[/:role]`: the CSR's subject and extensions as they are. Without a role, the
 * engine defaults apply (768h, no name policy); with one, its ttl, max_ttl, issuer, no_store and
 * not_before_duration do. Intermediate CA CSRs are refused.
 */
export async function signVerbatim(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  roleName: string | undefined,
  issuerRef: string | undefined,
  body: FieldData<VerbatimFields>,
  /** the request's path under `/v1/`: the role's `generate_lease` makes a lease there */
  leasePath?: string,
): Promise<Issued> {
  // What depends on the request alone (the CSR and its signature) is checked before the decision.
  const format = formatOf(body.get('format'));
  const csr = verifiedCsr(body.get('csr') ?? '');
  // Decided, signed and recorded on the state as it is then (Authority.issueSigned).
  return authority.issueSigned(
    mount,
    (at) => {
      const role = roleName ? loadRole(authority, mount, roleName) : undefined;
      checkMetadata(body, role);
      const extensions = verbatimExtensions(csr, body);
      const issuer = authority.resolveIssuer(mount, issuerRef ?? role?.issuer_ref ?? 'default');
      const signer = authority.signer(
        mount,
        issuer,
        'issuing-certificates',
        body.get('signature_bits'),
        body.get('use_pss') ?? false,
      );
      const enforce = body.get('enforce_leaf_not_after_behavior') ?? false;
      const { notAfter, warnings } = resolveNotAfter({
        now: at.now,
        mountTtls: authority.mountTtls(mount),
        requestTtl: body.get('ttl'),
        notAfter: (body.get('not_after') ?? '') || undefined,
        roleTtl: role?.ttl ?? 0,
        roleMaxTtl: role?.max_ttl ?? 0,
        issuerNotAfter: signer.cert.notAfter,
        behavior: enforce ? issuer.settings.leafNotAfterBehavior : 'truncate',
      });
      extensions.push(ext.subjectKeyId(keyIdentifier(csr.spki)));
      if (signer.cert.subjectKeyId) extensions.push(ext.authorityKeyId(signer.cert.subjectKeyId));
      extensions.push(...urlExtensions(authority.urls(mount)));
      const userIds = body.get('user_ids') ?? [];
      const subject = userIds.length ? appendUserIds(csr.subject, userIds) : csr.subject;
      const unsigned = unsignedCertificate({
        serial: at.serial,
        issuer: signer.cert.subject,
        subject,
        notBefore: new Date(at.now.getTime() - (role?.not_before_duration ?? 30) * 1000),
        notAfter,
        spki: csr.spki,
        extensions,
        scheme: signer.scheme,
        signingKey: signer.key,
      });
      return { unsigned, issuer, role, notAfter, warnings, serialHex: serialText(at.serial) };
    },
    ({ issuer, role, notAfter, warnings, serialHex }, der) => {
      const leaseId = leaseFor(authority, leasesOf(role), leasePath);
      authority.recordIssued(mount, meta, {
        serial: serialHex,
        issuerId: issuer.issuer_id,
        certificate: pem('CERTIFICATE', der),
        notAfter,
        // the certificate's subject is the CSR's (user ids appended), so is its common name
        commonName: csr.commonName,
        isCa: false,
        stored: !(role?.no_store ?? false),
        ...(leaseId === undefined ? {} : { leaseId }),
      });
      const signed = { der, serial: serialHex, notAfter };
      const removeRoots = body.get('remove_roots_from_chain') ?? false;
      const lease = leaseAnswer(authority, leaseId, notAfter);
      return {
        data: signedData(authority, mount, issuer, signed, format, removeRoots),
        warnings,
        ...(lease === undefined ? {} : { lease }),
      };
    },
  );
}

/** The name of the role built for verbatim signing, as the audit log and errors show it. */
export const VERBATIM_ROLE_NAME = 'sign-verbatim';

/**
 * The role the reference builds for verbatim signing where a certificate is made from validated
 * names (ACME's sign-verbatim directories): any name, any key type, no hostname rules.
 */
export const VERBATIM_ROLE: Role = deepFreeze({
  ...defaultRole(),
  allow_any_name: true,
  enforce_hostnames: false,
  allow_ip_sans: true,
  allow_wildcard_certificates: true,
  allowed_uri_sans: ['*'],
  allowed_other_sans: ['*'],
  allowed_serial_numbers: ['*'],
  allowed_user_ids: ['*'],
  cn_validations: ['disabled'],
  key_type: 'any',
  key_bits: 0,
  ext_key_usage: [],
});

/** How sign-verbatim rewrites a CSR's extensions: a leaf, and nothing Keel does not read. */
const VERBATIM_RULES: RewriteRules = {
  who: 'sign-verbatim',
  kind: 'leaf',
  unknown: 'refuse',
  caRefused: 'sign-verbatim refuses to issue an intermediate CA certificate; use sign-intermediate',
};

/**
 * The extensions a verbatim certificate carries, each read from the CSR and written anew: a CA
 * request (in any encoding) is refused, and so is any extension Keel does not read. Where the CSR
 * has no key usage or extended key usage, the request's `key_usage`/`ext_key_usage` apply.
 */
function verbatimExtensions(csr: ParsedCsr, body: FieldData<VerbatimFields>): Buffer[] {
  const out = rewriteExtensions(csr.extensions, csr.subject, VERBATIM_RULES);
  const fromCsr = new Set(csr.extensions.map((e) => e.id));
  if (!fromCsr.has(OID.keyUsage)) {
    const names = !body.sent('key_usage')
      ? ['DigitalSignature', 'KeyAgreement', 'KeyEncipherment']
      : (body.get('key_usage') ?? []);
    out.push(
      ...keyUsageFor(
        names.flatMap((n) => {
          const b = ext.keyUsageBit(n);
          return b === undefined ? [] : [b];
        }),
        VERBATIM_RULES,
      ),
    );
  }
  if (!fromCsr.has(OID.extKeyUsage)) {
    const oids = [
      ...(body.get('ext_key_usage') ?? []).map((n) => ext.extKeyUsageOid(n) ?? ''),
      ...(body.get('ext_key_usage_oids') ?? []),
    ].filter((o) => o);
    for (const o of oids)
      if (!ext.isOid(o))
        throw new ValidationError(
          `"${o}" could not be parsed as a valid oid for an extended key usage`,
        );
    if (oids.length) out.push(ext.extKeyUsage(oids));
  }
  return out;
}

/** Adds UID attributes to the end of a DER Name (sign-verbatim's `user_ids`). */
function appendUserIds(name: Buffer, userIds: readonly string[]): Buffer {
  const extra = encodeName({ userIds });
  return der.seq(der.content(name, der.read(name)), der.content(extra, der.read(extra)));
}
