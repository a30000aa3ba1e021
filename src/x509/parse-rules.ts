import * as der from './der-read.js';
import { DerError, oidOf } from './der-read.js';
import { OID } from './extension-values.js';
import { curveOfOid, EC_PUBLIC_KEY, ED25519, RSA_ENCRYPTION } from './key-der.js';

/**
 * What Go's crypto/x509 refuses when it parses a certificate or a request, beyond DER itself: the
 * public key of a known algorithm, and the value of every extension it reads while parsing. The
 * reference parses with it, so a certificate it refuses is refused here, with its reason. Keel is
 * stricter in places (ADR 0095); it is never more lenient. `test/interop/pki/go-x509.test.ts`
 * checks this against a Go binary.
 */

const fail = (message: string): never => {
  throw new DerError(message);
};

/** A SubjectPublicKeyInfo's key as Go reads RSA, EC and Ed25519 keys. Other algorithms pass. */
export function checkPublicKey(buf: Buffer, alg: der.Element, key: der.Element): void {
  const [idEl, params, extra] = der.children(buf, alg);
  if (!idEl || extra) fail('malformed public key algorithm identifier');
  const id = oidOf(buf, idEl!);
  const { bytes, unused } = der.bitString(buf, key);
  switch (id) {
    case RSA_ENCRYPTION: {
      if (params?.tag !== 0x05) fail('RSA key missing NULL parameters');
      const top = unused ? undefined : der.read(bytes);
      const [n, e, more] = top?.tag === 0x30 ? der.children(bytes, top) : [];
      if (!n || !e || more) fail('invalid RSA public key');
      const modulus = der.integer(bytes, n!);
      const exponent = der.integer(bytes, e!);
      if (modulus[0]! & 0x80 || (modulus.length === 1 && modulus[0] === 0))
        fail('RSA modulus is not a positive number');
      if (exponent[0]! & 0x80 || (exponent.length === 1 && exponent[0] === 0))
        fail('RSA public exponent is not a positive number');
      return;
    }
    case EC_PUBLIC_KEY: {
      if (params?.tag !== 0x06) fail('invalid ECDSA parameters');
      // The curves Go reads are Keel's: P-224, P-256, P-384, P-521.
      const curve = curveOfOid(oidOf(buf, params!));
      if (curve === undefined) fail('unsupported elliptic curve');
      if (unused || bytes.length !== 1 + 2 * curve!.size || bytes[0] !== 0x04)
        fail('failed to unmarshal elliptic curve point');
      return;
    }
    case ED25519:
      if (params) fail('Ed25519 key encoded with illegal parameters');
      if (unused || bytes.length !== 32) fail('wrong Ed25519 public key size');
      return;
    default:
      return;
  }
}

/** Printable ASCII without space: the bytes Go allows in a domain name's labels. */
const domainNameValid = (s: string, constraint: boolean): boolean => {
  if (s === '') return true;
  if (s.endsWith('.')) return false;
  const body = constraint && s.startsWith('.') ? s.slice(1) : s;
  return body.split('.').every((label) => label !== '' && /^[\x21-\x7e]+$/.test(label));
};

const HEX = /^[0-9a-fA-F]{2}$/;

/** Whether every `%` in `s` starts an escape of two hex digits. */
const escapesValid = (s: string): boolean =>
  s.split('%').every((part, i) => i === 0 || HEX.test(part.slice(0, 2)));

/** Characters a host may hold besides letters and digits (net/url's shouldEscape, host mode). */
const HOST_CHARS = new Set('!$&\'()*+,;=:[]<>"-_.~%');
const USERINFO_CHARS = new Set("-._:~!$&'()*+,;=%@");

const validPort = (colonPort: string): boolean => colonPort === '' || /^:\d*$/.test(colonPort);

/** The host of `authority`, or why net/url refuses the authority. */
function parseAuthority(authority: string): { host: string } | { error: string } {
  const at = authority.lastIndexOf('@');
  const userinfo = at < 0 ? '' : authority.slice(0, at);
  const host = at < 0 ? authority : authority.slice(at + 1);
  if ([...userinfo].some((c) => !/[a-zA-Z0-9]/.test(c) && !USERINFO_CHARS.has(c)))
    return { error: 'net/url: invalid userinfo' };
  if (!escapesValid(userinfo)) return { error: 'invalid URL escape' };
  let name = host;
  if (host.startsWith('[')) {
    const close = host.lastIndexOf(']');
    if (close < 0) return { error: "missing ']' in host" };
    if (!validPort(host.slice(close + 1))) return { error: 'invalid port after host' };
    name = host.slice(0, close + 1);
  } else {
    const colon = host.lastIndexOf(':');
    if (colon >= 0) {
      if (!validPort(host.slice(colon))) return { error: 'invalid port after host' };
    }
  }
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!;
    if (c === '%') {
      if (!HEX.test(name.slice(i + 1, i + 3))) return { error: 'invalid URL escape' };
      // only bytes past ASCII may be escaped in a host, and %25 (a zone's `%`)
      if (parseInt(name[i + 1]!, 16) < 8 && name.slice(i, i + 3) !== '%25')
        return { error: 'invalid URL escape' };
    } else if (!/[a-zA-Z0-9]/.test(c) && !HOST_CHARS.has(c)) {
      return { error: `invalid character ${JSON.stringify(c)} in host name` };
    }
  }
  return { host: decodeURIComponent(host.replace(/%(?![0-9a-fA-F]{2})/g, '%25')) };
}

/**
 * Why Go's `url.Parse` refuses `uri`, or why x509 refuses its host; undefined when both take it.
 * The URL's parts are cut as net/url cuts them: fragment, scheme, query, authority, path.
 */
export function uriError(uri: string): string | undefined {
  const hash = uri.indexOf('#');
  const rest0 = hash < 0 ? uri : uri.slice(0, hash);
  // The fragment is cut off first: control characters are looked for in the rest only.
  if (/[\x00-\x1f\x7f]/.test(rest0)) return 'net/url: invalid control character in URL';
  if (hash >= 0 && !escapesValid(uri.slice(hash + 1))) return 'invalid URL escape';
  if (rest0 === '' || rest0 === '*') return undefined;
  let scheme = '';
  let rest = rest0;
  for (let i = 0; i < rest0.length; i++) {
    const c = rest0[i]!;
    if (/[a-zA-Z]/.test(c)) continue;
    if (/[0-9+\-.]/.test(c)) {
      if (i === 0) break;
      continue;
    }
    if (c === ':') {
      if (i === 0) return 'missing protocol scheme';
      scheme = rest0.slice(0, i);
      rest = rest0.slice(i + 1);
    }
    break;
  }
  if (rest.endsWith('?') && rest.split('?').length === 2) rest = rest.slice(0, -1);
  else if (rest.includes('?')) rest = rest.slice(0, rest.indexOf('?'));
  if (!rest.startsWith('/')) {
    if (scheme) return undefined; // opaque: net/url takes it as it is
    if ((rest.split('/')[0] ?? '').includes(':'))
      return 'first path segment in URL cannot contain colon';
  }
  let path = rest;
  if (rest.startsWith('//') && (scheme || !rest.startsWith('///'))) {
    const slash = rest.indexOf('/', 2);
    const authority = slash < 0 ? rest.slice(2) : rest.slice(2, slash);
    path = slash < 0 ? '' : rest.slice(slash);
    const parsed = parseAuthority(authority);
    if ('error' in parsed) return parsed.error;
    if (parsed.host && !domainNameValid(parsed.host, false)) return 'invalid domain';
  }
  if (!escapesValid(path)) return 'invalid URL escape';
  return undefined;
}

const ATEXT = /^[a-zA-Z0-9!#$%&'*+\-/=?^_`{|}~]+$/;

/** An rfc822Name constraint with a mailbox, read as Go's `parseRFC2821Mailbox` reads one. */
function mailboxValid(s: string): boolean {
  let local: string;
  let rest: string;
  if (s.startsWith('"')) {
    let i = 1;
    for (; i < s.length && s[i] !== '"'; i++) {
      const c = s.charCodeAt(i);
      if (s[i] === '\\') {
        const next = s.charCodeAt(++i);
        if (!(next === 9 || (next >= 32 && next <= 126))) return false;
      } else if (!(c === 9 || (c >= 32 && c <= 126))) return false;
    }
    if (i >= s.length) return false;
    local = s.slice(1, i);
    rest = s.slice(i + 1);
  } else {
    const at = s.indexOf('@');
    if (at < 0) return false;
    local = s.slice(0, at);
    rest = s.slice(at);
    if (!local.split('.').every((atom) => ATEXT.test(atom))) return false;
  }
  if (!local && !s.startsWith('"')) return false;
  if (!rest.startsWith('@')) return false;
  const domain = rest.slice(1);
  return domain !== '' && domainNameValid(domain, false);
}

const ia5 = (bytes: Buffer, what: string): string => {
  if (bytes.some((b) => b > 0x7f)) fail(`invalid constraint value: ${what} is not an IA5String`);
  return bytes.toString('latin1');
};

const IPV4_MAPPED = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);

/** An IPv6 address that holds an IPv4 one (::ffff:a.b.c.d, as Go's `To4` finds it). */
export const isIpv4Mapped = (ip: Buffer): boolean =>
  ip.length === 16 && ip.subarray(0, 12).equals(IPV4_MAPPED);

const isValidMask = (mask: Buffer): boolean => {
  let zero = false;
  for (const b of mask) {
    if (zero ? b !== 0 : ![0x00, 0x80, 0xc0, 0xe0, 0xf0, 0xf8, 0xfc, 0xfe, 0xff].includes(b))
      return false;
    if (b !== 0xff) zero = true;
  }
  return true;
};

const IPV4_TEXT = /^(\d{1,3})(\.\d{1,3}){3}$/;

/** One GeneralSubtrees of a name constraints value, as Go reads its DNS, IP, email and URI bases. */
function checkSubtrees(value: Buffer, subtrees: der.Element): void {
  const list = der.children(value, subtrees);
  if (list.length === 0) fail('empty name constraints subtree sequence');
  for (const subtree of list) {
    const [base] = subtree.tag === 0x30 ? der.children(value, subtree) : [];
    if (!base) fail('invalid NameConstraints extension');
    const body = der.content(value, base!);
    switch (base!.tag) {
      case 0x82: {
        const domain = ia5(body, 'dNSName');
        if (!domainNameValid(domain, true))
          fail(`failed to parse dnsName constraint ${JSON.stringify(domain)}`);
        break;
      }
      case 0x87: {
        if (body.length !== 8 && body.length !== 32)
          fail(`IP constraint contained value of length ${body.length}`);
        const half = body.length / 2;
        if (!isValidMask(body.subarray(half)))
          fail(`IP constraint contained invalid mask ${body.subarray(half).toString('hex')}`);
        if (isIpv4Mapped(body.subarray(0, half)))
          fail('IP constraint contained IPv4-mapped IPv6 address');
        break;
      }
      case 0x81: {
        const constraint = ia5(body, 'rfc822Name');
        const ok = constraint.includes('@')
          ? mailboxValid(constraint)
          : domainNameValid(constraint, true);
        if (!ok) fail(`failed to parse rfc822Name constraint ${JSON.stringify(constraint)}`);
        break;
      }
      case 0x86: {
        const domain = ia5(body, 'uniformResourceIdentifier');
        if (IPV4_TEXT.test(domain) || (domain.includes(':') && /^[0-9a-fA-F:.]+$/.test(domain)))
          fail(`failed to parse URI constraint ${JSON.stringify(domain)}: cannot be IP address`);
        if (!domainNameValid(domain, true))
          fail(`failed to parse URI constraint ${JSON.stringify(domain)}`);
        break;
      }
      default:
        break;
    }
  }
}

function checkNameConstraints(value: Buffer): void {
  const top = der.read(value);
  const parts = top.tag === 0x30 ? der.children(value, top) : undefined;
  if (!parts) return fail('invalid NameConstraints extension');
  let i = 0;
  const permitted = parts[i]?.tag === 0xa0 ? parts[i++] : undefined;
  const excluded = parts[i]?.tag === 0xa1 ? parts[i++] : undefined;
  if (i !== parts.length) fail('invalid NameConstraints extension');
  if (!permitted && !excluded) fail('empty name constraints extension');
  if (permitted) checkSubtrees(value, permitted);
  if (excluded) checkSubtrees(value, excluded);
}

/** The elements of a SEQUENCE value, or Go's error for the extension. */
function sequence(value: Buffer, el: der.Element | undefined, error: string): der.Element[] {
  if (el?.tag !== 0x30) return fail(error);
  return der.children(value, el);
}

function checkCrlDistributionPoints(value: Buffer): void {
  for (const point of sequence(value, der.read(value), 'invalid CRL distribution points')) {
    const [name] = sequence(value, point, 'invalid CRL distribution point');
    if (name?.tag !== 0xa0) continue;
    const [fullName, more] = der.children(value, name);
    if (fullName?.tag !== 0xa0 || more) fail('invalid CRL distribution point');
  }
}

function checkPolicies(value: Buffer): void {
  const seen = new Set<string>();
  for (const policy of sequence(value, der.read(value), 'invalid certificate policies')) {
    const [id] = policy.tag === 0x30 ? der.children(value, policy) : [];
    if (id?.tag !== 0x06) fail('invalid certificate policies');
    const oid = oidOf(value, id!);
    if (seen.has(oid)) fail('invalid certificate policies');
    seen.add(oid);
  }
}

/** An INTEGER that Go reads into a signed 64-bit value (policy constraints' skip counts). */
const checkInt64 = (value: Buffer, el: der.Element, error: string): void => {
  if (der.content(value, el).length > 8) fail(error);
};

/**
 * Checks the extensions Go reads while it parses a certificate, each as Go reads it. The list
 * itself (shape, duplicates, canonical values) is already checked by the caller.
 */
export function checkCertificateExtensions(
  extensions: readonly { id: string; critical: boolean; value: Buffer }[],
): void {
  for (const { id, critical, value } of extensions) {
    const top = der.read(value);
    switch (id) {
      case OID.keyUsage:
        if (top.tag !== 0x03) fail('invalid key usage');
        der.bitString(value, top);
        break;
      case OID.basicConstraints:
        break; // read by readBasicConstraints, more strictly than Go
      case OID.subjectAltName:
        break; // read by readGeneralNames
      case OID.nameConstraints:
        checkNameConstraints(value);
        break;
      case OID.crlDistributionPoints:
        checkCrlDistributionPoints(value);
        break;
      case OID.authorityKeyId: {
        if (critical) fail('authority key identifier incorrectly marked critical');
        sequence(value, top, 'invalid authority key identifier');
        break;
      }
      case OID.policyConstraints: {
        const parts = sequence(value, top, 'invalid policy constraints extension');
        let i = 0;
        for (const tag of [0x80, 0x81])
          if (parts[i]?.tag === tag)
            checkInt64(value, parts[i++]!, 'invalid policy constraints extension');
        break;
      }
      case OID.extKeyUsage:
        for (const el of sequence(value, top, 'invalid extended key usages')) {
          if (el.tag !== 0x06) fail('invalid extended key usages');
          oidOf(value, el);
        }
        break;
      case OID.subjectKeyId:
        if (critical) fail('subject key identifier incorrectly marked critical');
        if (top.tag !== 0x04) fail('invalid subject key identifier');
        break;
      case OID.certificatePolicies:
        checkPolicies(value);
        break;
      case OID.policyMappings:
        for (const mapping of sequence(value, top, 'invalid policy mappings extension')) {
          const [a, b] = mapping.tag === 0x30 ? der.children(value, mapping) : [];
          if (a?.tag !== 0x06 || b?.tag !== 0x06) fail('invalid policy mappings extension');
        }
        break;
      case OID.inhibitAnyPolicy:
        if (top.tag !== 0x02 || der.content(value, top).length > 8)
          fail('invalid inhibit any policy extension');
        break;
      case OID.authorityInfoAccess:
        if (critical) fail('authority info access incorrectly marked critical');
        for (const access of sequence(value, top, 'invalid authority info access')) {
          const [method] = access.tag === 0x30 ? der.children(value, access) : [];
          if (method?.tag !== 0x06) fail('invalid authority info access');
        }
        break;
      default:
        break;
    }
  }
}

/**
 * An OBJECT IDENTIFIER with each arc, the first two combined, below 2^31, as Go reads one into
 * `asn1.ObjectIdentifier`. Keel applies it to extension ids, name attribute types and the
 * signature algorithm.
 */
export function smallOid(buf: Buffer, el: der.Element): string {
  const text = oidOf(buf, el);
  let arc = 0;
  for (const byte of der.content(buf, el)) {
    if (arc >= 2 ** 24) fail(`OBJECT IDENTIFIER ${text} has an arc too large`);
    arc = arc * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) arc = 0;
  }
  return text;
}
