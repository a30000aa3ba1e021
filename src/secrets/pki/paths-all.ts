import { declarePath, field, type PathSchema } from '../fields.js';
import { DIRECTORY_PREFIXES } from './acme/directory.js';
import * as P from './paths.js';
import { ROLE } from './paths-role.js';

/** Paths that take no fields but their own segments. */
const plain = (
  pattern: string,
  summary: string,
  operations: PathSchema['operations'],
): PathSchema => {
  const names = [...pattern.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  return declarePath({
    pattern,
    summary,
    operations,
    fields: Object.fromEntries(
      names.map((n) => [
        n,
        field.string(`The ${n.replace('_', ' ')} in the path`, { required: true }),
      ]),
    ),
  });
};

/** Every path of the engine, in the order the OpenAPI document lists them. */
export const PKI_PATHS: readonly PathSchema[] = [
  ROLE,
  plain('roles', 'List roles', ['list']),
  P.ISSUE,
  P.ISSUER_ISSUE,
  P.SIGN,
  P.ISSUER_SIGN,
  P.SIGN_VERBATIM,
  P.SIGN_VERBATIM_ROLE,
  P.ISSUER_SIGN_VERBATIM,
  P.ISSUER_SIGN_VERBATIM_ROLE,
  P.ROOT_GENERATE,
  declarePath({ ...P.ROOT_GENERATE, pattern: 'issuers/generate/root/:type' }),
  declarePath({
    ...P.ROOT_GENERATE,
    pattern: 'root/rotate/:type',
    summary: 'Generate a new root whose issuer is named next unless named',
  }),
  P.INTERMEDIATE_GENERATE,
  declarePath({ ...P.INTERMEDIATE_GENERATE, pattern: 'issuers/generate/intermediate/:type' }),
  P.CROSS_SIGN,
  P.SIGN_INTERMEDIATE,
  P.ISSUER_SIGN_INTERMEDIATE,
  P.SIGN_SELF_ISSUED,
  P.ISSUER_SIGN_SELF_ISSUED,
  P.REVOKE_PATH,
  P.REVOKE_WITH_KEY,
  P.CONFIG_CA,
  P.IMPORT_BUNDLE,
  P.IMPORT_CERT,
  P.SET_SIGNED,
  plain('issuers', 'List issuers', ['list']),
  P.ISSUER,
  P.ISSUER_REVOKE,
  P.CONFIG_ISSUERS,
  P.ROOT_REPLACE,
  plain('root', 'Delete every issuer and key', ['delete']),
  P.KEYS_GENERATE,
  P.KEYS_IMPORT,
  plain('keys', 'List keys', ['list']),
  P.KEY,
  P.CONFIG_KEYS,
  P.CONFIG_URLS,
  P.CONFIG_CRL,
  plain('crl/rotate', 'Rebuild every CRL', ['read']),
  plain('crl/rotate-delta', 'Rebuild every delta CRL', ['read']),
  P.TIDY_PATH,
  plain('tidy-status', 'Status of the last tidy', ['read']),
  plain('tidy-cancel', 'Cancel a running tidy', ['update']),
  P.AUTO_TIDY,
  plain('ca', 'The default issuer certificate (DER)', ['read']),
  plain('ca/pem', 'The default issuer certificate (PEM)', ['read']),
  plain('ca_chain', 'The default issuer chain (PEM)', ['read']),
  plain('cert/:serial', 'A certificate by serial (ca, ca_chain, crl too)', ['read']),
  plain('cert/:serial/raw', 'A certificate by serial (DER)', ['read']),
  plain('cert/:serial/raw/pem', 'A certificate by serial (PEM)', ['read']),
  plain('certs', 'List certificate serials', ['list']),
  plain('certs/revoked', 'List revoked certificate serials', ['list']),
  plain('crl', 'The default issuer CRL (DER)', ['read']),
  plain('crl/pem', 'The default issuer CRL (PEM)', ['read']),
  plain('crl/delta', 'The default issuer delta CRL (DER)', ['read']),
  plain('crl/delta/pem', 'The default issuer delta CRL (PEM)', ['read']),
  plain('issuer/:ref/json', 'An issuer certificate and chain', ['read']),
  plain('issuer/:ref/der', 'An issuer certificate (DER)', ['read']),
  plain('issuer/:ref/pem', 'An issuer certificate (PEM)', ['read']),
  plain('issuer/:ref/crl', 'An issuer CRL', ['read']),
  plain('issuer/:ref/crl/der', 'An issuer CRL (DER)', ['read']),
  plain('issuer/:ref/crl/pem', 'An issuer CRL (PEM)', ['read']),
  plain('issuer/:ref/crl/delta', 'An issuer delta CRL', ['read']),
  plain('issuer/:ref/crl/delta/der', 'An issuer delta CRL (DER)', ['read']),
  plain('issuer/:ref/crl/delta/pem', 'An issuer delta CRL (PEM)', ['read']),
  plain('ocsp', 'OCSP (POST, DER request)', ['update']),
  plain('ocsp/:req', 'OCSP (GET, base64 request)', ['read']),
  plain('issuer/:ref/ocsp', 'OCSP of one issuer (POST)', ['update']),
  plain('issuer/:ref/ocsp/:req', 'OCSP of one issuer (GET)', ['read']),
  P.CONFIG_CLUSTER,
  P.CONFIG_ACME,
  plain('eab', 'List external account binding keys', ['list']),
  plain('eab/:key_id', 'Delete an external account binding key', ['delete']),
  ...DIRECTORY_PREFIXES.flatMap((prefix) => {
    const at = (p: string) => `${prefix.slice(1)}${prefix ? '/' : ''}acme/${p}`;
    return [
      plain(at('new-eab'), 'Create an external account binding key', ['update']),
      plain(at('directory'), 'ACME directory (RFC 8555)', ['read']),
      plain(at('new-nonce'), 'ACME nonce', ['read']),
      ...['new-account', 'new-order', 'revoke-cert', 'key-change'].map((p) =>
        plain(at(p), `ACME ${p} (a JWS body)`, ['update']),
      ),
      ...[
        'account/:kid',
        'order/:order',
        'order/:order/finalize',
        'order/:order/cert',
        'account/:kid/orders',
        'authorization/:authz',
        'challenge/:authz/:type',
      ].map((p) => plain(at(p), `ACME ${p.replace(/\/:\w+/g, '')} (a JWS body)`, ['update'])),
    ];
  }),
];
