import type { KeyObject } from 'node:crypto';
import { ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { Authority } from './authority.js';
import { buildCa } from './issuance.js';
import { isSelfSigned, type Issued } from './issue.js';
import { resolveNames } from './names.js';
import { encodeIssued, issuedIdentity, formatOf, privateKeyFormatOf } from './present.js';
import { defaultRole, type Role } from './role.js';
import { resolveNotAfter, type LeafNotAfterBehavior, type NotAfterResult } from './ttl.js';
import {
  encodeName,
  pem,
  pemBlocks,
  randomSerial,
  type SubjectSpec,
} from '../../x509/certificate.js';
import * as der from '../../x509/der.js';
import * as ext from '../../x509/extensions.js';
import { keyUsageBit, type NameConstraintSet } from '../../x509/extensions.js';
import {
  generateKeyPair,
  keySpecOf,
  normaliseKeySpec,
  parsePrivateKey,
  privateKeyPem,
  signatureAlgorithm,
  signatureScheme,
  signWith,
  spkiDer,
} from '../../x509/keys.js';
import { encodedKeyOf } from '../../x509/encoded-key.js';
import { parseCertificate, type ParsedCertificate } from '../../x509/parse.js';
import { rebuildCrl } from './crls.js';
import type { FieldData } from '../fields.js';
import type {
  CA_CERTIFICATE,
  NAME_CONSTRAINTS,
  NEW_CA_KEY,
  REQUESTED_NAMES,
  SUBJECT,
  VALIDITY,
} from './paths-fields.js';
import type { IntermediateFields, RootFields } from './paths.js';

/** The internal role CA certificates are named under: any name, no hostname rules. */
export const CA_ROLE: Role = {
  ...defaultRole(),
  allow_any_name: true,
  enforce_hostnames: false,
  cn_validations: ['disabled'],
  require_cn: false,
  allow_ip_sans: true,
  allowed_uri_sans: ['*'],
  allowed_other_sans: ['*'],
  allowed_serial_numbers: ['*'],
  allowed_user_ids: ['*'],
  use_csr_common_name: false,
  use_csr_sans: false,
};

/** Subject attributes from a request body (comma-separated strings or JSON lists). */
export function subjectOf(b: FieldData<typeof SUBJECT>, commonName: string): SubjectSpec {
  return {
    country: b.get('country') ?? [],
    province: b.get('province') ?? [],
    locality: b.get('locality') ?? [],
    streetAddress: b.get('street_address') ?? [],
    postalCode: b.get('postal_code') ?? [],
    organization: b.get('organization') ?? [],
    ou: b.get('ou') ?? [],
    commonName,
    serialNumber: b.get('serial_number') ?? '',
  };
}

/** Name constraints from a request body. */
export function constraintsOf(b: FieldData<typeof NAME_CONSTRAINTS>): NameConstraintSet {
  return {
    permittedDns: b.get('permitted_dns_domains') ?? [],
    excludedDns: b.get('excluded_dns_domains') ?? [],
    permittedIp: b.get('permitted_ip_ranges') ?? [],
    excludedIp: b.get('excluded_ip_ranges') ?? [],
    permittedEmail: b.get('permitted_email_addresses') ?? [],
    excludedEmail: b.get('excluded_email_addresses') ?? [],
    permittedUri: b.get('permitted_uri_domains') ?? [],
    excludedUri: b.get('excluded_uri_domains') ?? [],
  };
}

const KEY_PATH_TYPES = ['internal', 'exported', 'existing', 'kms'] as const;

/** Checks the `:type` path segment of root/intermediate/key generation. */
export function keyPathType(
  type: string,
  allowExisting = true,
): 'internal' | 'exported' | 'existing' {
  if (
    !(KEY_PATH_TYPES as readonly string[]).includes(type) ||
    (!allowExisting && type === 'existing')
  ) {
    throw new ValidationError(
      'the "exported" path parameter must be "internal", "existing", exported" or "kms"',
    );
  }
  if (type === 'kms') throw new ValidationError('managed keys (kms) are not supported by Keel');
  return type as 'internal' | 'exported' | 'existing';
}

/** The key for root/intermediate generation: an existing one, or a fresh one generated off the event loop. */
async function keyForGeneration(
  authority: Authority,
  mount: string,
  type: 'internal' | 'exported' | 'existing',
  b: FieldData<Omit<typeof NEW_CA_KEY, 'type'>>,
): Promise<{ key: KeyObject; existingId?: string }> {
  if (type === 'existing') {
    const row = authority.resolveKey(mount, b.get('key_ref') ?? 'default');
    return { key: authority.privateKey(row), existingId: row.key_id };
  }
  const spec = normaliseKeySpec(b.get('key_type') ?? 'rsa', b.get('key_bits') ?? 0);
  return { key: (await generateKeyPair(spec)).privateKey };
}

export function caKeyUsage(b: FieldData<Pick<typeof CA_CERTIFICATE, 'key_usage'>>): number[] {
  const bits = new Set([5, 6]);
  for (const n of b.get('key_usage') ?? []) {
    const bit = keyUsageBit(n);
    if (bit !== undefined) bits.add(bit);
  }
  return [...bits].sort((x, y) => x - y);
}

/** The names a CA request body asks for (the fields every CA-generating path shares). */
export function caNameRequest(b: FieldData<typeof REQUESTED_NAMES>, commonName: string) {
  return {
    commonName,
    altNames: b.get('alt_names') ?? [],
    ipSans: b.get('ip_sans') ?? [],
    uriSans: b.get('uri_sans') ?? [],
    otherSans: b.get('other_sans') ?? [],
    userIds: [],
    serialNumber: '',
    excludeCnFromSans: b.get('exclude_cn_from_sans') ?? false,
  };
}

/**
 * A CA certificate's notAfter, which no role caps: the request's `ttl` or `not_after` under the
 * mount's TTLs; a signed one's also against its signer's, as `signer.behavior` says (a root's
 * is as asked).
 */
export function caNotAfter(
  authority: Authority,
  mount: string,
  now: Date,
  b: FieldData<typeof VALIDITY>,
  signer?: { notAfter: Date; behavior: LeafNotAfterBehavior },
): NotAfterResult {
  return resolveNotAfter({
    now,
    mountTtls: authority.mountTtls(mount),
    requestTtl: b.get('ttl'),
    notAfter: (b.get('not_after') ?? '') || undefined,
    roleTtl: 0,
    roleMaxTtl: 0,
    issuerNotAfter: signer?.notAfter,
    behavior: signer?.behavior ?? 'permit',
  });
}

/** `root/generate/:type` (and `issuers/generate/root/:type`): a new self-signed issuer. */
export async function generateRoot(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  type: string,
  b: FieldData<RootFields>,
  /** the issuer's name when the request names none (root/rotate: "next") */
  defaultIssuerName = '',
): Promise<Issued> {
  const kind = keyPathType(type);
  const format = formatOf(b.get('format'));
  const keyFormat = privateKeyFormatOf(b.get('private_key_format'));
  const commonName = (b.get('common_name') ?? '').trim();
  const names = resolveNames(CA_ROLE, caNameRequest(b, commonName));
  const now = authority.core.clock.now();
  const { notAfter, warnings } = caNotAfter(authority, mount, now, b);
  const nc = constraintsOf(b);
  const { key, existingId } = await keyForGeneration(authority, mount, kind, b);
  const scheme = signatureScheme(
    keySpecOf(key),
    b.get('signature_bits') ?? 0,
    b.get('use_pss') ?? false,
  );
  const serial = randomSerial();
  const der = buildCa({
    subject: encodeName(subjectOf(b, commonName)),
    altNames: names.altNames,
    spki: spkiDer(key),
    signer: undefined,
    selfKey: { key, scheme },
    maxPathLength: b.get('max_path_length') ?? -1,
    keyUsage: caKeyUsage(b),
    nameConstraints: nc,
    urls: authority.urls(mount),
    serial,
    notBefore: new Date(now.getTime() - (b.get('not_before_duration') ?? 30) * 1000),
    notAfter,
  });
  const cert = parseCertificate(der);
  const certPem = pem('CERTIFICATE', der);
  const keyName = b.get('key_name') ?? '';
  const issuerName = b.get('issuer_name') || defaultIssuerName;
  // The key was made before the command; the records are one command, answered once durable.
  const { issuerId, keyId } = await authority.run(() => {
    if (existingId !== undefined && !authority.q.key(mount, existingId))
      throw new ValidationError(`key ${existingId} was deleted while the certificate was made`);
    const keyId = existingId ?? authority.createKey(mount, meta, key, keyName);
    const issuerId = authority.createIssuer(mount, meta, cert, issuerName, certPem);
    const row = authority.q.issuer(mount, issuerId);
    if (row) rebuildCrl(authority, mount, meta, row);
    authority.recordIssued(mount, meta, {
      serial: cert.serial,
      issuerId,
      certificate: certPem,
      notAfter,
      commonName,
      isCa: true,
      stored: true,
    });
    return { issuerId, keyId };
  });
  if (!commonName)
    warnings.push(
      'This issuer certificate was generated without a Subject; this makes it likely that issuing leaf certs with this certificate will fail. Consider setting a common_name.',
    );
  const urls = authority.urls(mount);
  if (
    !urls.issuing_certificates.length &&
    !urls.crl_distribution_points.length &&
    !urls.ocsp_servers.length
  ) {
    warnings.push(
      "This mount hasn't configured any authority information access (AIA) fields; this may make it harder for systems to find missing certificates in the chain or to validate revocation status of certificates. Consider updating /config/urls or the newly generated issuer with this information.",
    );
  }
  const data = encodeIssued(
    {
      certificate: der,
      chain: [certPem],
      ...(kind === 'exported' ? { privateKey: encodedKeyOf(key) } : {}),
      bundleChain: false,
      removeRoots: false,
      isRoot: isSelfSigned,
    },
    format,
    keyFormat,
  );
  delete data.ca_chain;
  const keyRow = authority.q.key(mount, keyId);
  return {
    data: {
      ...data,
      ...issuedIdentity(cert.serial, notAfter),
      issuer_id: issuerId,
      issuer_name: issuerName,
      key_id: keyId,
      key_name: keyRow?.name ?? '',
    },
    warnings,
  };
}

/** `intermediate/generate/:type`: a key and a CSR for it; no issuer exists until set-signed. */
export async function generateIntermediate(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  type: string,
  b: FieldData<IntermediateFields>,
): Promise<Issued> {
  const kind = keyPathType(type);
  const format = formatOf(b.get('format'));
  const keyFormat = privateKeyFormatOf(b.get('private_key_format'));
  const commonName = (b.get('common_name') ?? '').trim();
  const names = resolveNames(CA_ROLE, caNameRequest(b, commonName));
  const { key, existingId } = await keyForGeneration(authority, mount, kind, b);
  const csrDer = buildCsr(
    key,
    encodeName(subjectOf(b, commonName)),
    names.altNames,
    b.get('add_basic_constraints') ?? false,
  );
  const keyId =
    existingId ??
    (await authority.run(() => authority.createKey(mount, meta, key, b.get('key_name') ?? '')));
  const csrPem = pem('CERTIFICATE REQUEST', csrDer);
  const data: Record<string, unknown> = { key_id: keyId };
  if (format === 'der') data.csr = csrDer.toString('base64');
  else
    data.csr =
      format === 'pem_bundle' && kind === 'exported'
        ? `${privateKeyPem(key, keyFormat)}\n${csrPem}`
        : csrPem;
  if (kind === 'exported') {
    data.private_key = privateKeyPem(key, keyFormat);
    data.private_key_type = keySpecOf(key).type;
  }
  return { data, warnings: names.warnings };
}

/** A PKCS#10 request signed by `key`, with SANs and optionally CA basic constraints requested. */
export function buildCsr(
  key: KeyObject,
  subject: Buffer,
  altNames: readonly ext.AltName[],
  basicConstraints: boolean,
): Buffer {
  const exts = [
    ...(altNames.length ? [ext.subjectAltName(altNames, false)] : []),
    ...(basicConstraints ? [ext.basicConstraints(true)] : []),
  ];
  const attrs = exts.length
    ? der.seq(der.oid('1.2.840.113549.1.9.14'), der.set(der.seq(...exts)))
    : Buffer.alloc(0);
  const info = der.seq(der.int(0), subject, spkiDer(key), der.implicitConstructed(0, attrs));
  const scheme = signatureScheme(keySpecOf(key));
  return der.seq(info, signatureAlgorithm(scheme), der.bits(signWith(scheme, key, info)));
}

/**
 * A PEM bundle read as the reference reads one: `CERTIFICATE` and `X509 CERTIFICATE` blocks are
 * certificates, `CRL`, `X509 CRL` and EC parameter blocks are passed over (openssl's `ecparam
 * -genkey` writes one before the key), any other block is a key; text between blocks is ignored.
 * Errors name the block's place among the certificates or keys, in the reference's words.
 */
function bundle(text: string): {
  certs: { cert: ParsedCertificate; pem: string }[];
  keys: KeyObject[];
} {
  if (!text) throw new ValidationError("'pem_bundle' and 'certificate' parameters were empty");
  if (text.length < 75)
    throw new ValidationError(
      'provided data for import was too short; perhaps a path was passed to the API rather than the contents of a PEM file',
    );
  const blocks = pemBlocks(text);
  // Text after the last block (or a bundle with none) is a block that does not decode.
  const end = text.lastIndexOf('-----END ');
  const tail = end < 0 ? text : text.slice(text.indexOf('-----', end + 9) + 5);
  if (blocks.length === 0 || tail.trim() !== '')
    throw new ValidationError(`error when parsing block ${blocks.length + 1}: invalid PEM data`);
  const certs: { cert: ParsedCertificate; pem: string }[] = [];
  const keys: KeyObject[] = [];
  for (const blk of blocks) {
    switch (blk.label) {
      case 'CERTIFICATE':
      case 'X509 CERTIFICATE': {
        const certPem = pem('CERTIFICATE', blk.der);
        const fail = (why: string) =>
          new ValidationError(
            `Error parsing issuer ${certs.length}: ${why}\n${certPem.trimEnd()}\n`,
          );
        let cert: ParsedCertificate;
        try {
          cert = parseCertificate(blk.der);
        } catch (e) {
          throw fail((e as Error).message);
        }
        if (!cert.isCA) throw fail('Refusing to import non-CA certificate');
        certs.push({ cert, pem: certPem });
        break;
      }
      case 'CRL':
      case 'X509 CRL':
      case 'EC PARAMS':
      case 'EC PARAMETERS':
        break;
      default:
        try {
          keys.push(parsePrivateKey(pem(blk.label, blk.der)));
        } catch (e) {
          throw new ValidationError(`Error parsing key ${keys.length}: ${(e as Error).message}`);
        }
    }
  }
  return { certs, keys };
}

/**
 * `config/ca`, `issuers/import/bundle`, `issuers/import/cert`, `intermediate/set-signed`:
 * imports CA certificates (and, where allowed, keys), de-duplicating what the mount already has.
 */
export function importBundle(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  text: string,
  allowKeys: boolean,
): Promise<Issued> {
  const { certs, keys } = bundle(text);
  if (keys.length && !allowKeys)
    throw new ValidationError(
      'private keys found in the PEM bundle but not allowed by the path; use /issuers/import/bundle',
    );
  const result = {
    imported_issuers: [] as string[],
    imported_keys: [] as string[],
    existing_issuers: [] as string[],
    existing_keys: [] as string[],
    mapping: {} as Record<string, string>,
  };
  // What the mount already has is decided in the command, so two imports store a thing once.
  return authority.run(() => {
    for (const key of keys) {
      const existing = authority.keyFor(mount, spkiDer(key));
      if (existing) result.existing_keys.push(existing.key_id);
      else result.imported_keys.push(authority.createKey(mount, meta, key, ''));
    }
    for (const c of certs) {
      const existing = authority.q
        .issuers(mount)
        .find((i) => authority.parsed(i).der.equals(c.cert.der));
      if (existing) {
        result.existing_issuers.push(existing.issuer_id);
        continue;
      }
      const id = authority.createIssuer(mount, meta, c.cert, '', c.pem);
      result.imported_issuers.push(id);
    }
    for (const id of [...result.imported_issuers, ...result.existing_issuers])
      result.mapping[id] = authority.q.issuer(mount, id)?.key_id ?? '';
    for (const id of result.imported_issuers) {
      const row = authority.q.issuer(mount, id);
      if (row) rebuildCrl(authority, mount, meta, row);
    }
    const warnings: string[] = [];
    const def = authority.defaults(mount).defaultIssuer;
    if (def && !authority.q.issuer(mount, def)?.key_id)
      warnings.push(
        'The default issuer has no key associated with it. Some operations like issuing certificates and signing CRLs will be unavailable with the requested default issuer until a key is imported or the default issuer is changed.',
      );
    return { data: result, warnings };
  });
}
