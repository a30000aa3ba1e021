import { isIPv4, isIPv6 } from 'node:net';
import { ValidationError } from '../core/errors.js';
import * as der from './der.js';
import { isIpv4Mapped } from './parse-rules.js';

/** An extension ready to go into a certificate's extension list. */
export const extension = (id: string, critical: boolean, value: Buffer): Buffer =>
  critical
    ? der.seq(der.oid(id), der.bool(true), der.octets(value))
    : der.seq(der.oid(id), der.octets(value));

/** Key usage names as Go's `x509.KeyUsage` spells them without the prefix, in bit order. */
export const KEY_USAGES = [
  'DigitalSignature',
  'ContentCommitment',
  'KeyEncipherment',
  'DataEncipherment',
  'KeyAgreement',
  'CertSign',
  'CRLSign',
  'EncipherOnly',
  'DecipherOnly',
] as const;

/** Bit index of a key usage name (case-insensitive); undefined for unknown names. */
export function keyUsageBit(name: string): number | undefined {
  const i = KEY_USAGES.findIndex((u) => u.toLowerCase() === name.trim().toLowerCase());
  return i < 0 ? undefined : i;
}

/** keyUsage (critical) from bit indexes. */
export function keyUsage(bitsSet: readonly number[]): Buffer {
  const max = Math.max(...bitsSet);
  const bytes = Buffer.alloc(Math.floor(max / 8) + 1);
  for (const b of bitsSet) bytes[b >> 3] = (bytes[b >> 3] ?? 0) | (0x80 >> (b & 7));
  const unused = 7 - (max & 7);
  return extension('2.5.29.15', true, der.bits(bytes, unused));
}

/** Extended key usage names and their OIDs. */
export const EXT_KEY_USAGES: Record<string, string> = {
  Any: '2.5.29.37.0',
  ServerAuth: '1.3.6.1.5.5.7.3.1',
  ClientAuth: '1.3.6.1.5.5.7.3.2',
  CodeSigning: '1.3.6.1.5.5.7.3.3',
  EmailProtection: '1.3.6.1.5.5.7.3.4',
  IPSECEndSystem: '1.3.6.1.5.5.7.3.5',
  IPSECTunnel: '1.3.6.1.5.5.7.3.6',
  IPSECUser: '1.3.6.1.5.5.7.3.7',
  TimeStamping: '1.3.6.1.5.5.7.3.8',
  OCSPSigning: '1.3.6.1.5.5.7.3.9',
  MicrosoftServerGatedCrypto: '1.3.6.1.4.1.311.10.3.3',
  NetscapeServerGatedCrypto: '2.16.840.1.113730.4.1',
};

/** The OID of an extended key usage name (case-insensitive). */
export function extKeyUsageOid(name: string): string | undefined {
  const hit = Object.entries(EXT_KEY_USAGES).find(
    ([k]) => k.toLowerCase() === name.trim().toLowerCase(),
  );
  return hit?.[1];
}

const OID_TEXT = /^[0-2](\.(0|[1-9][0-9]*))+$/;
/** True for dotted OID text. */
export const isOid = (s: string): boolean => OID_TEXT.test(s);

export const extKeyUsage = (oids: readonly string[]): Buffer =>
  extension('2.5.29.37', false, der.seq(...oids.map((o) => der.oid(o))));

/** basicConstraints (critical); a negative path length means no limit. */
export const basicConstraints = (ca: boolean, pathLen = -1): Buffer =>
  extension(
    '2.5.29.19',
    true,
    ca ? der.seq(der.bool(true), ...(pathLen >= 0 ? [der.int(pathLen)] : [])) : der.seq(),
  );

export const subjectKeyId = (id: Buffer): Buffer => extension('2.5.29.14', false, der.octets(id));
export const authorityKeyId = (id: Buffer): Buffer =>
  extension('2.5.29.35', false, der.seq(der.implicit(0, id)));

/** A subject alternative name of any kind Keel issues. */
export type AltName =
  | { type: 'dns'; value: string }
  | { type: 'email'; value: string }
  | { type: 'ip'; value: string }
  | { type: 'uri'; value: string }
  | { type: 'other'; oid: string; value: string };

/** The 4 or 16 bytes of an IP address. */
export function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new ValidationError(`the value "${ip}" is not a valid IP address`);
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4?.[1]) {
    const b = ipBytes(v4[1]);
    text = `${text.slice(0, -v4[1].length)}${b.readUInt16BE(0).toString(16)}:${b.readUInt16BE(2).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups =
    tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/**
 * The bytes of an IP name as Go writes them: an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) as
 * the four bytes of its IPv4 address (`To4`), which is also how Go matches it against a range.
 */
export function ipNameBytes(ip: string): Buffer {
  const bytes = ipBytes(ip);
  return isIpv4Mapped(bytes) ? bytes.subarray(12) : bytes;
}

/** One GeneralName. */
export function generalName(n: AltName): Buffer {
  switch (n.type) {
    case 'dns':
      return der.implicit(2, der.ia5Bytes(n.value));
    case 'email':
      return der.implicit(1, der.ia5Bytes(n.value));
    case 'uri':
      return der.implicit(6, der.ia5Bytes(n.value));
    case 'ip':
      return der.implicit(7, ipNameBytes(n.value));
    case 'other':
      return der.implicitConstructed(
        0,
        Buffer.concat([der.oid(n.oid), der.explicit(0, der.utf8(n.value))]),
      );
    default: {
      const _never: never = n;
      throw new Error(`unknown name ${JSON.stringify(_never)}`);
    }
  }
}

/** subjectAltName; critical when the subject is empty (RFC 5280 §4.2.1.6). */
export const subjectAltName = (names: readonly AltName[], critical: boolean): Buffer =>
  extension('2.5.29.17', critical, der.seq(...names.map(generalName)));

/** authorityInfoAccess from the mount's URL configuration. */
export function authorityInfoAccess(ocsp: readonly string[], caIssuers: readonly string[]): Buffer {
  const desc = (method: string, uri: string) =>
    der.seq(der.oid(method), der.implicit(6, der.ia5Bytes(uri)));
  return extension(
    '1.3.6.1.5.5.7.1.1',
    false,
    der.seq(
      ...ocsp.map((u) => desc('1.3.6.1.5.5.7.48.1', u)),
      ...caIssuers.map((u) => desc('1.3.6.1.5.5.7.48.2', u)),
    ),
  );
}

/** cRLDistributionPoints: one distribution point per URL, each with a full name. */
export const crlDistributionPoints = (urls: readonly string[]): Buffer =>
  distributionPoints('2.5.29.31', urls);

/** Freshest CRL (RFC 5280 §4.2.1.15): where the delta CRLs are, shaped as cRLDistributionPoints. */
export const freshestCrl = (urls: readonly string[]): Buffer =>
  distributionPoints('2.5.29.46', urls);

const distributionPoints = (id: string, urls: readonly string[]): Buffer =>
  extension(
    id,
    false,
    der.seq(
      ...urls.map((u) =>
        der.seq(
          der.implicitConstructed(0, der.implicitConstructed(0, der.implicit(6, der.ia5Bytes(u)))),
        ),
      ),
    ),
  );

/** Name constraints of an intermediate (RFC 5280 §4.2.1.10). */
export interface NameConstraintSet {
  permittedDns: readonly string[];
  excludedDns: readonly string[];
  permittedIp: readonly string[];
  excludedIp: readonly string[];
  permittedEmail: readonly string[];
  excludedEmail: readonly string[];
  permittedUri: readonly string[];
  excludedUri: readonly string[];
}

/** The address and mask bytes of a CIDR range; throws the reference-style error for bad input. */
export function cidrBytes(cidr: string): Buffer {
  const [addr = '', prefixText] = cidr.split('/');
  const prefix = Number(prefixText);
  const bytes = isIPv4(addr) || isIPv6(addr) ? ipBytes(addr) : undefined;
  if (
    !bytes ||
    prefixText === undefined ||
    !/^\d+$/.test(prefixText) ||
    prefix > bytes.length * 8
  ) {
    throw new ValidationError(`invalid CIDR address: ${cidr}`);
  }
  const mask = Buffer.alloc(bytes.length);
  for (let i = 0; i < prefix; i++) mask[i >> 3] = (mask[i >> 3] ?? 0) | (0x80 >> (i & 7));
  return Buffer.concat([bytes.map((b, i) => b & (mask[i] ?? 0)), mask]);
}

/** nameConstraints (critical); undefined when no constraint is set. */
export function nameConstraints(c: NameConstraintSet): Buffer | undefined {
  const subtrees = (
    dns: readonly string[],
    ip: readonly string[],
    email: readonly string[],
    uri: readonly string[],
  ) => [
    ...dns.map((d) => der.seq(der.implicit(2, der.ia5Bytes(d)))),
    ...ip.map((r) => der.seq(der.implicit(7, cidrBytes(r)))),
    ...email.map((e) => der.seq(der.implicit(1, der.ia5Bytes(e)))),
    ...uri.map((u) => der.seq(der.implicit(6, der.ia5Bytes(u)))),
  ];
  const permitted = subtrees(c.permittedDns, c.permittedIp, c.permittedEmail, c.permittedUri);
  const excluded = subtrees(c.excludedDns, c.excludedIp, c.excludedEmail, c.excludedUri);
  if (permitted.length === 0 && excluded.length === 0) return undefined;
  return extension(
    '2.5.29.30',
    true,
    der.seq(
      ...(permitted.length ? [der.implicitConstructed(0, Buffer.concat(permitted))] : []),
      ...(excluded.length ? [der.implicitConstructed(1, Buffer.concat(excluded))] : []),
    ),
  );
}

/** certificatePolicies from OIDs, each optionally with a CPS URI. */
export const certificatePolicies = (policies: readonly { oid: string; cps?: string }[]): Buffer =>
  extension(
    '2.5.29.32',
    false,
    der.seq(
      ...policies.map((p) =>
        p.cps
          ? der.seq(der.oid(p.oid), der.seq(der.seq(der.oid('1.3.6.1.5.5.7.2.1'), der.ia5(p.cps))))
          : der.seq(der.oid(p.oid)),
      ),
    ),
  );

/** TLS Feature (RFC 7633), e.g. `[5]` for OCSP must-staple. */
export const tlsFeature = (features: readonly number[]): Buffer =>
  extension('1.3.6.1.5.5.7.1.24', false, der.seq(...features.map((f) => der.int(f))));
