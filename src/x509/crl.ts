import type { KeyObject } from 'node:crypto';
import * as der from './der.js';
import { extension } from './extensions.js';
import { signatureAlgorithm, signWith, type SignatureScheme } from './keys.js';

/** CRL reason codes (RFC 5280 §5.3.1); 7 is unused by the standard. */
export const CRL_REASONS = {
  unspecified: 0,
  keyCompromise: 1,
  cACompromise: 2,
  affiliationChanged: 3,
  superseded: 4,
  cessationOfOperation: 5,
  certificateHold: 6,
  removeFromCRL: 8,
  privilegeWithdrawn: 9,
  aACompromise: 10,
} as const;

/**
 * A revoked certificate's entry in a CRL, in the text the read model keeps: written to DER straight
 * from it, since a CRL lists every revoked certificate of its issuer each time it is built.
 */
export interface CrlEntry {
  /** the serial in colon hex, as `serialText` writes it ("1a:2b:…") */
  serial: string;
  /** when it was revoked, as `Date#toISOString` writes it (the CRL keeps the second) */
  revokedAt: string;
  /** omitted (and so "unspecified") when undefined, as the reference writes entries */
  reason?: number;
}

/** Everything a CRL is built from. */
export interface CrlSpec {
  issuer: Buffer;
  issuerKeyId: Buffer | undefined;
  number: number;
  thisUpdate: Date;
  nextUpdate: Date;
  entries: readonly CrlEntry[];
  scheme: SignatureScheme;
  signingKey: KeyObject;
  /** for a delta CRL: the number of the complete CRL it adds to (Delta CRL Indicator) */
  deltaOf?: number;
}

/**
 * A CRL entry from its line of text, `serial revokedAt reason` (the read model's `CRL_LINE`; the
 * reason empty when there is none). The serial and time are checked where they are written.
 */
export function crlEntry(line: string): CrlEntry {
  const [serial, revokedAt, reason, more] = line.split(' ');
  if (serial === undefined || revokedAt === undefined || reason === undefined || more !== undefined)
    throw new Error(`not a CRL line: ${JSON.stringify(line)}`);
  if (reason === '') return { serial, revokedAt };
  if (!/^(?:0|[1-9][0-9]?)$/.test(reason)) throw new Error(`not a CRL reason code: ${reason}`);
  return { serial, revokedAt, reason: Number(reason) };
}

/** A CRL to build from its entries' lines (`crlEntry`), as it travels to the CRL thread. */
export type CrlJob = Omit<CrlSpec, 'entries'> & { lines: readonly string[] };

/** Builds and signs the CRL of a job (`buildCrl`). */
export const buildCrlJob = (job: CrlJob): Buffer =>
  buildCrl({ ...job, entries: job.lines.map(crlEntry) });

/** Builds and signs a v2 CRL with authorityKeyIdentifier and cRLNumber; returns its DER. */
export function buildCrl(spec: CrlSpec): Buffer {
  const algorithm = signatureAlgorithm(spec.scheme);
  const extensions = [
    ...(spec.issuerKeyId
      ? [extension('2.5.29.35', false, der.seq(der.implicit(0, spec.issuerKeyId)))]
      : []),
    extension('2.5.29.20', false, der.int(spec.number)),
    // RFC 5280 §5.2.4: critical, the base CRL's number.
    ...(spec.deltaOf === undefined ? [] : [extension('2.5.29.27', true, der.int(spec.deltaOf))]),
  ];
  const tbs = der.seq(
    der.int(1),
    algorithm,
    spec.issuer,
    der.time(spec.thisUpdate),
    der.time(spec.nextUpdate),
    ...(spec.entries.length ? [revokedCertificates(spec.entries)] : []),
    der.explicit(0, der.seq(...extensions)),
  );
  return der.seq(tbs, algorithm, der.bits(signWith(spec.scheme, spec.signingKey, tbs)));
}

/**
 * The `revokedCertificates` SEQUENCE (RFC 5280 §5.1.2.6), written in one buffer: the sizes first,
 * then the bytes. Each entry is the serial as an INTEGER, the revocation time as `der.time` writes
 * it (UTCTime from 1950 to 2049, GeneralizedTime otherwise), and the reason code extension when
 * there is a reason. Text that is not exactly what the read model writes is refused.
 */
export function revokedCertificates(entries: readonly CrlEntry[]): Buffer {
  const shapes = entries.map(shapeOf);
  let total = 0;
  for (const shape of shapes) total += 1 + der.lengthSize(shape.size) + shape.size;
  const out = Buffer.allocUnsafe(1 + der.lengthSize(total) + total);
  let at = der.header(out, 0x30, total);
  entries.forEach((e, i) => (at = writeEntry(out, at, e, shapes[i]!)));
  // The buffer is not zeroed: bytes not written would be signed into the CRL.
  if (at !== out.length) throw new Error(`CRL entries: wrote ${at} bytes of ${out.length}`);
  return out;
}

/**
 * The entry's extensions up to the reason code: SEQUENCE { SEQUENCE { id-ce-cRLReasons,
 * OCTET STRING { ENUMERATED … } } }.
 */
const REASON_PREFIX = Buffer.from('300c300a0603551d1504030a01', 'hex');

/** A hex digit's value, or -1. */
function nibble(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x61 && code <= 0x66) return code - 0x61 + 10;
  return -1;
}

/** What an entry's bytes take, read once from its text. */
interface Shape {
  /** leading zero octets of the serial left out (one is kept) */
  skip: number;
  /** the serial's octets written */
  octets: number;
  /** 1 when the INTEGER needs a zero octet first, its first octet having the high bit set */
  pad: number;
  /** GeneralizedTime (before 1950 or from 2050), else UTCTime */
  generalized: boolean;
  /** the entry SEQUENCE's content length */
  size: number;
}

function shapeOf(e: CrlEntry): Shape {
  const serial = e.serial;
  if (serial.length < 2 || serial.length % 3 !== 2)
    throw new Error(`not a serial in colon hex: ${JSON.stringify(serial)}`);
  const count = (serial.length + 1) / 3;
  for (let i = 0; i < count; i++) {
    const hi = nibble(serial.charCodeAt(i * 3));
    const lo = nibble(serial.charCodeAt(i * 3 + 1));
    if (hi < 0 || lo < 0 || (i < count - 1 && serial.charCodeAt(i * 3 + 2) !== 0x3a))
      throw new Error(`not a serial in colon hex: ${JSON.stringify(serial)}`);
  }
  let skip = 0;
  while (skip < count - 1 && serial.startsWith('00', skip * 3)) skip++;
  const octets = count - skip;
  const pad = nibble(serial.charCodeAt(skip * 3)) >= 8 ? 1 : 0;
  if (!REVOKED_AT.test(e.revokedAt))
    throw new Error(`not a revocation time: ${JSON.stringify(e.revokedAt)}`);
  const year = Number(e.revokedAt.slice(0, 4));
  const generalized = year < 1950 || year >= 2050;
  if (
    e.reason !== undefined &&
    (!Number.isInteger(e.reason) || e.reason < 0 || e.reason > 10 || e.reason === 7)
  )
    throw new Error(`not a CRL reason code: ${e.reason}`);
  const int = octets + pad;
  const size =
    1 +
    der.lengthSize(int) +
    int +
    2 +
    (generalized ? 15 : 13) +
    (e.reason === undefined ? 0 : REASON_PREFIX.length + 1);
  return { skip, octets, pad, generalized, size };
}

/** The text `Date#toISOString` writes, with each field in its range. */
const REVOKED_AT =
  /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

const TIME_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];
const TIME_DIGITS_UTC = TIME_DIGITS.slice(2);

function writeEntry(out: Buffer, at: number, e: CrlEntry, shape: Shape): number {
  const { skip, octets, pad, generalized, size } = shape;
  at = der.header(out, 0x30, size, at);
  at = der.header(out, 0x02, octets + pad, at);
  if (pad) out[at++] = 0;
  for (let i = skip; i < skip + octets; i++)
    out[at++] = nibble(e.serial.charCodeAt(i * 3)) * 16 + nibble(e.serial.charCodeAt(i * 3 + 1));
  const t = e.revokedAt;
  out[at++] = generalized ? 0x18 : 0x17;
  out[at++] = generalized ? 15 : 13;
  // YYYY-MM-DDTHH:MM:SS: the digits in order, the century only in a GeneralizedTime.
  for (const from of generalized ? TIME_DIGITS : TIME_DIGITS_UTC) out[at++] = t.charCodeAt(from);
  out[at++] = 0x5a;
  if (e.reason !== undefined) {
    at += REASON_PREFIX.copy(out, at);
    out[at++] = e.reason;
  }
  return at;
}
