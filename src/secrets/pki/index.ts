import type Router from '@koa/router';
import type { ContextModule, Core } from '../../context.js';
import { secretsRouter } from '../request-path.js';
import type { Mount } from '../../http/types.js';
import { Authority } from './authority.js';
import { PkiService } from './service.js';
import { PkiSettings } from './settings.js';
import { PKI_PATHS } from './paths-all.js';
import { systemMetadata } from '../../core/events.js';
import { acmeStreams } from './acme/events.js';
import { streams } from './events.js';
import { CRL_REBUILD, PKI_AUTO_TIDY, PKI_TIDY, pkiProjection } from './projection.js';
import { runTidy, startAutoTidy } from './tidy.js';
import { routerOf, sudoOf, unauthenticatedOf } from '../route.js';
import { rebuildCrl } from './crls.js';
import { fireValidation } from './acme/challenges.js';
import { ACME_UNAUTHENTICATED } from './acme/directory.js';
import { ACME_EXPIRE, ACME_VALIDATE, acmeProjection } from './acme/projection.js';
import { expireOrder } from './acme/authorizations.js';
import { AcmeService } from './acme/service.js';
import type { MountTtls } from '../sys/projection.js';
import { tokenLeasesReactor } from '../sys/index.js';
import { PkiLeases } from './leases.js';
import { sharesLog } from '../../config.js';

/**
 * What relying parties fetch without a token: CA certificates, chains, CRLs, issued certificates
 * and OCSP, the reference's `PathsSpecial.Unauthenticated` (LIST `issuers/` included). The paths
 * Keel serves say so in their declarations; these are the reference's patterns beyond them, kept
 * so that a request there without a token is answered as the reference answers it: `cert/*` is
 * wider than the declared `cert/:serial…` paths, and the unified CRL and OCSP paths (an Enterprise
 * feature Keel does not serve) are a 404 rather than a 403.
 */
const UNAUTHENTICATED_BEYOND_DECLARED: readonly string[] = [
  'cert/*',
  'issuer/+/unified-crl/der',
  'issuer/+/unified-crl/pem',
  'issuer/+/unified-crl',
  'issuer/+/unified-crl/delta/der',
  'issuer/+/unified-crl/delta/pem',
  'issuer/+/unified-crl/delta',
  'unified-crl/delta',
  'unified-crl/delta/pem',
  'unified-crl/pem',
  'unified-crl',
  'unified-ocsp',
  'unified-ocsp/*',
];

/**
 * The certificate authority engine's registry: its read models and, per mount, its routes (one
 * file per path group, as the reference's backend lists its paths).
 */
export function createPkiContext(
  core: Core,
  mountTtls: (mount: string) => MountTtls,
  mounted?: (mount: string) => boolean,
): ContextModule & { authority: Authority; acme: AcmeService; leases: PkiLeases } {
  const authority = new Authority(core, mountTtls, mounted);
  const leases = new PkiLeases(authority);
  const service = new PkiService(authority);
  const settings = new PkiSettings(authority);
  const acme = new AcmeService(
    authority,
    {
      http: core.config.acmeHttpPort,
      tls: core.config.acmeTlsPort,
    },
    core.logger,
  );
  return {
    name: 'pki',
    streams: {
      certificate: streams.cert,
      'acme-account': acmeStreams.account,
      'acme-order': acmeStreams.order,
      'acme-authorization': acmeStreams.authorization,
      'acme-challenge': acmeStreams.challenge,
    },
    authority,
    acme,
    leases,
    projections: [pkiProjection((e) => authority.readModelsChanged(e)), acmeProjection],
    // A CRL build a killed process did not finish is made at start, and on a log other processes
    // share, by the leader once it is old enough not to be another process's build (ADR 0116).
    start: () => void authority.crls.catchUp(systemMetadata('pki-crl-rebuild')),
    lead: () => {
      if (sharesLog(core.config)) void authority.crls.sweep(systemMetadata('pki-crl-rebuild'));
    },
    idle: () => authority.crls.idle(),
    // A revoked or expired token takes the certificates it leased with it.
    reactors: [tokenLeasesReactor('pki-token-leases', (t, m) => leases.revokeForToken(t, m))],
    timers: [
      // A started tidy runs here, off the request; the auto-tidy timer starts one.
      {
        kind: PKI_TIDY,
        async fire(entry) {
          await runTidy(
            authority,
            (entry.data as { mount: string }).mount,
            systemMetadata('pki-tidy'),
          );
        },
      },
      {
        kind: PKI_AUTO_TIDY,
        async fire(entry) {
          const { mount } = entry.data as { mount: string };
          await startAutoTidy(authority, mount, systemMetadata('pki-auto-tidy'));
        },
      },
      {
        kind: CRL_REBUILD,
        // auto_rebuild: rebuild a grace period before expiry; the new CRL moves the schedule row.
        async fire(entry) {
          const { mount, issuerId } = entry.data as { mount: string; issuerId: string };
          await authority.run(() => {
            const issuer = authority.q.issuer(mount, issuerId);
            if (issuer) rebuildCrl(authority, mount, systemMetadata('pki-crl-rebuild'), issuer);
          });
        },
      },
      { kind: ACME_VALIDATE, fire: (entry) => fireValidation(acme, entry) },
      {
        kind: ACME_EXPIRE,
        async fire(entry) {
          const { mount, orderId } = entry.data as { mount: string; orderId: string };
          await expireOrder(acme, mount, orderId);
        },
      },
    ],
    engine: {
      type: 'pki',
      description: 'certificate authority: issuers, roles, issue, sign, revoke, CRLs',
      routes(mount: Mount): Router {
        const scope = { mount, id: mount.accessor, pki: service, authority, settings, acme };
        return routerOf(secretsRouter(), PKI_PATHS, scope);
      },
      // All three made from the declarations (src/secrets/route.ts).
      sudo: sudoOf(PKI_PATHS),
      selfAuthenticated: ACME_UNAUTHENTICATED,
      unauthenticated: [...unauthenticatedOf(PKI_PATHS), ...UNAUTHENTICATED_BEYOND_DECLARED],
      paths: PKI_PATHS,
    },
  };
}
