import type { KeyObject } from 'node:crypto';
import { ValidationError } from '../../../core/errors.js';
import * as der from './der.js';
import type { AltName } from './extensions.js';
import { serialText, pemBlocks } from './certificate.js';
import { publicKeyFromSpki, keySpecOf, verifyWith, type KeySpec } from './keys.js';

/** One extension as found in a certificate or CSR. */
export interface RawExtension {
  id: string;
  critical: boolean;
  value: Buffer;
  /** the whole Extension SEQUENCE, ready to copy into another certificate */
  encoded: Buffer;
}

function parseExtensions(buf: Buffer, list: der.Element): RawExtension[] {
  return der.children(buf, list).map((ext) => {
    const parts = der.children(buf, ext);
    const idEl = parts[0];
    const valueEl = parts[parts.length - 1];
    if (!idEl || !valueEl) throw new Error('malformed extension');
    const critical = parts.length === 3 && buf[parts[1]?.contentStart ?? 0] !== 0;
    return {
      id: der.oidText(der.content(buf, idEl)),
      critical,
      value: der.content(buf, valueEl),
      encoded: der.whole(buf, ext),
    };
  });
}

function parseTime(buf: Buffer, el: der.Element): Date {
  const t = der.content(buf, el).toString('latin1');
  const full = el.tag === 0x17 ? `${Number(t.slice(0, 2)) >= 50 ? '19' : '20'}${t}` : t;
  const m = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(full);
  if (!m) throw new Error(`unsupported time ${t}`);
  return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
}

/** The first value of an attribute (e.g. CN, 2.5.4.3) in a DER Name, as text. */
export function nameAttribute(name: Buffer, id: string): string | undefined {
  return nameAttributes(name, id)[0];
}

/** Every value of an attribute in a DER Name. */
export function nameAttributes(name: Buffer, id: string): string[] {
  const out: string[] = [];
  for (const set of der.children(name, der.read(name))) {
    for (const atv of der.children(name, set)) {
      const [t, v] = der.children(name, atv);
      if (t && v && der.oidText(der.content(name, t)) === id)
        out.push(der.content(name, v).toString('utf8'));
    }
  }
  return out;
}

/** The names in a GeneralNames value (a SAN extension's value). Unknown kinds are skipped. */
export function parseGeneralNames(value: Buffer): AltName[] {
  const out: AltName[] = [];
  for (const el of der.children(value, der.read(value))) {
    const body = der.content(value, el);
    switch (el.tag) {
      case 0x82:
        out.push({ type: 'dns', value: body.toString('latin1') });
        break;
      case 0x81:
        out.push({ type: 'email', value: body.toString('latin1') });
        break;
      case 0x86:
        out.push({ type: 'uri', value: body.toString('latin1') });
        break;
      case 0x87:
        out.push({ type: 'ip', value: ipText(body) });
        break;
      case 0xa0: {
        const [idEl, wrapped] = der.children(value, el);
        const inner = wrapped ? der.children(value, wrapped)[0] : undefined;
        if (idEl && inner) {
          out.push({
            type: 'other',
            oid: der.oidText(der.content(value, idEl)),
            value: der.content(value, inner).toString('utf8'),
          });
        }
        break;
      }
      default:
        break;
    }
  }
  return out;
}

function ipText(b: Buffer): string {
  if (b.length === 4) return [...b].join('.');
  const groups: string[] = [];
  for (let i = 0; i + 1 < b.length; i += 2) groups.push(b.readUInt16BE(i).toString(16));
  // the URL parser writes IPv6 in its canonical compressed form
  return new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1);
}

/** A parsed X.509 certificate with the raw pieces Keel reuses. */
export interface ParsedCertificate {
  der: Buffer;
  tbs: Buffer;
  serial: string;
  serialBytes: Buffer;
  issuer: Buffer;
  subject: Buffer;
  commonName: string;
  notBefore: Date;
  notAfter: Date;
  spki: Buffer;
  publicKey: KeyObject;
  key: KeySpec;
  signatureAlgorithm: Buffer;
  signature: Buffer;
  extensions: RawExtension[];
  isCA: boolean;
  /** -1 when absent */
  pathLen: number;
  subjectKeyId: Buffer | undefined;
  altNames: AltName[];
}

/** Parses certificate DER; throws a ValidationError naming what is wrong. */
export function parseCertificate(bytes: Buffer): ParsedCertificate {
  try {
    const top = der.read(bytes);
    const [tbsEl, algEl, sigEl] = der.children(bytes, top);
    if (!tbsEl || !algEl || !sigEl) throw new Error('not a certificate');
    const fields = der.children(bytes, tbsEl);
    const offset = fields[0]?.tag === 0xa0 ? 1 : 0;
    const [serialEl, , issuerEl, validityEl, subjectEl, spkiEl] = fields.slice(offset);
    if (!serialEl || !issuerEl || !validityEl || !subjectEl || !spkiEl)
      throw new Error('not a certificate');
    const [nb, na] = der.children(bytes, validityEl);
    if (!nb || !na) throw new Error('bad validity');
    const extList = fields.find((f) => f.tag === 0xa3);
    const extensions = extList ? parseExtensions(bytes, der.children(bytes, extList)[0]!) : [];
    const serialBytes = Buffer.from(der.content(bytes, serialEl));
    const trimmed =
      serialBytes[0] === 0 && serialBytes.length > 1 ? serialBytes.subarray(1) : serialBytes;
    const spki = Buffer.from(der.whole(bytes, spkiEl));
    const publicKey = publicKeyFromSpki(spki);
    const subject = Buffer.from(der.whole(bytes, subjectEl));
    let isCA = false;
    let pathLen = -1;
    const bc = extensions.find((e) => e.id === '2.5.29.19');
    if (bc) {
      for (const el of der.children(bc.value, der.read(bc.value))) {
        if (el.tag === 0x01) isCA = bc.value[el.contentStart] !== 0;
        if (el.tag === 0x02)
          pathLen = der.content(bc.value, el).readUIntBE(0, el.end - el.contentStart);
      }
    }
    const ski = extensions.find((e) => e.id === '2.5.29.14');
    const san = extensions.find((e) => e.id === '2.5.29.17');
    return {
      der: bytes,
      tbs: Buffer.from(der.whole(bytes, tbsEl)),
      serial: serialText(trimmed),
      serialBytes: Buffer.from(trimmed),
      issuer: Buffer.from(der.whole(bytes, issuerEl)),
      subject,
      commonName: nameAttribute(subject, '2.5.4.3') ?? '',
      notBefore: parseTime(bytes, nb),
      notAfter: parseTime(bytes, na),
      spki,
      publicKey,
      key: keySpecOf(publicKey),
      signatureAlgorithm: Buffer.from(der.whole(bytes, algEl)),
      signature: Buffer.from(der.content(bytes, sigEl).subarray(1)),
      extensions,
      isCA,
      pathLen,
      subjectKeyId: ski ? Buffer.from(der.content(ski.value, der.read(ski.value))) : undefined,
      altNames: san ? parseGeneralNames(san.value) : [],
    };
  } catch (e) {
    if (e instanceof ValidationError) throw e;
    throw new ValidationError(`unable to parse certificate: ${(e as Error).message}`);
  }
}

/** Parses every CERTIFICATE block of a PEM text. */
export const parseCertificatesPem = (text: string): ParsedCertificate[] =>
  pemBlocks(text)
    .filter((b) => b.label === 'CERTIFICATE')
    .map((b) => parseCertificate(b.der));

/** True when `child` carries a valid signature by `parent`'s key and names it as issuer. */
export const isSignedBy = (child: ParsedCertificate, parent: ParsedCertificate): boolean =>
  child.issuer.equals(parent.subject) &&
  verifyWith(child.signatureAlgorithm, parent.publicKey, child.tbs, child.signature);

/** A parsed PKCS#10 request. */
export interface ParsedCsr {
  subject: Buffer;
  commonName: string;
  spki: Buffer;
  publicKey: KeyObject;
  key: KeySpec;
  extensions: RawExtension[];
  altNames: AltName[];
  signatureValid: boolean;
}

/**
 * Parses a CSR PEM with the reference's error texts (`"csr" is empty`, `csr contains no data`,
 * `certificate request could not be parsed: …`) and checks its self-signature.
 */
export function parseCsr(pemText: string): ParsedCsr {
  if (!pemText.trim()) throw new ValidationError('"csr" is empty');
  const block = pemBlocks(pemText).find(
    (b) => b.label === 'CERTIFICATE REQUEST' || b.label === 'NEW CERTIFICATE REQUEST',
  );
  if (!block || block.der.length === 0) throw new ValidationError('csr contains no data');
  const bytes = block.der;
  try {
    const top = der.read(bytes);
    const [infoEl, algEl, sigEl] = der.children(bytes, top);
    if (!infoEl || !algEl || !sigEl) throw new Error('not a certificate request');
    const [, subjectEl, spkiEl, attrsEl] = der.children(bytes, infoEl);
    if (!subjectEl || !spkiEl) throw new Error('not a certificate request');
    const spki = Buffer.from(der.whole(bytes, spkiEl));
    const publicKey = publicKeyFromSpki(spki);
    let extensions: RawExtension[] = [];
    for (const attr of attrsEl ? der.children(bytes, attrsEl) : []) {
      const [idEl, values] = der.children(bytes, attr);
      if (idEl && values && der.oidText(der.content(bytes, idEl)) === '1.2.840.113549.1.9.14') {
        const list = der.children(bytes, values)[0];
        if (list) extensions = parseExtensions(bytes, list);
      }
    }
    const subject = Buffer.from(der.whole(bytes, subjectEl));
    const san = extensions.find((e) => e.id === '2.5.29.17');
    return {
      subject,
      commonName: nameAttribute(subject, '2.5.4.3') ?? '',
      spki,
      publicKey,
      key: keySpecOf(publicKey),
      extensions,
      altNames: san ? parseGeneralNames(san.value) : [],
      signatureValid: verifyWith(
        der.whole(bytes, algEl),
        publicKey,
        der.whole(bytes, infoEl),
        der.content(bytes, sigEl).subarray(1),
      ),
    };
  } catch (e) {
    if (e instanceof ValidationError) throw e;
    throw new ValidationError(`certificate request could not be parsed: ${(e as Error).message}`);
  }
}
