import type { Context } from 'koa';
import type { ContextModule, Core, SecretsEngine } from '../../context.js';
import { secretsMetadata } from '../surface.js';
import { createSysCommands } from './commands.js';
import type { LeaseProvider } from './leases.js';
import { sysProjection, sysQueries } from './projection.js';
import { sysRoutes } from './paths-all.js';
import type { SysRoute } from './routes.js';
import { tokenExpiryTimer, tokenHierarchy } from './tokens.js';

export type { LeaseProvider, LeaseInfo } from './leases.js';
export { tokenLeasesReactor } from './leases.js';
export type { SecretsTokenRevoked } from './events.js';
export { parseDuration, formatGoDuration } from '../duration.js';

/** Tokens, ACL policies, mounts and leases: the secrets API's system backend. */
export function createSysContext(
  core: Core,
  options: {
    engines: () => ReadonlyMap<string, SecretsEngine>;
    leaseProviders: () => ReadonlyMap<string, LeaseProvider>;
    /** Paths other parts of Keel serve under `sys/` (the audit page's), with their handlers. */
    more: readonly SysRoute[];
  },
) {
  const queries = sysQueries(core.db);
  const commands = createSysCommands(core);
  const hierarchy = tokenHierarchy(core.handler, commands, queries);
  const routes = sysRoutes({
    hierarchy,
    core,
    commands,
    queries,
    engines: options.engines,
    leaseProviders: options.leaseProviders,
    more: options.more,
    metadata: (ctx: Context) => secretsMetadata(ctx),
  });
  const module: ContextModule = {
    name: 'secrets-sys',
    projections: [sysProjection(() => queries.forget())],
    timers: [tokenExpiryTimer(hierarchy)],
  };
  return { module, queries, commands, routes };
}
