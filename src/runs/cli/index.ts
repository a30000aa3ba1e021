import type { Middleware } from 'koa';
import type { Core } from '../../context.js';
import type { IdentityContext } from '../identity/index.js';
import type { RunsModel } from '../model.js';
import { OidcIssuer } from '../oidc/keys.js';
import { createLoginCodes } from './login-codes.js';
import { terraformCli } from './routes.js';

export { DISCOVERY } from './routes.js';
export type { LoginCodeEvent } from './login-codes.js';

/** Service discovery, `/app/…` addresses and `terraform login`: what the CLI needs besides `/api/v2`. */
export function createTerraformCli(
  core: Core,
  identity: IdentityContext,
  model: RunsModel,
): Middleware {
  const oidc = new OidcIssuer(core);
  const cli = terraformCli({
    logger: core.logger,
    bodyLimitBytes: core.config.bodyLimitBytes,
    principal: identity.principal,
    codes: createLoginCodes(core, identity.commands),
    workspaceId: (organization, name) => model.workspaces.byName(organization, name)?.id,
  });
  // Keel's OIDC issuer documents: what a relying party (Vault's JWT auth, a cloud's OIDC
  // federation) reads to check a workload identity token.
  return async (ctx, next) => {
    const read = ctx.method === 'GET' || ctx.method === 'HEAD';
    if (read && ctx.path === '/.well-known/openid-configuration') {
      ctx.body = oidc.discovery();
      return;
    }
    if (read && ctx.path === '/.well-known/jwks') {
      // A relying party is set up before any run has a token: the first read makes the first key.
      await oidc.ensureKey();
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = oidc.jwks();
      return;
    }
    await cli(ctx, next);
  };
}
