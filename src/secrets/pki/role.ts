import { ValidationError } from '../../core/errors.js';
import type { FieldData } from '../fields.js';
import type { ROLE_FIELDS } from './paths-role.js';
import { extKeyUsageOid, isOid } from '../../x509/extensions.js';
import { normaliseKeySpec } from '../../x509/keys.js';

/** A role as stored and as read (`GET /roles/:name`), every field of research §1.1. */
export interface Role {
  ttl: number;
  max_ttl: number;
  allow_localhost: boolean;
  allowed_domains: string[];
  allowed_domains_template: boolean;
  allow_bare_domains: boolean;
  allow_subdomains: boolean;
  allow_glob_domains: boolean;
  allow_wildcard_certificates: boolean;
  allow_any_name: boolean;
  enforce_hostnames: boolean;
  allow_ip_sans: boolean;
  allowed_ip_sans_cidr: string[];
  allowed_uri_sans: string[];
  allowed_uri_sans_template: boolean;
  allowed_other_sans: string[];
  allowed_serial_numbers: string[];
  allowed_user_ids: string[];
  server_flag: boolean;
  client_flag: boolean;
  code_signing_flag: boolean;
  email_protection_flag: boolean;
  key_type: 'rsa' | 'ec' | 'ed25519' | 'any';
  key_bits: number;
  signature_bits: number;
  use_pss: boolean;
  key_usage: string[];
  ext_key_usage: string[];
  ext_key_usage_oids: string[];
  use_csr_common_name: boolean;
  use_csr_sans: boolean;
  ou: string[];
  organization: string[];
  country: string[];
  locality: string[];
  province: string[];
  street_address: string[];
  postal_code: string[];
  generate_lease: boolean;
  no_store: boolean;
  no_store_metadata: boolean;
  require_cn: boolean;
  cn_validations: string[];
  policy_identifiers: string[];
  basic_constraints_valid_for_non_ca: boolean;
  not_before_duration: number;
  not_after: string;
  issuer_ref: string;
  allow_token_displayname: boolean;
}

type RoleFields = typeof ROLE_FIELDS;
type FieldOfType<T> = {
  [K in keyof Role & keyof RoleFields]: Role[K] extends T ? K : never;
}[keyof Role & keyof RoleFields];
type BoolField = FieldOfType<boolean>;
type ListField = FieldOfType<string[]>;

const uniq = (xs: readonly string[]) => [...new Set(xs)];

/**
 * Builds a role from a request body over a base (the defaults for POST, which replaces the whole
 * role; the stored role for PATCH). Returns the role and the reference's warnings.
 */
export function roleFromInput(
  input: FieldData<RoleFields>,
  base: Role = defaultRole(),
): { role: Role; warnings: string[] } {
  const warnings: string[] = [];
  // What was sent, else the base's value (POST: the defaults; PATCH: the stored role).
  const pick = <K extends keyof RoleFields & keyof Role>(f: K) =>
    input.sent(f) ? input.get(f) : base[f];
  const b = (f: BoolField) => (input.sent(f) ? input.get(f) : base[f]);
  const l = (f: ListField) => (input.sent(f) ? input.get(f) : base[f]);
  const keyType = pick('key_type');
  if (!['rsa', 'ec', 'ed25519', 'any'].includes(keyType)) {
    throw new ValidationError(
      `unknown key type ${keyType}; must be one of rsa, ec, ed25519 or any`,
    );
  }
  // A changed key type resets the size to its default unless a size is given alongside it.
  const bitsBase = input.sent('key_type') && !input.sent('key_bits') ? 0 : base.key_bits;
  let keyBits = input.sent('key_bits') ? input.get('key_bits') : bitsBase;
  if (keyType !== 'any') keyBits = normaliseKeySpec(keyType, keyBits).bits;
  let signatureBits = input.sent('signature_bits')
    ? input.get('signature_bits')
    : input.sent('key_type')
      ? 0
      : base.signature_bits;
  if (![0, 256, 384, 512].includes(signatureBits)) {
    throw new ValidationError(
      `unsupported signature_bits ${signatureBits}; must be 0, 256, 384 or 512`,
    );
  }
  if (keyType === 'rsa' && signatureBits === 0) signatureBits = 256;
  const ttl = pick('ttl');
  const maxTtl = pick('max_ttl');
  if (maxTtl > 0 && ttl > maxTtl)
    throw new ValidationError('"ttl" value must be less than "max_ttl" value');
  const extKeyUsage = l('ext_key_usage');
  for (const name of extKeyUsage) {
    if (!extKeyUsageOid(name))
      throw new ValidationError(`unknown ext_key_usage ${JSON.stringify(name)}`);
  }
  const extOids = l('ext_key_usage_oids');
  for (const o of extOids) {
    if (!isOid(o))
      throw new ValidationError(
        `"${o}" could not be parsed as a valid oid for an extended key usage`,
      );
  }
  const otherSans = l('allowed_other_sans');
  for (const entry of otherSans) {
    if (entry === '*') continue;
    const semi = entry.indexOf(';');
    const colon = entry.indexOf(':', semi);
    if (
      semi < 0 ||
      colon < 0 ||
      !isOid(entry.slice(0, semi)) ||
      !['utf8', 'utf-8'].includes(entry.slice(semi + 1, colon).toLowerCase())
    ) {
      throw new ValidationError(
        `error parsing allowed_other_sans: invalid entry "${entry}"; expected <oid>;UTF8:<value>`,
      );
    }
  }
  const cnValidations = l('cn_validations');
  for (const v of cnValidations) {
    if (!['email', 'hostname', 'disabled'].includes(v))
      throw new ValidationError(`cn_validations value incorrect: unknown value ${v}`);
  }
  if (cnValidations.includes('disabled') && cnValidations.length > 1) {
    throw new ValidationError('cn_validations value incorrect: "disabled" must be the only value');
  }
  for (const cidr of l('allowed_ip_sans_cidr')) {
    if (!/^[0-9a-fA-F:.]+\/\d+$/.test(cidr))
      throw new ValidationError(`invalid CIDR address in allowed_ip_sans_cidr: ${cidr}`);
  }
  const notAfter = pick('not_after');
  if (notAfter && Number.isNaN(new Date(notAfter).getTime()))
    throw new ValidationError(`invalid not_after ${notAfter}; must be RFC 3339`);
  const noStore = b('no_store');
  let generateLease = b('generate_lease');
  if (noStore && generateLease) {
    generateLease = false;
    warnings.push(
      'mutually exclusive values no_store=true and generate_lease=true were both specified; no_store=true takes priority',
    );
  } else if (generateLease && input.sent('generate_lease')) {
    warnings.push(
      "it is encouraged to disable generate_lease and rely on PKI's native capabilities when possible; this option can cause Keel-wide issues with large numbers of issued certificates",
    );
  }
  const role: Role = {
    ttl,
    max_ttl: maxTtl,
    allow_localhost: b('allow_localhost'),
    allowed_domains: l('allowed_domains'),
    allowed_domains_template: b('allowed_domains_template'),
    allow_bare_domains: b('allow_bare_domains'),
    allow_subdomains: b('allow_subdomains'),
    allow_glob_domains: b('allow_glob_domains'),
    allow_wildcard_certificates: b('allow_wildcard_certificates'),
    allow_any_name: b('allow_any_name'),
    enforce_hostnames: b('enforce_hostnames'),
    allow_ip_sans: b('allow_ip_sans'),
    allowed_ip_sans_cidr: l('allowed_ip_sans_cidr'),
    allowed_uri_sans: l('allowed_uri_sans'),
    allowed_uri_sans_template: b('allowed_uri_sans_template'),
    allowed_other_sans: otherSans,
    allowed_serial_numbers: l('allowed_serial_numbers'),
    allowed_user_ids: l('allowed_user_ids'),
    server_flag: b('server_flag'),
    client_flag: b('client_flag'),
    code_signing_flag: b('code_signing_flag'),
    email_protection_flag: b('email_protection_flag'),
    key_type: keyType as Role['key_type'],
    key_bits: keyBits,
    signature_bits: signatureBits,
    use_pss: b('use_pss'),
    key_usage: l('key_usage'),
    ext_key_usage: extKeyUsage,
    ext_key_usage_oids: extOids,
    use_csr_common_name: b('use_csr_common_name'),
    use_csr_sans: b('use_csr_sans'),
    ou: uniq(l('ou')),
    organization: uniq(l('organization')),
    country: uniq(l('country')),
    locality: uniq(l('locality')),
    province: uniq(l('province')),
    street_address: uniq(l('street_address')),
    postal_code: uniq(l('postal_code')),
    generate_lease: generateLease,
    no_store: noStore,
    no_store_metadata: b('no_store_metadata'),
    require_cn: b('require_cn'),
    cn_validations: cnValidations.length ? cnValidations : ['email', 'hostname'],
    policy_identifiers: l('policy_identifiers'),
    basic_constraints_valid_for_non_ca: b('basic_constraints_valid_for_non_ca'),
    not_before_duration: pick('not_before_duration'),
    not_after: notAfter,
    issuer_ref: pick('issuer_ref') || 'default',
    allow_token_displayname: base.allow_token_displayname,
  };
  for (const p of role.policy_identifiers) {
    if (!isOid(p))
      throw new ValidationError(`invalid policy identifier ${JSON.stringify(p)}; must be an OID`);
  }
  return { role, warnings };
}

/** The defaults of every role field (research §1.1). */
export function defaultRole(): Role {
  return {
    ttl: 0,
    max_ttl: 0,
    allow_localhost: true,
    allowed_domains: [],
    allowed_domains_template: false,
    allow_bare_domains: false,
    allow_subdomains: false,
    allow_glob_domains: false,
    allow_wildcard_certificates: true,
    allow_any_name: false,
    enforce_hostnames: true,
    allow_ip_sans: true,
    allowed_ip_sans_cidr: [],
    allowed_uri_sans: [],
    allowed_uri_sans_template: false,
    allowed_other_sans: [],
    allowed_serial_numbers: [],
    allowed_user_ids: [],
    server_flag: true,
    client_flag: true,
    code_signing_flag: false,
    email_protection_flag: false,
    key_type: 'rsa',
    key_bits: 2048,
    signature_bits: 256,
    use_pss: false,
    key_usage: ['DigitalSignature', 'KeyAgreement', 'KeyEncipherment'],
    ext_key_usage: [],
    ext_key_usage_oids: [],
    use_csr_common_name: true,
    use_csr_sans: true,
    ou: [],
    organization: [],
    country: [],
    locality: [],
    province: [],
    street_address: [],
    postal_code: [],
    generate_lease: false,
    no_store: false,
    no_store_metadata: false,
    require_cn: true,
    cn_validations: ['email', 'hostname'],
    policy_identifiers: [],
    basic_constraints_valid_for_non_ca: false,
    not_before_duration: 30,
    not_after: '',
    issuer_ref: 'default',
    allow_token_displayname: false,
  };
}

/** Compact duration text for role reads (`6h`, `1h30m`, `90s`); the spec shows ttl as a duration string. */
export function durationText(seconds: number): string {
  if (seconds === 0) return '0s';
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}`;
}

/** The wire shape of a role: every field, ttl and max_ttl as duration strings (the spec's choice). */
export function roleToWire(role: Role): Record<string, unknown> {
  return { ...role, ttl: durationText(role.ttl), max_ttl: durationText(role.max_ttl) };
}
