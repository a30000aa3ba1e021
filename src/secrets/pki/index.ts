import type Router from '@koa/router';
import type { ContextModule, Core } from '../../context.js';
import { secretsRouter } from '../request-path.js';
import type { Mount } from '../../http/types.js';
import { Authority } from './authority.js';
import { systemMetadata } from '../../core/events.js';
import { CRL_REBUILD, pkiProjection } from './projection.js';
import { configRoutes } from './routes/config.js';
import { fetchRoutes } from './routes/fetch.js';
import { issueRoutes } from './routes/issue.js';
import { issuerRoutes } from './routes/issuers.js';
import { keyRoutes } from './routes/keys.js';
import { revokeRoutes } from './routes/revoke.js';
import { roleRoutes } from './routes/roles.js';
import { rebuildCrl } from './crls.js';
import { fireValidation } from './acme/challenges.js';
import { ACME_UNAUTHENTICATED } from './acme/directory.js';
import { ACME_EXPIRE, ACME_VALIDATE, acmeProjection } from './acme/projection.js';
import { expireOrder } from './acme/authorizations.js';
import { acmeRoutes } from './acme/routes.js';
import { AcmeService } from './acme/service.js';
import { acmeSettingsRoutes } from './acme/settings.js';

/**
 * The certificate authority engine's registry: its read models and, per mount, its routes (one
 * file per path group, as the reference's backend lists its paths).
 */
export function createPkiContext(
  core: Core,
): ContextModule & { authority: Authority; acme: AcmeService } {
  const authority = new Authority(core);
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
    authority,
    acme,
    projections: [pkiProjection(() => authority.readModelsChanged()), acmeProjection],
    timers: [
      {
        kind: CRL_REBUILD,
        // auto_rebuild: rebuild a grace period before expiry; the new CRL moves the schedule row.
        async fire(entry) {
          const { mount, issuerId } = entry.data as { mount: string; issuerId: string };
          const issuer = authority.q.issuer(mount, issuerId);
          if (issuer) rebuildCrl(authority, mount, systemMetadata('pki-crl-rebuild'), issuer);
        },
      },
      { kind: ACME_VALIDATE, fire: (entry) => fireValidation(acme, entry) },
      {
        kind: ACME_EXPIRE,
        async fire(entry) {
          const { mount, orderId } = entry.data as { mount: string; orderId: string };
          expireOrder(acme, mount, orderId);
        },
      },
    ],
    engine: {
      type: 'pki',
      description: 'certificate authority: issuers, roles, issue, sign, revoke, CRLs',
      routes(mount: Mount): Router {
        const router = secretsRouter();
        const scope = { mount, id: mount.accessor };
        roleRoutes(router, authority, scope);
        issueRoutes(router, authority, scope);
        issuerRoutes(router, authority, scope);
        keyRoutes(router, authority, scope);
        configRoutes(router, authority, scope);
        revokeRoutes(router, authority, scope);
        fetchRoutes(router, authority, scope);
        acmeSettingsRoutes(router, acme, scope);
        acmeRoutes(router, acme, scope);
        return router;
      },
      // Relative paths that need the sudo capability besides their own (as in the reference).
      sudo: [/^root\/sign-self-issued$/, /^root$/],
      unauthenticated: ACME_UNAUTHENTICATED,
    },
  };
}
