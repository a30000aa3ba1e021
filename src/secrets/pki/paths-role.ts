import { declarePath, field } from '../fields.js';

/** Fields of a role (`roles/:name`), with the defaults a POST starts from. */
export const ROLE_FIELDS = {
  name: field.name('Name of the role', { required: true }),
  ttl: field.duration('Default time to live of issued certificates', { default: 0 }),
  max_ttl: field.duration('Maximum time to live of issued certificates', { default: 0 }),
  allow_localhost: field.bool('Allow localhost as a name', { default: true }),
  allowed_domains: field.commaSlice('Domains names may be in', { default: [] }),
  allowed_domains_template: field.bool('Allowed domains may hold identity templates', {
    default: false,
  }),
  allow_bare_domains: field.bool('Allow the allowed domains themselves', { default: false }),
  allow_subdomains: field.bool('Allow subdomains of the allowed domains', { default: false }),
  allow_glob_domains: field.bool('Allowed domains may hold globs', { default: false }),
  allow_wildcard_certificates: field.bool('Allow wildcard names', { default: true }),
  allow_any_name: field.bool('Allow any name', { default: false }),
  enforce_hostnames: field.bool('Names must be valid hostnames', { default: true }),
  allow_ip_sans: field.bool('Allow IP SANs', { default: true }),
  allowed_ip_sans_cidr: field.commaSlice('CIDR ranges IP SANs must be in', { default: [] }),
  allowed_uri_sans: field.commaSlice('Allowed URI SANs (globs)', { default: [] }),
  allowed_uri_sans_template: field.bool('Allowed URI SANs may hold identity templates', {
    default: false,
  }),
  allowed_other_sans: field.commaSlice('Allowed other SANs, as <oid>;UTF8:<value>', {
    default: [],
  }),
  allowed_serial_numbers: field.commaSlice('Allowed subject serial numbers (globs)', {
    default: [],
  }),
  allowed_user_ids: field.commaSlice('Allowed user IDs (globs)', { default: [] }),
  server_flag: field.bool('Issue with the serverAuth extended key usage', { default: true }),
  client_flag: field.bool('Issue with the clientAuth extended key usage', { default: true }),
  code_signing_flag: field.bool('Issue with the codeSigning extended key usage', {
    default: false,
  }),
  email_protection_flag: field.bool('Issue with the emailProtection extended key usage', {
    default: false,
  }),
  key_type: field.string('Type of key issued or signed', {
    default: 'rsa',
  }),
  key_bits: field.int('Size of the key (0: the type default)', { default: 2048 }),
  signature_bits: field.int('Hash size of the signature (0: the key type default)', {
    default: 256,
  }),
  use_pss: field.bool('Sign with RSA-PSS', { default: false }),
  key_usage: field.commaSlice('Key usages', {
    default: ['DigitalSignature', 'KeyAgreement', 'KeyEncipherment'],
  }),
  ext_key_usage: field.commaSlice('Extended key usages by name', { default: [] }),
  ext_key_usage_oids: field.commaSlice('Extended key usages by OID', { default: [] }),
  use_csr_common_name: field.bool('Take the common name from the CSR when signing', {
    default: true,
  }),
  use_csr_sans: field.bool('Take the SANs from the CSR when signing', { default: true }),
  ou: field.commaSlice('Organizational unit (OU) of issued subjects', { default: [] }),
  organization: field.commaSlice('Organization (O) of issued subjects', { default: [] }),
  country: field.commaSlice('Country (C) of issued subjects', { default: [] }),
  locality: field.commaSlice('Locality (L) of issued subjects', { default: [] }),
  province: field.commaSlice('Province (ST) of issued subjects', { default: [] }),
  street_address: field.commaSlice('Street address of issued subjects', { default: [] }),
  postal_code: field.commaSlice('Postal code of issued subjects', { default: [] }),
  generate_lease: field.bool('Issue certificates with a lease', { default: false }),
  no_store: field.bool('Do not store issued certificates', { default: false }),
  no_store_metadata: field.bool('Do not store certificate metadata', { default: false }),
  require_cn: field.bool('A common name is required', { default: true }),
  cn_validations: field.commaSlice('How the common name is checked: email, hostname, disabled', {
    default: ['email', 'hostname'],
  }),
  policy_identifiers: field.commaSlice('Certificate policy OIDs', { default: [] }),
  basic_constraints_valid_for_non_ca: field.bool('Mark basic constraints valid for leaves', {
    default: false,
  }),
  not_before_duration: field.duration('How far notBefore is set in the past', { default: 30 }),
  not_after: field.string('A fixed notAfter (RFC 3339) for issued certificates', {
    default: '',
  }),
  issuer_ref: field.string('The issuer that signs for this role', { default: 'default' }),
};

export const ROLE = declarePath({
  pattern: 'roles/:name',
  summary: 'Read, write (POST replaces, PATCH merges) or delete a role',
  operations: ['read', 'update', 'patch', 'delete'],
  fields: ROLE_FIELDS,
});
