import { field } from '../fields.js';

/** Field groups the certificate authority's paths share (declared once, spread into paths). */

export const FORMAT = {
  format: field.string('Format of the returned certificate data', {
    default: 'pem',
  }),
};

export const PRIVATE_KEY_FORMAT = {
  private_key_format: field.string('Format of a returned private key (der means PEM of DER)', {
    default: 'der',
  }),
};

export const REQUESTED_NAMES = {
  common_name: field.string('The requested common name'),
  alt_names: field.commaSlice('Requested DNS and email Subject Alternative Names'),
  ip_sans: field.commaSlice('Requested IP Subject Alternative Names'),
  uri_sans: field.commaSlice('Requested URI Subject Alternative Names'),
  other_sans: field.commaSlice('Requested other SANs, as <oid>;UTF8:<value>'),
  exclude_cn_from_sans: field.bool('Leave the common name out of the DNS or email SANs', {
    default: false,
  }),
};

export const VALIDITY = {
  ttl: field.duration('Requested time to live; capped by the role and mount maximum'),
  not_after: field.string('Requested notAfter as an RFC 3339 time (instead of ttl)'),
};

export const LEAF_REQUEST = {
  ...REQUESTED_NAMES,
  ...VALIDITY,
  ...FORMAT,
  user_ids: field.commaSlice('Requested user IDs (OID 0.9.2342.19200300.100.1.1) in the subject'),
  serial_number: field.string('The subject serialNumber attribute (not the certificate serial)'),
  remove_roots_from_chain: field.bool('Leave self-signed roots out of ca_chain', {
    default: false,
  }),
  cert_metadata: field.string('Metadata to store with the certificate (refused by Keel)'),
};

export const SUBJECT = {
  country: field.commaSlice('Country (C) of the subject'),
  province: field.commaSlice('Province or state (ST) of the subject'),
  locality: field.commaSlice('Locality (L) of the subject'),
  street_address: field.commaSlice('Street address of the subject'),
  postal_code: field.commaSlice('Postal code of the subject'),
  organization: field.commaSlice('Organization (O) of the subject'),
  ou: field.commaSlice('Organizational unit (OU) of the subject'),
  serial_number: field.string('The subject serialNumber attribute'),
};

export const NAME_CONSTRAINTS = {
  permitted_dns_domains: field.commaSlice('Permitted DNS name constraints'),
  excluded_dns_domains: field.commaSlice('Excluded DNS name constraints'),
  permitted_ip_ranges: field.commaSlice('Permitted IP range (CIDR) name constraints'),
  excluded_ip_ranges: field.commaSlice('Excluded IP range (CIDR) name constraints'),
  permitted_email_addresses: field.commaSlice('Permitted email name constraints'),
  excluded_email_addresses: field.commaSlice('Excluded email name constraints'),
  permitted_uri_domains: field.commaSlice('Permitted URI domain name constraints'),
  excluded_uri_domains: field.commaSlice('Excluded URI domain name constraints'),
};

export const SIGNATURE = {
  signature_bits: field.int('Hash size of the signature (0: the key type default)', {
    default: 0,
  }),
  use_pss: field.bool('Sign with RSA-PSS instead of PKCS#1 v1.5', { default: false }),
};

export const CA_CERTIFICATE = {
  ...REQUESTED_NAMES,
  ...SUBJECT,
  ...NAME_CONSTRAINTS,
  ...SIGNATURE,
  ...FORMAT,
  ...PRIVATE_KEY_FORMAT,
  key_usage: field.commaSlice('Key usages of the CA certificate'),
  max_path_length: field.int('Maximum path length (-1: no limit)', { default: -1 }),
  not_before_duration: field.duration('How far notBefore is set in the past', { default: 30 }),
};

export const KEY_CHOICE = {
  key_type: field.string('Type of key to generate', {
    default: 'rsa',
  }),
  key_bits: field.int('Size of the key (0: the type default)', { default: 0 }),
  key_name: field.string('Name for the key'),
};

export const GENERATE_TYPE = {
  type: field.string('internal, exported, existing or kms', { required: true }),
};

export const NEW_CA_KEY = {
  ...GENERATE_TYPE,
  ...KEY_CHOICE,
  key_ref: field.string('The key to use with type existing', { default: 'default' }),
};

export const REF = { ref: field.string('Issuer name or ID', { required: true }) };
export const KEY_REF = { ref: field.string('Key name or ID', { required: true }) };
export const ISSUER_REF = {
  issuer_ref: field.string('Issuer name or ID', { required: true }),
};
export const ROLE_NAME = {
  role: field.name('The role to issue under', { required: true }),
};

export const REVOKE = {
  serial_number: field.string('Serial number of the certificate to revoke'),
  certificate: field.string('PEM certificate to revoke (instead of the serial)'),
  reason: field.int('Revocation reason code'),
};

export const URLS = {
  issuing_certificates: field.commaSlice('Authority Information Access issuing certificate URLs'),
  crl_distribution_points: field.commaSlice('CRL distribution point URLs'),
  ocsp_servers: field.commaSlice('OCSP server URLs'),
};

/**
 * Tidy operations of the reference that have nothing to tidy in Keel, with the reason: accepted
 * and named in a warning.
 */
export const NOTHING_TO_TIDY = {
  tidy_revoked_cert_issuer_associations: 'every revocation is recorded with its issuer',
  tidy_move_legacy_ca_bundle: 'it keeps no legacy CA bundle',
  tidy_revocation_queue: 'it has no cross-cluster revocation queue',
  tidy_cross_cluster_revoked_certs: 'it has no cross-cluster revocation queue',
} as const;

/**
 * Tidy operations of the reference that would remove something Keel keeps, with what: a tidy or
 * auto-tidy asking for one is refused.
 */
export const NOT_RUN_TIDY = {
  tidy_expired_issuers: 'an expired issuer is kept until it is deleted',
  tidy_acme: 'ACME accounts and expired orders are kept',
} as const;

const nothing = field.bool('Nothing to tidy in Keel', { default: false });
const refused = field.bool('Not run by Keel: refused', { default: false });
export const TIDY = {
  tidy_revoked_cert_issuer_associations: nothing,
  tidy_move_legacy_ca_bundle: nothing,
  tidy_revocation_queue: nothing,
  tidy_cross_cluster_revoked_certs: nothing,
  tidy_expired_issuers: refused,
  tidy_acme: refused,
  safety_buffer: field.duration('How long past expiry a certificate is kept'),
  tidy_cert_store: field.bool('Remove expired certificates from storage'),
  tidy_revoked_certs: field.bool('Remove expired certificates from the revoked list'),
};
