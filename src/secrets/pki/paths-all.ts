import { DIRECTORY_PREFIXES } from './acme/directory.js';
import { acmeRoutes } from './acme/routes.js';
import {
  CONFIG_ACME_ROUTE,
  CONFIG_CLUSTER_ROUTE,
  EAB_KEY_ROUTE,
  EAB_ROUTE,
  newEabRoute,
} from './acme/settings.js';
import type { PkiRoute } from './routes/common.js';
import * as C from './routes/config.js';
import * as F from './routes/fetch.js';
import * as I from './routes/issue.js';
import * as S from './routes/issuers.js';
import * as K from './routes/keys.js';
import * as O from './routes/ocsp.js';
import { REVOKE_ROUTE, REVOKE_WITH_KEY_ROUTE } from './routes/revoke.js';
import { ROLE_ROUTE, ROLES_ROUTE } from './routes/roles.js';
import * as T from './routes/tidy.js';

/**
 * Every path of the engine with its handlers, in the order the OpenAPI document lists them: the
 * router, the unauthenticated and sudo lists and the OpenAPI document are all made from this list
 * (src/secrets/route.ts). The fields of the larger paths are declared in paths*.ts, their handlers
 * in routes/*.ts.
 */
export const PKI_PATHS: readonly PkiRoute[] = [
  ROLE_ROUTE,
  ROLES_ROUTE,
  I.ISSUE_ROUTE,
  I.ISSUER_ISSUE_ROUTE,
  I.SIGN_ROUTE,
  I.ISSUER_SIGN_ROUTE,
  I.SIGN_VERBATIM_ROUTE,
  I.SIGN_VERBATIM_ROLE_ROUTE,
  I.ISSUER_SIGN_VERBATIM_ROUTE,
  I.ISSUER_SIGN_VERBATIM_ROLE_ROUTE,
  ...S.ROOT_GENERATE_ROUTES,
  S.ROOT_ROTATE_ROUTE,
  ...S.INTERMEDIATE_GENERATE_ROUTES,
  S.CROSS_SIGN_ROUTE,
  I.SIGN_INTERMEDIATE_ROUTE,
  ...I.EXTERNAL_ROUTES,
  C.CONFIG_EXTERNAL_POLICY_ROUTE,
  I.ISSUER_SIGN_INTERMEDIATE_ROUTE,
  I.SIGN_SELF_ISSUED_ROUTE,
  I.ISSUER_SIGN_SELF_ISSUED_ROUTE,
  REVOKE_ROUTE,
  REVOKE_WITH_KEY_ROUTE,
  S.CONFIG_CA_ROUTE,
  S.IMPORT_BUNDLE_ROUTE,
  S.IMPORT_CERT_ROUTE,
  S.SET_SIGNED_ROUTE,
  S.ISSUERS_ROUTE,
  S.ISSUER_ROUTE,
  S.ISSUER_REVOKE_ROUTE,
  S.CONFIG_ISSUERS_ROUTE,
  S.ROOT_REPLACE_ROUTE,
  S.ROOT_ROUTE,
  K.KEYS_GENERATE_ROUTE,
  K.KEYS_IMPORT_ROUTE,
  K.KEYS_ROUTE,
  K.KEY_ROUTE,
  K.CONFIG_KEYS_ROUTE,
  C.CONFIG_URLS_ROUTE,
  C.CONFIG_CRL_ROUTE,
  C.CRL_ROTATE_ROUTE,
  C.CRL_ROTATE_DELTA_ROUTE,
  T.TIDY_ROUTE,
  T.TIDY_STATUS_ROUTE,
  T.TIDY_CANCEL_ROUTE,
  T.AUTO_TIDY_ROUTE,
  F.CA_ROUTE,
  F.CA_PEM_ROUTE,
  F.CA_CHAIN_ROUTE,
  F.CERT_ROUTE,
  F.CERT_RAW_ROUTE,
  F.CERT_RAW_PEM_ROUTE,
  F.CERTS_ROUTE,
  F.CERTS_DETAILED_ROUTE,
  F.CERTS_REVOKED_ROUTE,
  ...F.DEFAULT_CRL_ROUTES,
  F.ISSUER_JSON_ROUTE,
  F.ISSUER_DER_ROUTE,
  F.ISSUER_PEM_ROUTE,
  ...F.ISSUER_CRL_ROUTES,
  O.OCSP_ROUTE,
  O.OCSP_GET_ROUTE,
  O.ISSUER_OCSP_ROUTE,
  O.ISSUER_OCSP_GET_ROUTE,
  CONFIG_CLUSTER_ROUTE,
  CONFIG_ACME_ROUTE,
  EAB_ROUTE,
  EAB_KEY_ROUTE,
  ...DIRECTORY_PREFIXES.flatMap((prefix) => [newEabRoute(prefix), ...acmeRoutes(prefix)]),
];
