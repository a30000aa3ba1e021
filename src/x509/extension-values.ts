import * as der from './der-read.js';

/**
 * The values of the extensions Keel decides on, read from their DER (already checked canonical by
 * the extension list's reader). Every decision about a CA flag, a key usage or an extended key
 * usage is taken on these values, never on the bytes.
 */

export const OID = {
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
  crlDistributionPoints: '2.5.29.31',
  authorityInfoAccess: '1.3.6.1.5.5.7.1.1',
  tlsFeature: '1.3.6.1.5.5.7.1.24',
  nameConstraints: '2.5.29.30',
  certificatePolicies: '2.5.29.32',
  policyMappings: '2.5.29.33',
  policyConstraints: '2.5.29.36',
  inhibitAnyPolicy: '2.5.29.54',
} as const;

/** basicConstraints `{cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL}`. */
export function readBasicConstraints(value: Buffer): { ca: boolean; pathLen: number } {
  const top = der.read(value);
  if (top.tag !== 0x30) throw new der.DerError('basicConstraints is not a SEQUENCE');
  const parts = der.children(value, top);
  let i = 0;
  let ca = false;
  let pathLen = -1;
  if (parts[i]?.tag === 0x01) ca = der.boolean(value, parts[i++]!);
  if (parts[i]?.tag === 0x02) pathLen = der.smallInt(value, parts[i++]!);
  if (i !== parts.length) throw new der.DerError('basicConstraints has unexpected fields');
  return { ca, pathLen };
}

/** The indexes of the bits a keyUsage value sets, defined (0–8) or not. */
function keyUsageBits(value: Buffer): number[] {
  const { bytes, unused } = der.bitString(value, der.read(value));
  const out: number[] = [];
  const total = bytes.length * 8 - unused;
  for (let i = 0; i < total; i++) if ((bytes[i >> 3] ?? 0) & (0x80 >> (i & 7))) out.push(i);
  return out;
}

/** keyUsage: the indexes of the bits set (0 = digitalSignature … 8 = decipherOnly). */
export function readKeyUsage(value: Buffer): number[] {
  const out = keyUsageBits(value);
  if (out.some((b) => b > 8)) throw new der.DerError('keyUsage sets an undefined bit');
  return out;
}

/**
 * A keyUsage value as Go's `KeyUsage`: bit i set for usage i (0 digitalSignature … 8
 * decipherOnly); like Go, the bits past the defined ones are left out.
 */
export const keyUsageMask = (value: Buffer): number =>
  keyUsageBits(value)
    .filter((b) => b <= 8)
    .reduce((mask, b) => mask | (1 << b), 0);

/** A SEQUENCE OF OBJECT IDENTIFIER (extKeyUsage). */
export function readOidList(value: Buffer, what: string): string[] {
  const top = der.read(value);
  if (top.tag !== 0x30) throw new der.DerError(`${what} is not a SEQUENCE`);
  const oids = der.children(value, top).map((el) => der.oidOf(value, el));
  if (oids.length === 0) throw new der.DerError(`${what} is empty`);
  return oids;
}

/** TLS Feature (RFC 7633): a SEQUENCE OF INTEGER, e.g. 5 for OCSP must-staple. */
export function readTlsFeature(value: Buffer): number[] {
  const top = der.read(value);
  if (top.tag !== 0x30) throw new der.DerError('TLS feature is not a SEQUENCE');
  return der.children(value, top).map((el) => der.smallInt(value, el));
}
