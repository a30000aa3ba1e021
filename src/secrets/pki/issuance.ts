import type { KeyObject } from 'node:crypto';
import type { Role } from './role.js';
import type { ResolvedNames } from './names.js';
import {
  buildCertificate,
  encodeName,
  unsignedCertificate,
  type SubjectSpec,
  type UnsignedCertificate,
} from '../../x509/certificate.js';
import * as ext from '../../x509/extensions.js';
import { keyIdentifier, type SignatureScheme } from '../../x509/keys.js';
import type { ParsedCertificate } from '../../x509/parse.js';

/** The mount's authority access URLs (`config/urls`), written into every certificate. */
export interface UrlConfig {
  issuing_certificates: string[];
  crl_distribution_points: string[];
  ocsp_servers: string[];
  /** where the delta CRLs are (the Freshest CRL extension); absent in logs from before it existed */
  delta_crl_distribution_points?: string[];
}

/** A signer: the issuer's certificate and its private key. */
export interface Signer {
  cert: ParsedCertificate;
  key: KeyObject;
  scheme: SignatureScheme;
}

/**
 * Extension bytes that depend only on an object that does not change: a role or URL
 * configuration the authority remembers (frozen), a parsed issuer certificate. A leaf re-encodes
 * only what is its own; objects that are not frozen are encoded afresh each time.
 */
const byRole = new WeakMap<Role, { head: Buffer[]; policies: Buffer[] }>();
const byUrls = new WeakMap<UrlConfig, Buffer[]>();
const byIssuer = new WeakMap<ParsedCertificate, Buffer[]>();

function remembered<K extends object, V>(
  map: WeakMap<K, V>,
  key: K,
  make: () => V,
  keep = Object.isFrozen(key),
): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    if (keep) map.set(key, value);
  }
  return value;
}

/** The authority information access, CRL distribution point and Freshest CRL extensions of `config/urls`. */
export const urlExtensions = (urls: UrlConfig): readonly Buffer[] =>
  remembered(byUrls, urls, () => encodeUrlExtensions(urls));

function encodeUrlExtensions(urls: UrlConfig): Buffer[] {
  const out: Buffer[] = [];
  if (urls.ocsp_servers.length || urls.issuing_certificates.length) {
    out.push(ext.authorityInfoAccess(urls.ocsp_servers, urls.issuing_certificates));
  }
  if (urls.crl_distribution_points.length)
    out.push(ext.crlDistributionPoints(urls.crl_distribution_points));
  if (urls.delta_crl_distribution_points?.length)
    out.push(ext.freshestCrl(urls.delta_crl_distribution_points));
  return out;
}

function subjectOf(
  role: Pick<
    Role,
    'country' | 'province' | 'locality' | 'street_address' | 'postal_code' | 'organization' | 'ou'
  >,
  names: ResolvedNames,
): SubjectSpec {
  return {
    country: role.country,
    province: role.province,
    locality: role.locality,
    streetAddress: role.street_address,
    postalCode: role.postal_code,
    organization: role.organization,
    ou: role.ou,
    commonName: names.commonName,
    serialNumber: names.serialNumber,
    userIds: names.userIds,
  };
}

/** What a leaf certificate is built from. */
export interface LeafSpec {
  role: Role;
  names: ResolvedNames;
  spki: Buffer;
  signer: Signer;
  urls: UrlConfig;
  serial: Buffer;
  notBefore: Date;
  notAfter: Date;
}

/**
 * The extensions of a leaf (research §3.6): key usage from the role, EKU from the flags then
 * `ext_key_usage` then the OIDs, basic constraints only when asked, SKID/AKID, SANs, AIA and CDP.
 */
export function leafExtensions(spec: LeafSpec, subjectEmpty: boolean): Buffer[] {
  const { head, policies } = remembered(byRole, spec.role, () => roleExtensions(spec.role));
  // A parsed certificate's key identifier never changes.
  const aki = remembered(
    byIssuer,
    spec.signer.cert,
    () => {
      const id = spec.signer.cert.subjectKeyId;
      return id ? [ext.authorityKeyId(id)] : [];
    },
    true,
  );
  return [
    ...head,
    ext.subjectKeyId(keyIdentifier(spec.spki)),
    ...aki,
    ...(spec.names.altNames.length ? [ext.subjectAltName(spec.names.altNames, subjectEmpty)] : []),
    ...policies,
    ...urlExtensions(spec.urls),
  ];
}

/** The role's own extensions: those before the key identifiers, and its policies. */
function roleExtensions(role: Role): { head: Buffer[]; policies: Buffer[] } {
  const head: Buffer[] = [];
  const kuBits = role.key_usage.flatMap((n) => {
    const bit = ext.keyUsageBit(n);
    return bit === undefined ? [] : [bit];
  });
  if (kuBits.length) head.push(ext.keyUsage(kuBits));
  const eku = [
    ...(role.server_flag ? [ext.EXT_KEY_USAGES.ServerAuth ?? ''] : []),
    ...(role.client_flag ? [ext.EXT_KEY_USAGES.ClientAuth ?? ''] : []),
    ...(role.code_signing_flag ? [ext.EXT_KEY_USAGES.CodeSigning ?? ''] : []),
    ...(role.email_protection_flag ? [ext.EXT_KEY_USAGES.EmailProtection ?? ''] : []),
    ...role.ext_key_usage.map((n) => ext.extKeyUsageOid(n) ?? ''),
    ...role.ext_key_usage_oids,
  ].filter((o) => o !== '');
  if (eku.length) head.push(ext.extKeyUsage([...new Set(eku)]));
  if (role.basic_constraints_valid_for_non_ca) head.push(ext.basicConstraints(false));
  const policies = role.policy_identifiers.length
    ? [ext.certificatePolicies(role.policy_identifiers.map((oid) => ({ oid })))]
    : [];
  return { head, policies };
}

/** A leaf decided: its TBSCertificate, to be signed off the event loop (`Authority.signOffLoop`). */
export function unsignedLeaf(spec: LeafSpec): UnsignedCertificate {
  const subject = encodeName(subjectOf(spec.role, spec.names));
  return unsignedCertificate({
    serial: spec.serial,
    issuer: spec.signer.cert.subject,
    subject,
    notBefore: spec.notBefore,
    notAfter: spec.notAfter,
    spki: spec.spki,
    extensions: leafExtensions(spec, subject.length <= 2),
    scheme: spec.signer.scheme,
    signingKey: spec.signer.key,
  });
}

/** What a CA certificate (root or intermediate) is built from. */
export interface CaSpec {
  subject: Buffer;
  altNames: ext.AltName[];
  spki: Buffer;
  /** undefined for a self-signed root */
  signer: Signer | undefined;
  /** the root's own key and scheme when self-signed */
  selfKey?: { key: KeyObject; scheme: SignatureScheme };
  maxPathLength: number;
  keyUsage: number[];
  nameConstraints: ext.NameConstraintSet;
  urls: UrlConfig;
  serial: Buffer;
  notBefore: Date;
  notAfter: Date;
  /** hex SKID to mimic when cross-signing; computed when empty */
  skid?: string;
  /** extensions copied from a CSR (use_csr_values); they replace built ones with the same OID */
  copied?: { id: string; encoded: Buffer }[];
}

/**
 * The path length a new CA gets: -1 asks for no limit unless the signer has one, then one less
 * than it; any other value is taken literally.
 */
export function effectivePathLength(
  requested: number,
  signer: ParsedCertificate | undefined,
): number {
  if (requested !== -1) return requested;
  if (signer && signer.pathLen >= 0) return Math.max(signer.pathLen - 1, 0);
  return -1;
}

/** Builds and signs a CA certificate; returns its DER. */
export function buildCa(spec: CaSpec): Buffer {
  const skid = spec.skid
    ? Buffer.from(spec.skid.replace(/:/g, ''), 'hex')
    : keyIdentifier(spec.spki);
  const built = new Map<string, Buffer>([
    ['2.5.29.19', ext.basicConstraints(true, spec.maxPathLength)],
    ['2.5.29.15', ext.keyUsage(spec.keyUsage)],
    ['2.5.29.14', ext.subjectKeyId(skid)],
  ]);
  const aki = spec.signer?.cert.subjectKeyId ?? (spec.signer ? undefined : skid);
  if (aki) built.set('2.5.29.35', ext.authorityKeyId(aki));
  if (spec.altNames.length)
    built.set('2.5.29.17', ext.subjectAltName(spec.altNames, spec.subject.length <= 2));
  const nc = ext.nameConstraints(spec.nameConstraints);
  if (nc) built.set('2.5.29.30', nc);
  for (const [i, u] of urlExtensions(spec.urls).entries()) built.set(`url${i}`, u);
  for (const c of spec.copied ?? [])
    if (!built.has(c.id) || c.id === '2.5.29.17') built.set(c.id, c.encoded);
  const signing = spec.signer ?? {
    key: spec.selfKey?.key,
    scheme: spec.selfKey?.scheme,
    cert: undefined,
  };
  if (!signing.key || !signing.scheme)
    throw new Error('a CA certificate needs a signer or its own key');
  return buildCertificate({
    serial: spec.serial,
    issuer: spec.signer ? spec.signer.cert.subject : spec.subject,
    subject: spec.subject,
    notBefore: spec.notBefore,
    notAfter: spec.notAfter,
    spki: spec.spki,
    extensions: [...built.values()],
    scheme: signing.scheme,
    signingKey: signing.key,
  });
}
