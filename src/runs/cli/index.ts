import type { Middleware } from 'koa';
import type { Core } from '../../context.js';
import type { IdentityContext } from '../identity/index.js';
import type { RunsModel } from '../model.js';
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
  return terraformCli({
    logger: core.logger,
    bodyLimitBytes: core.config.bodyLimitBytes,
    principal: identity.principal,
    codes: createLoginCodes(core, identity.commands),
    workspaceId: (organization, name) => model.workspaces.byName(organization, name)?.id,
  });
}
