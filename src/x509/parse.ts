import type { KeyObject } from 'node:crypto';
import { ValidationError } from '../core/errors.js';
import * as der from './der-read.js';
import { bitString, boolean, DerError, octetString, oidOf, parseDer, time } from './der-read.js';
import { keyUsageMask, OID, readBasicConstraints } from './extension-values.js';
import {
  checkCertificateExtensions,
  checkPublicKey,
  isIpv4Mapped,
  smallOid,
  uriError,
} from './parse-rules.js';
import type { AltName } from './extensions.js';
import { serialText, pemBlocks } from './certificate.js';
import { publicKeyFromSpki, keySpecOf, verifyWith, type KeySpec } from './keys.js';

/** One extension as found in a certificate or CSR. */
export interface RawExtension {
  id: string;
  critical: boolean;
  /** the extnValue's content: one whole DER value, checked canonical */
  value: Buffer;
  /** the whole Extension SEQUENCE, ready to copy into another certificate */
  encoded: Buffer;
}

/**
 * An Extensions SEQUENCE: each `{extnID, critical BOOLEAN DEFAULT FALSE, extnValue}` with nothing
 * else, no extension twice (Go refuses duplicates), and every value itself one canonical DER value.
 */
function parseExtensions(buf: Buffer, list: der.Element | undefined): RawExtension[] {
  if (list?.tag !== 0x30) throw new DerError('extensions are not a SEQUENCE');
  const seen = new Set<string>();
  return der.children(buf, list).map((ext) => {
    if (ext.tag !== 0x30) throw new DerError(`extension is not a SEQUENCE at offset ${ext.start}`);
    const parts = der.children(buf, ext);
    const [idEl, second, third, extra] = parts;
    if (!idEl || !second || extra || (third && second.tag !== 0x01))
      throw new DerError(`malformed extension at offset ${ext.start}`);
    const id = smallOid(buf, idEl);
    if (seen.has(id)) throw new DerError(`duplicate extension ${id}`);
    seen.add(id);
    const value = octetString(buf, third ?? second);
    try {
      parseDer(value);
    } catch (e) {
      throw new DerError(`extension ${id}: ${(e as Error).message}`);
    }
    return {
      id,
      critical: third ? boolean(buf, second) : false,
      value,
      encoded: der.whole(buf, ext),
    };
  });
}

/** String types Go's x509 reads in a Name (others are "unsupported string type"). */
const NAME_STRINGS = new Set([0x0c, 0x12, 0x13, 0x14, 0x16, 0x1e]);

/** Checks a Name: SEQUENCE OF SET OF {type OID, value of a string type}. */
function checkName(buf: Buffer, name: der.Element | undefined): der.Element {
  if (name?.tag !== 0x30) throw new DerError('a name is not a SEQUENCE');
  for (const rdn of der.children(buf, name)) {
    if (rdn.tag !== 0x31) throw new DerError(`a relative name is not a SET at offset ${rdn.start}`);
    for (const atv of der.children(buf, rdn)) {
      const [t, v, extra] = atv.tag === 0x30 ? der.children(buf, atv) : [];
      if (!t || !v || extra) throw new DerError(`malformed name attribute at offset ${atv.start}`);
      smallOid(buf, t);
      if (!NAME_STRINGS.has(v.tag))
        throw new DerError(`unsupported string type 0x${v.tag.toString(16)} in a name`);
    }
  }
  return name;
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

/** The kinds of GeneralName Keel reads but does not represent as an `AltName`. */
const OTHER_KINDS: Record<number, string> = {
  0xa3: 'x400Address',
  0xa4: 'directoryName',
  0xa5: 'ediPartyName',
  0x88: 'registeredID',
};

/** The names of a GeneralNames value, checked as Go checks them, and the kinds left out. */
export function readGeneralNames(value: Buffer): { names: AltName[]; unsupported: string[] } {
  const names: AltName[] = [];
  const unsupported: string[] = [];
  const top = der.read(value);
  if (top.tag !== 0x30) throw new DerError('GeneralNames is not a SEQUENCE');
  for (const el of der.children(value, top)) {
    const body = der.content(value, el);
    const ia5 = (kind: string) => {
      if (body.some((b) => b > 0x7f)) throw new DerError(`SAN ${kind} is not an IA5String`);
      return body.toString('latin1');
    };
    switch (el.tag) {
      case 0x82:
        names.push({ type: 'dns', value: ia5('dNSName') });
        break;
      case 0x81:
        names.push({ type: 'email', value: ia5('rfc822Name') });
        break;
      case 0x86: {
        const uri = ia5('uniformResourceIdentifier');
        const error = uriError(uri);
        if (error) throw new DerError(`cannot parse URI ${JSON.stringify(uri)}: ${error}`);
        names.push({ type: 'uri', value: uri });
        break;
      }
      case 0x87:
        if (body.length !== 4 && body.length !== 16)
          throw new DerError(`SAN iPAddress of length ${body.length}`);
        if (isIpv4Mapped(body))
          throw new DerError('SAN iPAddress contains IPv4-mapped IPv6 address');
        names.push({ type: 'ip', value: ipText(body) });
        break;
      case 0xa0: {
        const [idEl, wrapped, extra] = der.children(value, el);
        if (!idEl || wrapped?.tag !== 0xa0 || extra) throw new DerError('malformed otherName');
        const [inner, more] = der.children(value, wrapped);
        if (!inner || more) throw new DerError('malformed otherName value');
        const oid = oidOf(value, idEl);
        if (inner.tag === 0x0c)
          names.push({ type: 'other', oid, value: der.content(value, inner).toString('utf8') });
        else unsupported.push(`otherName ${oid} of tag 0x${inner.tag.toString(16)}`);
        break;
      }
      default:
        unsupported.push(OTHER_KINDS[el.tag] ?? `GeneralName tag 0x${el.tag.toString(16)}`);
    }
  }
  return { names, unsupported };
}

/** The names in a GeneralNames value (a SAN extension's value). Unknown kinds are skipped. */
export const parseGeneralNames = (value: Buffer): AltName[] => readGeneralNames(value).names;

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
  /** the keyUsage bits as Go's `KeyUsage` reads them (bit 6 is CRLSign); 0 without the extension */
  keyUsage: number;
  /** -1 when absent */
  pathLen: number;
  subjectKeyId: Buffer | undefined;
  altNames: AltName[];
}

/** The fields of a SubjectPublicKeyInfo: `{algorithm SEQUENCE, subjectPublicKey BIT STRING}`. */
function checkSpki(buf: Buffer, el: der.Element | undefined): der.Element {
  const [alg, bits, extra] = el?.tag === 0x30 ? der.children(buf, el) : [];
  if (!el || alg?.tag !== 0x30 || !bits || extra)
    throw new DerError('malformed SubjectPublicKeyInfo');
  checkPublicKey(buf, alg, bits);
  return el;
}

/** `{tbs, signatureAlgorithm, signature}`: the outer shape of certificates and CSRs. */
function signedParts(bytes: Buffer, what: string) {
  const top = parseDer(bytes);
  const [tbs, alg, sig, extra] = top.tag === 0x30 ? der.children(bytes, top) : [];
  if (tbs?.tag !== 0x30 || alg?.tag !== 0x30 || !sig || extra) throw new DerError(`not ${what}`);
  const [algId] = der.children(bytes, alg);
  if (!algId) throw new DerError('malformed signature algorithm identifier');
  smallOid(bytes, algId);
  return { tbs, alg, signature: Buffer.from(bitString(bytes, sig).bytes) };
}

/**
 * Parses certificate DER strictly (the `der-read.ts` rules, and the shape Go's x509 parser
 * requires); throws a ValidationError naming what is wrong.
 */
export function parseCertificate(bytes: Buffer): ParsedCertificate {
  try {
    const { tbs, alg, signature } = signedParts(bytes, 'a certificate');
    const fields = der.children(bytes, tbs);
    let at = 0;
    let version = 0;
    if (fields[0]?.tag === 0xa0) {
      const [v, extra] = der.children(bytes, fields[0]);
      if (!v || extra) throw new DerError('malformed version');
      version = der.smallInt(bytes, v);
      if (version > 2) throw new DerError(`unknown certificate version ${version + 1}`);
      at = 1;
    }
    const [serialEl, innerAlg, issuerEl, validityEl, subjectEl, spkiEl, ...rest] = fields.slice(at);
    if (!serialEl || innerAlg?.tag !== 0x30 || validityEl?.tag !== 0x30)
      throw new DerError('not a certificate');
    if (!der.whole(bytes, innerAlg).equals(der.whole(bytes, alg)))
      throw new DerError("inner and outer signature algorithm identifiers don't match");
    const serialBytes = Buffer.from(der.integer(bytes, serialEl));
    if ((serialBytes[0] ?? 0) & 0x80) throw new DerError('negative serial number');
    checkName(bytes, issuerEl);
    checkName(bytes, subjectEl);
    checkSpki(bytes, spkiEl);
    const [nb, na, more] = der.children(bytes, validityEl);
    if (!nb || !na || more) throw new DerError('malformed validity');
    // issuerUniqueID [1], subjectUniqueID [2], extensions [3], each at most once and in order
    let last = 0;
    let extensions: RawExtension[] = [];
    for (const el of rest) {
      const n = el.tag === 0x81 ? 1 : el.tag === 0x82 ? 2 : el.tag === 0xa3 ? 3 : 0;
      if (n <= last) throw new DerError(`unexpected field of tag 0x${el.tag.toString(16)}`);
      last = n;
      if (n === 3) {
        if (version !== 2) throw new DerError('extensions in a certificate before version 3');
        const [list, extra] = der.children(bytes, el);
        if (extra) throw new DerError('malformed extensions');
        extensions = parseExtensions(bytes, list);
        checkCertificateExtensions(extensions);
      }
    }
    const trimmed =
      serialBytes[0] === 0 && serialBytes.length > 1 ? serialBytes.subarray(1) : serialBytes;
    const spki = Buffer.from(der.whole(bytes, spkiEl!));
    const publicKey = publicKeyFromSpki(spki);
    const subject = Buffer.from(der.whole(bytes, subjectEl!));
    const bc = extensions.find((e) => e.id === OID.basicConstraints);
    const { ca, pathLen } = bc ? readBasicConstraints(bc.value) : { ca: false, pathLen: -1 };
    const ku = extensions.find((e) => e.id === OID.keyUsage);
    const ski = extensions.find((e) => e.id === OID.subjectKeyId);
    const san = extensions.find((e) => e.id === OID.subjectAltName);
    return {
      der: bytes,
      tbs: Buffer.from(der.whole(bytes, tbs)),
      serial: serialText(trimmed),
      serialBytes: Buffer.from(trimmed),
      issuer: Buffer.from(der.whole(bytes, issuerEl!)),
      subject,
      commonName: nameAttribute(subject, '2.5.4.3') ?? '',
      notBefore: time(bytes, nb),
      notAfter: time(bytes, na),
      spki,
      publicKey,
      key: keySpecOf(publicKey),
      signatureAlgorithm: Buffer.from(der.whole(bytes, alg)),
      signature,
      extensions,
      isCA: ca,
      keyUsage: ku ? keyUsageMask(ku.value) : 0,
      pathLen,
      subjectKeyId: ski ? Buffer.from(octetString(ski.value, der.read(ski.value))) : undefined,
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
  /** SAN kinds present that `altNames` does not represent (directoryName, …) */
  unsupportedNames: string[];
  signatureValid: boolean;
}

const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';

/** The extensions a CSR's attributes request: at most one extensionRequest, of one value. */
function requestedExtensions(bytes: Buffer, attrs: der.Element): RawExtension[] {
  let found: RawExtension[] | undefined;
  for (const attr of der.children(bytes, attrs)) {
    const [idEl, values, extra] = attr.tag === 0x30 ? der.children(bytes, attr) : [];
    if (!idEl || values?.tag !== 0x31 || extra)
      throw new DerError(`malformed attribute at offset ${attr.start}`);
    if (oidOf(bytes, idEl) !== EXTENSION_REQUEST) continue;
    if (found) throw new DerError('more than one extensionRequest attribute');
    const [list, more] = der.children(bytes, values);
    if (more) throw new DerError('extensionRequest attribute with more than one value');
    found = parseExtensions(bytes, list);
  }
  return found ?? [];
}

/**
 * Parses a CSR PEM strictly, with the reference's error texts (`"csr" is empty`, `csr contains no
 * data`, `certificate request could not be parsed: …`), and checks its self-signature.
 */
export function parseCsr(pemText: string): ParsedCsr {
  if (!pemText.trim()) throw new ValidationError('"csr" is empty');
  const block = pemBlocks(pemText).find(
    (b) => b.label === 'CERTIFICATE REQUEST' || b.label === 'NEW CERTIFICATE REQUEST',
  );
  if (!block || block.der.length === 0) throw new ValidationError('csr contains no data');
  const bytes = block.der;
  try {
    const { tbs, alg, signature } = signedParts(bytes, 'a certificate request');
    const [versionEl, subjectEl, spkiEl, attrsEl, extra] = der.children(bytes, tbs);
    if (!versionEl || attrsEl?.tag !== 0xa0 || extra)
      throw new DerError('not a certificate request');
    if (der.smallInt(bytes, versionEl) !== 0)
      throw new DerError('unknown certificate request version');
    checkName(bytes, subjectEl);
    const spki = Buffer.from(der.whole(bytes, checkSpki(bytes, spkiEl)));
    const publicKey = publicKeyFromSpki(spki);
    const extensions = requestedExtensions(bytes, attrsEl);
    const subject = Buffer.from(der.whole(bytes, subjectEl!));
    const san = extensions.find((e) => e.id === OID.subjectAltName);
    const names = san ? readGeneralNames(san.value) : { names: [], unsupported: [] };
    return {
      subject,
      commonName: nameAttribute(subject, '2.5.4.3') ?? '',
      spki,
      publicKey,
      key: keySpecOf(publicKey),
      extensions,
      altNames: names.names,
      unsupportedNames: names.unsupported,
      signatureValid: verifyWith(
        der.whole(bytes, alg),
        publicKey,
        der.whole(bytes, tbs),
        signature,
      ),
    };
  } catch (e) {
    if (e instanceof ValidationError) throw e;
    throw new ValidationError(`certificate request could not be parsed: ${(e as Error).message}`);
  }
}
