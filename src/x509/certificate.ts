import type { KeyObject } from 'node:crypto';
import { pooledRandomBytes } from '../core/random.js';
import * as der from './der.js';
import { signatureAlgorithm, signOffLoop, signWith, type SignatureScheme } from './keys.js';

/** Subject attributes in the order Go's `pkix.Name` writes them. */
export interface SubjectSpec {
  country?: readonly string[];
  province?: readonly string[];
  locality?: readonly string[];
  streetAddress?: readonly string[];
  postalCode?: readonly string[];
  organization?: readonly string[];
  ou?: readonly string[];
  commonName?: string;
  serialNumber?: string;
  userIds?: readonly string[];
}

const rdn = (id: string, value: Buffer) => der.set(der.seq(der.oid(id), value));

/** The DER Name for a subject; an empty subject is an empty SEQUENCE. */
export function encodeName(s: SubjectSpec): Buffer {
  const parts: Buffer[] = [];
  const add = (id: string, values: readonly string[] | undefined, printable = false) => {
    for (const v of values ?? []) parts.push(rdn(id, printable ? der.printable(v) : der.utf8(v)));
  };
  add('2.5.4.6', s.country, true);
  add('2.5.4.8', s.province);
  add('2.5.4.7', s.locality);
  add('2.5.4.9', s.streetAddress);
  add('2.5.4.17', s.postalCode);
  add('2.5.4.10', s.organization);
  add('2.5.4.11', s.ou);
  if (s.commonName) add('2.5.4.3', [s.commonName]);
  if (s.serialNumber) add('2.5.4.5', [s.serialNumber], true);
  add('0.9.2342.19200300.100.1.1', s.userIds);
  return der.seq(...parts);
}

/** A fresh serial: a random integer in [1, 2^159), as its minimal big-endian bytes. */
export function randomSerial(random: (n: number) => Buffer = pooledRandomBytes): Buffer {
  for (;;) {
    const b = random(20);
    b[0] = (b[0] ?? 0) & 0x7f;
    let i = 0;
    while (i < b.length && b[i] === 0) i++;
    if (i < b.length) return Buffer.from(b.subarray(i));
  }
}

/** Lowercase colon-separated hex, the wire form of a serial (`39:dd:2e:…`). */
export const serialText = (bytes: Buffer): string =>
  bytes.toString('hex').replace(/(..)(?!$)/g, '$1:');

/**
 * Normalises a serial given by a caller (colons or hyphens, any case) to colon hex; undefined when
 * it is not a serial at all.
 */
export function normaliseSerial(input: string): string | undefined {
  const hex = input.trim().toLowerCase().replace(/[:-]/g, '');
  if (!/^[0-9a-f]+$/.test(hex)) return undefined;
  const padded = hex.length % 2 ? `0${hex}` : hex;
  const bytes = Buffer.from(padded, 'hex');
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  return serialText(bytes.subarray(i));
}

/** Everything a certificate is built from; extensions arrive already encoded. */
export interface CertificateSpec {
  serial: Buffer;
  /** DER Name of the issuer (the signing certificate's subject, or the subject for a self-signed one) */
  issuer: Buffer;
  subject: Buffer;
  notBefore: Date;
  notAfter: Date;
  /** SubjectPublicKeyInfo DER of the certified key */
  spki: Buffer;
  extensions: readonly Buffer[];
  scheme: SignatureScheme;
  signingKey: KeyObject;
}

/** A certificate decided but not yet signed: its TBSCertificate, and who signs it how. */
export interface UnsignedCertificate {
  /** the DER TBSCertificate: exactly the bytes the signature covers */
  tbs: Buffer;
  /** the AlgorithmIdentifier, inside the TBS and again beside the signature */
  algorithm: Buffer;
  scheme: SignatureScheme;
  signingKey: KeyObject;
}

/** The TBSCertificate of a v3 certificate, unsigned. */
export function unsignedCertificate(spec: CertificateSpec): UnsignedCertificate {
  const algorithm = signatureAlgorithm(spec.scheme);
  const tbs = der.seq(
    der.explicit(0, der.int(2)),
    der.int(spec.serial),
    algorithm,
    spec.issuer,
    der.seq(der.time(spec.notBefore), der.time(spec.notAfter)),
    spec.subject,
    spec.spki,
    ...(spec.extensions.length ? [der.explicit(3, der.seq(...spec.extensions))] : []),
  );
  return { tbs, algorithm, scheme: spec.scheme, signingKey: spec.signingKey };
}

/** The certificate's DER: the TBS, its algorithm and the signature over it. */
const withSignature = (u: UnsignedCertificate, signature: Buffer): Buffer =>
  der.seq(u.tbs, u.algorithm, der.bits(signature));

/** Signs a decided certificate on the event loop; returns its DER. */
export const signCertificateNow = (u: UnsignedCertificate): Buffer =>
  withSignature(u, signWith(u.scheme, u.signingKey, u.tbs));

/** Builds and signs a v3 certificate on the event loop; returns its DER. */
export const buildCertificate = (spec: CertificateSpec): Buffer =>
  signCertificateNow(unsignedCertificate(spec));

/** Signs a decided certificate on the libuv pool (`signOffLoop`); returns its DER. */
export async function signCertificate(u: UnsignedCertificate): Promise<Buffer> {
  return withSignature(u, await signOffLoop(u.scheme, u.signingKey, u.tbs));
}

/** PEM text of DER bytes, without a trailing newline (as the reference returns it). */
export function pem(label: string, bytes: Buffer): string {
  const b64 = bytes.toString('base64');
  const lines: string[] = [`-----BEGIN ${label}-----`];
  // An empty body still gets its (empty) line, as it always has.
  for (let i = 0; i === 0 || i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  lines.push(`-----END ${label}-----`);
  return lines.join('\n');
}

/** Every PEM block in a text, with its label and DER bytes. */
export function pemBlocks(text: string): { label: string; der: Buffer }[] {
  const out: { label: string; der: Buffer }[] = [];
  const re = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    out.push({ label: m[1] ?? '', der: Buffer.from((m[2] ?? '').replace(/\s+/g, ''), 'base64') });
  }
  return out;
}
