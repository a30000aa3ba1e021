import { domainToASCII } from 'node:url';
import type { Role } from './role.js';

/**
 * `ryanuber/go-glob`: only `*` is special and it matches any run of characters (dots included,
 * possibly empty); a pattern without `*` must equal the subject exactly.
 */
export function glob(pattern: string, subject: string): boolean {
  if (pattern === '') return subject === '';
  if (pattern === '*') return true;
  const parts = pattern.split('*');
  if (parts.length === 1) return subject === pattern;
  const leading = pattern.startsWith('*');
  const trailing = pattern.endsWith('*');
  const end = parts.length - 1;
  let rest = subject;
  for (let i = 0; i < end; i++) {
    const part = parts[i] ?? '';
    const idx = rest.indexOf(part);
    if (i === 0) {
      if (!leading && idx !== 0) return false;
    } else if (idx < 0) {
      return false;
    }
    rest = rest.slice(idx + part.length);
  }
  return trailing || rest.endsWith(parts[end] ?? '');
}

const HOSTNAME =
  /^(\*\.)?(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])\.?$/;
const WILDCARD_LABEL = /^([A-Za-z0-9][A-Za-z0-9-]*)?\*([A-Za-z0-9-]*[A-Za-z0-9])?$/;

/**
 * Strict IDNA to ASCII with the STD3 length limits; undefined when the name cannot convert.
 * (Node's WHATWG converter returns '' on failure.)
 */
export function toAscii(name: string): string | undefined {
  // ASCII names pass through unchanged (and keep their case), as Go's converter leaves them; only
  // non-ASCII names go through the WHATWG converter, which would also misread `a.0` as an IPv4.
  let ascii: string;
  if (/^[\x21-\x7e]*$/.test(name)) {
    if (!/^[A-Za-z0-9.*-]*$/.test(name)) return undefined;
    ascii = name;
  } else {
    ascii = domainToASCII(name);
  }
  if (!ascii) return undefined;
  if (ascii.replace(/\.$/, '').length > 253) return undefined;
  if (
    ascii
      .replace(/\.$/, '')
      .split('.')
      .some((label) => label.length > 63)
  )
    return undefined;
  return ascii;
}

/** True when `name` converts with IDNA and matches the hostname pattern. */
export function isHostname(name: string): boolean {
  const ascii = toAscii(name);
  return ascii !== undefined && HOSTNAME.test(ascii);
}

/**
 * True when `name` can be a DNS SAN: a hostname, or a wildcard whose left-most label is `*`,
 * `*x`, `x*` or `x*y` over a hostname (`f*o.example.com`).
 */
export function isDnsName(name: string): boolean {
  if (!name.includes('*')) return isHostname(name);
  const dot = name.indexOf('.');
  if (dot < 0 || name.split('*').length !== 2) return false;
  const label = name.slice(0, dot);
  return WILDCARD_LABEL.test(label) && isHostname(name.slice(dot + 1));
}

/** The role fields the name check reads. */
export type NamePolicy = Pick<
  Role,
  | 'allow_localhost'
  | 'allowed_domains'
  | 'allow_bare_domains'
  | 'allow_subdomains'
  | 'allow_glob_domains'
  | 'allow_wildcard_certificates'
  | 'allow_any_name'
  | 'enforce_hostnames'
>;

/**
 * Decides one name (a CN, a DNS SAN or an email SAN) exactly as research §1.2 describes the
 * reference's `validateNames`: email split, wildcard shape, hostname enforcement, then any-name,
 * localhost and each allowed domain (bare, subdomain, glob — never combined).
 */
export function nameAllowed(role: NamePolicy, name: string): boolean {
  let reduced = name;
  let emailDomain = '';
  if (name.includes('@')) {
    const parts = name.split('@');
    if (parts.length !== 2) return false;
    reduced = emailDomain = parts[1] ?? '';
  }
  const isWildcard = reduced.includes('*');
  let wildcardLabel = '';
  if (isWildcard) {
    if (!role.allow_wildcard_certificates) return false;
    if (emailDomain) return false;
    if (reduced.split('*').length !== 2) return false;
    const dot = reduced.indexOf('.');
    wildcardLabel = dot < 0 ? reduced : reduced.slice(0, dot);
    if (!wildcardLabel.includes('*')) return false;
    reduced = dot < 0 ? '' : reduced.slice(dot + 1);
  }
  if (role.enforce_hostnames) {
    if (reduced !== '') {
      const ascii = toAscii(reduced);
      if (ascii === undefined || !HOSTNAME.test(ascii)) return false;
    }
    if (isWildcard && !WILDCARD_LABEL.test(wildcardLabel)) return false;
  }
  if (role.allow_any_name) return true;
  if (role.allow_localhost) {
    if (reduced === 'localhost' || reduced === 'localdomain') return true;
    if (
      role.allow_subdomains &&
      (reduced.endsWith('.localhost') || reduced.endsWith('.localdomain'))
    )
      return true;
  }
  const lower = (s: string) => s.toLowerCase();
  for (const domain of role.allowed_domains) {
    if (domain === '') continue;
    if (
      role.allow_bare_domains &&
      (lower(name) === lower(domain) ||
        (emailDomain !== '' && lower(emailDomain) === lower(domain)))
    ) {
      return true;
    }
    if (role.allow_subdomains) {
      // Case-sensitive, as the reference compares it.
      if (reduced.endsWith(`.${domain}`)) return true;
      if (isWildcard && lower(reduced) === lower(domain)) return true;
    }
    if (role.allow_glob_domains && domain.includes('*') && glob(domain, name)) return true;
  }
  return false;
}

/**
 * The `cn_validations` type check: a CN with `@` needs `email`, any other CN needs `hostname`;
 * `disabled` turns every CN check off.
 */
export function commonNameTypeAllowed(role: Pick<Role, 'cn_validations'>, cn: string): boolean {
  if (role.cn_validations.includes('disabled')) return true;
  if (cn.includes('@')) return role.cn_validations.includes('email');
  return role.cn_validations.includes('hostname');
}
