import { isIPv4, isIPv6 } from 'node:net';
import { ValidationError } from '../../core/errors.js';
import { commonNameTypeAllowed, glob, isDnsName, nameAllowed, toAscii } from './policy.js';
import type { Role } from './role.js';
import { cidrBytes, ipNameBytes, type AltName } from '../../x509/extensions.js';
import type { ParsedCsr } from '../../x509/parse.js';
import { uriError } from '../../x509/parse-rules.js';

/**
 * The characters RFC 3986 allows in a URI. Go writes a URI SAN as `url.String()` gives it, which
 * escapes anything else; Keel writes the text as given, so it takes only text Go keeps as it is.
 */
const URI_TEXT = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/;

/** The naming parts of an issue or sign request, as parsed from its body. */
export interface NameRequest {
  commonName: string;
  altNames: string[];
  ipSans: string[];
  uriSans: string[];
  otherSans: string[];
  userIds: string[];
  serialNumber: string;
  excludeCnFromSans: boolean;
}

/** The names a certificate will carry once the role has allowed them. */
export interface ResolvedNames {
  commonName: string;
  serialNumber: string;
  userIds: string[];
  altNames: AltName[];
  warnings: string[];
}

/** Parses one `<oid>;UTF8:<value>` other SAN with the reference's error texts. */
export function parseOtherSan(text: string): { oid: string; value: string } {
  const semi = text.indexOf(';');
  if (semi < 0)
    throw new ValidationError(
      `could not parse requested other SAN: expected a semicolon in other SAN "${text}"`,
    );
  const rest = text.slice(semi + 1);
  const colon = rest.indexOf(':');
  if (colon < 0)
    throw new ValidationError(
      `could not parse requested other SAN: expected a colon in other SAN "${text}"`,
    );
  const type = rest.slice(0, colon).toLowerCase();
  if (type !== 'utf8' && type !== 'utf-8') {
    throw new ValidationError(
      `could not parse requested other SAN: only utf8 other SANs are supported; found non-supported type in other SAN "${text}"`,
    );
  }
  return { oid: text.slice(0, semi), value: rest.slice(colon + 1) };
}

function checkOtherSans(role: Role, sans: readonly { oid: string; value: string }[]): void {
  if (sans.length === 0) return;
  if (role.allowed_other_sans.length === 1 && role.allowed_other_sans[0] === '*') return;
  const allowed = role.allowed_other_sans.filter((e) => e !== '*').map(parseOtherSan);
  for (const san of sans) {
    const forOid = allowed.filter((a) => a.oid === san.oid);
    if (forOid.length === 0)
      throw new ValidationError(`other SAN OID ${san.oid} not allowed by this role`);
    if (!forOid.some((a) => glob(a.value, san.value))) {
      throw new ValidationError(
        `other SAN ${san.value} not allowed for OID ${san.oid} by this role`,
      );
    }
  }
}

function ipInCidr(ip: string, cidr: string): boolean {
  const addr = ipNameBytes(ip);
  const range = cidrBytes(cidr);
  if (range.length !== addr.length * 2) return false;
  return addr.every((b, i) => (b & (range[addr.length + i] ?? 0)) === (range[i] ?? 0));
}

/**
 * Resolves and checks every name of a leaf against the role (research §3.3–3.4), in the
 * reference's order: CN → subject serial → DNS SANs → email SANs → other SANs → IP SANs → URI SANs
 * → user ids. The first refusal throws.
 */
export function resolveNames(role: Role, req: NameRequest, csr?: ParsedCsr): ResolvedNames {
  const warnings: string[] = [];
  const commonName = (csr && role.use_csr_common_name && csr.commonName) || req.commonName;
  if (!commonName && role.require_cn) {
    throw new ValidationError(
      'the common_name field is required, or must be provided in a CSR with "use_csr_common_name" set to true, unless "require_cn" is set to false',
    );
  }
  let dns: string[] = [];
  let emails: string[] = [];
  let ips: string[];
  let uris: string[];
  let others: { oid: string; value: string }[];
  const fromCsr = csr !== undefined && role.use_csr_sans;
  if (fromCsr) {
    if (req.altNames.length || req.ipSans.length || req.uriSans.length) {
      warnings.push(
        "the role has use_csr_sans set, so alt_names, ip_sans and uri_sans given in the request were ignored in favour of the CSR's names",
      );
    }
    const sans = csr.altNames;
    dns = sans.flatMap((n) => (n.type === 'dns' ? [n.value] : []));
    emails = sans.flatMap((n) => (n.type === 'email' ? [n.value] : []));
    ips = sans.flatMap((n) => (n.type === 'ip' ? [n.value] : []));
    uris = sans.flatMap((n) => (n.type === 'uri' ? [n.value] : []));
    others = sans.flatMap((n) => (n.type === 'other' ? [{ oid: n.oid, value: n.value }] : []));
  } else {
    for (const name of req.altNames) {
      if (name.includes('@')) {
        emails.push(name);
        continue;
      }
      const ascii = toAscii(name);
      if (ascii === undefined || !isDnsName(ascii)) {
        throw new ValidationError(
          `subject alternate name ${name} is not a valid DNS name and cannot be included as a SAN`,
        );
      }
      dns.push(ascii);
    }
    ips = req.ipSans;
    uris = req.uriSans;
    others = req.otherSans.map(parseOtherSan);
  }
  if (commonName && !req.excludeCnFromSans) {
    if (commonName.includes('@')) emails.unshift(commonName);
    else {
      const ascii = toAscii(commonName);
      if (ascii !== undefined && isDnsName(ascii)) dns.unshift(ascii);
    }
  }
  dns = [...new Set(dns)];
  emails = [...new Set(emails)].sort();

  if (commonName && !role.cn_validations.includes('disabled')) {
    if (!commonNameTypeAllowed(role, commonName) || !nameAllowed(role, commonName)) {
      throw new ValidationError(`common name ${commonName} not allowed by this role`);
    }
  }
  if (req.serialNumber && !role.allowed_serial_numbers.some((p) => glob(p, req.serialNumber))) {
    throw new ValidationError(`serial_number ${req.serialNumber} not allowed by this role`);
  }
  for (const d of dns)
    if (!nameAllowed(role, d))
      throw new ValidationError(`subject alternate name ${d} not allowed by this role`);
  for (const e of emails)
    if (!nameAllowed(role, e))
      throw new ValidationError(`email address ${e} not allowed by this role`);
  checkOtherSans(role, others);
  for (const ip of ips) {
    if (!isIPv4(ip) && !isIPv6(ip))
      throw new ValidationError(`the value "${ip}" is not a valid IP address`);
  }
  if (ips.length && !role.allow_ip_sans) {
    throw new ValidationError(
      `IP Subject Alternative Names are not allowed in this role, but was provided via ${fromCsr ? 'CSR' : 'the API'}`,
    );
  }
  if (role.allowed_ip_sans_cidr.length) {
    for (const ip of ips) {
      if (!role.allowed_ip_sans_cidr.some((c) => ipInCidr(ip, c)))
        throw new ValidationError(`the IP address "${ip}" is not allowed in this role`);
    }
  }
  if (uris.length) {
    if (role.allowed_uri_sans.length === 0) {
      throw new ValidationError(
        `URI Subject Alternative Names are not allowed in this role, but were provided via ${fromCsr ? 'CSR' : 'the API'}`,
      );
    }
    for (const uri of uris) {
      if (!role.allowed_uri_sans.some((p) => glob(p, uri))) {
        throw new ValidationError(
          `URI Subject Alternative Names were provided via ${fromCsr ? 'CSR' : 'the API'} which are not valid for this role`,
        );
      }
      if (!uri || !URI_TEXT.test(uri) || uriError(uri) !== undefined)
        throw new ValidationError(
          `the provided URI Subject Alternative Name "${uri}" is not a valid URI`,
        );
    }
  }
  for (const id of req.userIds) {
    const ok = role.allowed_user_ids.some((p) =>
      p.includes('*') ? glob(p, id) : p.toLowerCase() === id.toLowerCase(),
    );
    if (!ok) throw new ValidationError(`user_id ${id} is not allowed by this role`);
  }
  return {
    commonName,
    serialNumber: req.serialNumber,
    userIds: req.userIds,
    altNames: [
      ...dns.map((value) => ({ type: 'dns' as const, value })),
      ...emails.map((value) => ({ type: 'email' as const, value })),
      ...ips.map((value) => ({ type: 'ip' as const, value })),
      ...uris.map((value) => ({ type: 'uri' as const, value })),
      ...others.map((o) => ({ type: 'other' as const, ...o })),
    ],
    warnings,
  };
}
