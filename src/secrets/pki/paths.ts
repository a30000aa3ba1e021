import { declarePath, field, type Fields } from '../fields.js';
import {
  CA_CERTIFICATE,
  FORMAT,
  GENERATE_TYPE,
  ISSUER_REF,
  KEY_CHOICE,
  KEY_REF,
  LEAF_REQUEST,
  NEW_CA_KEY,
  PRIVATE_KEY_FORMAT,
  REF,
  REVOKE,
  ROLE_NAME,
  SIGNATURE,
  TIDY,
  URLS,
  VALIDITY,
} from './paths-fields.js';

/**
 * Every path of the certificate authority engine, relative to its mount, with its fields. Routes
 * parse their requests with these (src/secrets/fields.ts), and the OpenAPI document is made from
 * them.
 */

const ISSUE_FIELDS = {
  ...ROLE_NAME,
  ...LEAF_REQUEST,
  ...PRIVATE_KEY_FORMAT,
  key_type: field.string('Key type, when the role allows any'),
  key_bits: field.int('Key size, when the role allows any', { default: 0 }),
};
export const ISSUE = declarePath({
  pattern: 'issue/:role',
  summary: 'Issue a certificate and its private key under a role',
  operations: ['update'],
  fields: ISSUE_FIELDS,
});
export const ISSUER_ISSUE = declarePath({
  ...ISSUE,
  pattern: 'issuer/:issuer_ref/issue/:role',
  fields: { ...ISSUE_FIELDS, ...ISSUER_REF },
});

const CSR = { csr: field.string('PEM certificate signing request') };
const SIGN_FIELDS = { ...ROLE_NAME, ...LEAF_REQUEST, ...PRIVATE_KEY_FORMAT, ...CSR };
export const SIGN = declarePath({
  pattern: 'sign/:role',
  summary: 'Sign a certificate signing request under a role',
  operations: ['update'],
  fields: SIGN_FIELDS,
});
export const ISSUER_SIGN = declarePath({
  ...SIGN,
  pattern: 'issuer/:issuer_ref/sign/:role',
  fields: { ...SIGN_FIELDS, ...ISSUER_REF },
});

const VERBATIM_FIELDS = {
  ...CSR,
  ...VALIDITY,
  ...FORMAT,
  ...SIGNATURE,
  role: field.name('A role whose ttl and issuer apply'),
  key_usage: field.commaSlice('Key usages when the CSR asks for none'),
  ext_key_usage: field.commaSlice('Extended key usages by name when the CSR asks for none'),
  ext_key_usage_oids: field.commaSlice('Extended key usages by OID when the CSR asks for none'),
  user_ids: field.commaSlice('User IDs to add to the subject'),
  enforce_leaf_not_after_behavior: field.bool("Apply the issuer's leaf_not_after_behavior", {
    default: false,
  }),
  remove_roots_from_chain: field.bool('Leave self-signed roots out of ca_chain', {
    default: false,
  }),
  cert_metadata: field.string('Metadata to store with the certificate (refused by Keel)'),
};
export const SIGN_VERBATIM = declarePath({
  pattern: 'sign-verbatim',
  summary: 'Sign a certificate signing request as it is',
  operations: ['update'],
  fields: VERBATIM_FIELDS,
});
export const SIGN_VERBATIM_ROLE = declarePath({ ...SIGN_VERBATIM, pattern: 'sign-verbatim/:role' });
export const ISSUER_SIGN_VERBATIM = declarePath({
  ...SIGN_VERBATIM,
  pattern: 'issuer/:issuer_ref/sign-verbatim',
  fields: { ...VERBATIM_FIELDS, ...ISSUER_REF },
});
export const ISSUER_SIGN_VERBATIM_ROLE = declarePath({
  ...ISSUER_SIGN_VERBATIM,
  pattern: 'issuer/:issuer_ref/sign-verbatim/:role',
});

const ROOT_FIELDS = {
  ...NEW_CA_KEY,
  ...CA_CERTIFICATE,
  ...VALIDITY,
  issuer_name: field.string('Name for the new issuer'),
};
export const ROOT_GENERATE = declarePath({
  pattern: 'root/generate/:type',
  summary: 'Generate a self-signed root CA (and its key)',
  operations: ['update'],
  fields: ROOT_FIELDS,
});
const INTERMEDIATE_FIELDS = {
  ...NEW_CA_KEY,
  ...CA_CERTIFICATE,
  add_basic_constraints: field.bool('Add a CA basic constraints extension to the CSR', {
    default: false,
  }),
};
/** The same fields without the path's `type` segment. */
function withoutType<F extends { type: unknown }>(fields: F): Omit<F, 'type'> {
  const { type: _type, ...rest } = fields;
  return rest;
}
export const INTERMEDIATE_GENERATE = declarePath({
  pattern: 'intermediate/generate/:type',
  summary: 'Generate a key and a CSR for an intermediate CA',
  operations: ['update'],
  fields: INTERMEDIATE_FIELDS,
});
export const CROSS_SIGN = declarePath({
  pattern: 'intermediate/cross-sign',
  summary: 'A CSR for an existing key, for another CA to cross-sign',
  operations: ['update'],
  fields: withoutType(INTERMEDIATE_FIELDS),
});

const SIGN_INTERMEDIATE_FIELDS = {
  ...CSR,
  ...CA_CERTIFICATE,
  ...VALIDITY,
  use_csr_values: field.bool("Take the subject and SANs from the CSR's values", {
    default: false,
  }),
  skid: field.string('Subject key identifier to use (hex)'),
  enforce_leaf_not_after_behavior: VERBATIM_FIELDS.enforce_leaf_not_after_behavior,
};
export const SIGN_INTERMEDIATE = declarePath({
  pattern: 'root/sign-intermediate',
  summary: 'Sign an intermediate CA certificate with the default issuer',
  operations: ['update'],
  fields: SIGN_INTERMEDIATE_FIELDS,
});
export const ISSUER_SIGN_INTERMEDIATE = declarePath({
  ...SIGN_INTERMEDIATE,
  pattern: 'issuer/:issuer_ref/sign-intermediate',
  fields: { ...SIGN_INTERMEDIATE_FIELDS, ...ISSUER_REF },
});
const SELF_ISSUED_FIELDS = {
  certificate: field.string('PEM self-issued certificate to re-sign'),
  require_matching_certificate_algorithms: field.bool(
    "Refuse when the certificate's key type differs from the issuer's",
    { default: false },
  ),
};
export const SIGN_SELF_ISSUED = declarePath({
  pattern: 'root/sign-self-issued',
  summary: 'Re-sign a self-issued CA certificate with the default issuer',
  operations: ['update'],
  fields: SELF_ISSUED_FIELDS,
});
export const ISSUER_SIGN_SELF_ISSUED = declarePath({
  ...SIGN_SELF_ISSUED,
  pattern: 'issuer/:issuer_ref/sign-self-issued',
  fields: { ...SELF_ISSUED_FIELDS, ...ISSUER_REF },
});

export const REVOKE_PATH = declarePath({
  pattern: 'revoke',
  summary: 'Revoke a certificate by serial or PEM',
  operations: ['update'],
  fields: REVOKE,
});
export const REVOKE_WITH_KEY = declarePath({
  pattern: 'revoke-with-key',
  summary: 'Revoke a certificate, proving possession of its private key',
  operations: ['update'],
  fields: { ...REVOKE, private_key: field.string('PEM private key of the certificate') },
});

const BUNDLE = { pem_bundle: field.string('PEM certificates and, where allowed, private keys') };
export const IMPORT_BUNDLE = declarePath({
  pattern: 'issuers/import/bundle',
  summary: 'Import issuers and keys from a PEM bundle',
  operations: ['update'],
  fields: BUNDLE,
});
export const CONFIG_CA = declarePath({ ...IMPORT_BUNDLE, pattern: 'config/ca' });
export const IMPORT_CERT = declarePath({
  ...IMPORT_BUNDLE,
  pattern: 'issuers/import/cert',
  summary: 'Import issuers (no keys) from a PEM bundle',
});
export const SET_SIGNED = declarePath({
  pattern: 'intermediate/set-signed',
  summary: 'Import the signed intermediate certificate',
  operations: ['update'],
  fields: { certificate: field.string('PEM certificate (and chain) of the intermediate') },
});

export const ISSUER = declarePath({
  pattern: 'issuer/:ref',
  summary: 'Read, update (POST replaces, PATCH merges) or delete an issuer',
  operations: ['read', 'update', 'patch', 'delete'],
  fields: {
    ...REF,
    ...URLS,
    issuer_name: field.string('Name of the issuer'),
    leaf_not_after_behavior: field.string(
      'What to do with a leaf that would outlive the issuer',
      {},
    ),
    usage: field.commaSlice('read-only, issuing-certificates, crl-signing, ocsp-signing'),
    manual_chain: field.commaSlice('Issuers (or self) that make up the chain'),
    revocation_signature_algorithm: field.string('Signature algorithm of CRLs and OCSP'),
  },
});
export const ISSUER_REVOKE = declarePath({
  pattern: 'issuer/:ref/revoke',
  summary: 'Revoke an issuer',
  operations: ['update'],
  fields: REF,
});

const DEFAULT_ISSUER = {
  default: field.string('The default issuer (name or ID)'),
  default_follows_latest_issuer: field.bool('A new issuer becomes the default'),
};
export const CONFIG_ISSUERS = declarePath({
  pattern: 'config/issuers',
  summary: 'Read or set the default issuer',
  operations: ['read', 'update'],
  fields: DEFAULT_ISSUER,
});
export const ROOT_REPLACE = declarePath({
  pattern: 'root/replace',
  summary: 'Make an issuer (by default the one named next) the default',
  operations: ['update'],
  fields: DEFAULT_ISSUER,
});

export const KEYS_GENERATE = declarePath({
  pattern: 'keys/generate/:type',
  summary: 'Generate a CA key (internal or exported)',
  operations: ['update'],
  fields: { ...GENERATE_TYPE, ...KEY_CHOICE },
});
export const KEYS_IMPORT = declarePath({
  pattern: 'keys/import',
  summary: 'Import a CA private key',
  operations: ['update'],
  fields: { ...BUNDLE, key_name: KEY_CHOICE.key_name },
});
export const KEY = declarePath({
  pattern: 'key/:ref',
  summary: 'Read, rename or delete a key',
  operations: ['read', 'update', 'patch', 'delete'],
  fields: { ...KEY_REF, key_name: KEY_CHOICE.key_name },
});
export const CONFIG_KEYS = declarePath({
  pattern: 'config/keys',
  summary: 'Read or set the default key',
  operations: ['read', 'update'],
  fields: { default: field.string('The default key (name or ID)') },
});

export const CONFIG_CLUSTER = declarePath({
  pattern: 'config/cluster',
  summary: "Read or set this mount's externally reachable URLs (ACME and AIA)",
  operations: ['read', 'update'],
  fields: {
    path: field.string('URL of this mount as clients reach it'),
    aia_path: field.string('URL of this mount for AIA, CRL and OCSP'),
  },
});
export const CONFIG_ACME = declarePath({
  pattern: 'config/acme',
  summary: 'Read or set the ACME server settings',
  operations: ['read', 'update'],
  fields: {
    enabled: field.bool('Serve ACME'),
    allowed_issuers: field.commaSlice('Issuers ACME may use (* for any)'),
    allowed_roles: field.commaSlice('Roles ACME may use (* for any)'),
    allow_role_ext_key_usage: field.bool("Keep the role's extended key usages"),
    default_directory_policy: field.string('forbid, sign-verbatim or role:<name>'),
    dns_resolver: field.string('DNS resolver for dns-01 (ip[:port])'),
    eab_policy: field.string('not-required, new-account-required or always-required'),
  },
});

export const CONFIG_URLS = declarePath({
  pattern: 'config/urls',
  summary: 'Read or set the URLs written into certificates',
  operations: ['read', 'update'],
  fields: {
    ...URLS,
    delta_crl_distribution_points: field.commaSlice('Delta CRL distribution point URLs'),
  },
});

const crlDuration = (what: string) => field.duration(what);
export const CONFIG_CRL = declarePath({
  pattern: 'config/crl',
  summary: 'Read or set CRL and OCSP settings',
  operations: ['read', 'update'],
  fields: {
    expiry: field.string('How long a CRL is valid (a duration)'),
    disable: field.bool('Disable CRL building'),
    ocsp_disable: field.bool('Disable OCSP responses'),
    ocsp_expiry: crlDuration('How long an OCSP response is valid'),
    auto_rebuild: field.bool('Rebuild CRLs before they expire'),
    auto_rebuild_grace_period: crlDuration('How long before expiry a CRL is rebuilt'),
    enable_delta: field.bool('Build delta CRLs'),
    delta_rebuild_interval: crlDuration('How often a delta CRL is rebuilt'),
    allow_expired_cert_revocation: field.bool('Allow revoking expired certificates'),
    cross_cluster_revocation: field.bool('Edition-restricted; refused when true', {
      default: false,
    }),
    unified_crl: field.bool('Edition-restricted; refused when true', { default: false }),
    unified_crl_on_existing_paths: field.bool('Edition-restricted; refused when true', {
      default: false,
    }),
  },
});

export const TIDY_PATH = declarePath({
  pattern: 'tidy',
  summary: 'Start a tidy of the certificate store (202)',
  operations: ['update'],
  fields: TIDY,
});
export const AUTO_TIDY = declarePath({
  pattern: 'config/auto-tidy',
  summary: 'Read or set the periodic tidy',
  operations: ['read', 'update'],
  fields: {
    ...TIDY,
    enabled: field.bool('Run tidy periodically'),
    interval_duration: field.duration('How often tidy runs'),
  },
});

export type IssueFields = typeof ISSUE_FIELDS;
export type SignFields = typeof SIGN_FIELDS;
export type VerbatimFields = typeof VERBATIM_FIELDS;
export type RootFields = typeof ROOT_FIELDS;
export type IntermediateFields = Omit<typeof INTERMEDIATE_FIELDS, 'type'>;
export type SignIntermediateFields = typeof SIGN_INTERMEDIATE_FIELDS;
export type SelfIssuedFields = typeof SELF_ISSUED_FIELDS;

/**
 * The external-policy paths (`[issuer/:issuer_ref/]external-policy/:op[/:policy]`). Their declared
 * fields are the ones Keel reads itself; every parameter, declared or not, goes to the policy
 * service as sent.
 */
const EXTERNAL_FIELDS = {
  ...FORMAT,
  ...PRIVATE_KEY_FORMAT,
  policy: field.string('The policy the service applies', { default: '' }),
  remove_roots_from_chain: field.bool('Leave self-signed roots out of ca_chain'),
};
/** What every external-policy path declares. */
export type ExternalFields = typeof EXTERNAL_FIELDS;
const EXTERNAL_KEY = {
  key_type: field.string('Key type of the key Keel generates (rsa)'),
  key_bits: field.int('Key size of the key Keel generates', { default: 0 }),
};
const externalPath = <F extends Fields>(pattern: string, summary: string, fields: F) =>
  declarePath({
    pattern,
    summary,
    operations: ['update'],
    fields: { ...EXTERNAL_FIELDS, ...fields },
  });
const ISSUE_SUMMARY =
  'Issue a certificate and its private key as an external policy service decides';
const SIGN_SUMMARY = 'Sign a certificate signing request as an external policy service decides';
const ICA_SUMMARY = 'Sign an intermediate CA request as an external policy service decides';
export const EXTERNAL_ISSUE = externalPath('external-policy/issue', ISSUE_SUMMARY, EXTERNAL_KEY);
export const EXTERNAL_SIGN = externalPath('external-policy/sign', SIGN_SUMMARY, CSR);
export const EXTERNAL_ICA = externalPath('external-policy/sign-intermediate', ICA_SUMMARY, CSR);
export const ISSUER_EXTERNAL_ISSUE = externalPath(
  'issuer/:issuer_ref/external-policy/issue',
  ISSUE_SUMMARY,
  { ...EXTERNAL_KEY, ...ISSUER_REF },
);
export const ISSUER_EXTERNAL_SIGN = externalPath(
  'issuer/:issuer_ref/external-policy/sign',
  SIGN_SUMMARY,
  { ...CSR, ...ISSUER_REF },
);
export const ISSUER_EXTERNAL_ICA = externalPath(
  'issuer/:issuer_ref/external-policy/sign-intermediate',
  ICA_SUMMARY,
  { ...CSR, ...ISSUER_REF },
);
