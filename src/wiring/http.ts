import Koa from 'koa';
import type { Middleware } from 'koa';
import type { Config } from '../config.js';
import type { Core } from '../context.js';
import type { SharedLog } from '../core/shared-log.js';
import { requestId } from '../http/request-id.js';
import { runsSurface } from '../http/runs-surface.js';
import { createTerraformCli } from '../runs/cli/index.js';
import { secretsSurface } from '../secrets/surface.js';
import type { createUi } from '../ui/index.js';
import type { Contexts } from './contexts.js';

/**
 * The HTTP surfaces in the order a request meets them: the embedded cloud, the terraform CLI's
 * addresses, `/api/v2`, `/v1`, the `/ui` page, and a 404 for the rest.
 */
export function httpHandler(
  core: Core,
  config: Config,
  contexts: Contexts,
  options: {
    ui: ReturnType<typeof createUi>;
    shared: SharedLog | undefined;
    leading: () => boolean;
  },
): ReturnType<Koa['callback']> {
  const { clock, logger } = core;
  const { identity, runs, sys, cloud, engines, limits, modules } = contexts;
  const { ui, shared, leading } = options;
  const koa = new Koa({ proxy: false });
  if (shared !== undefined) {
    // Before anything is read: rows remembered before another process's commit are forgotten.
    koa.use((_ctx, next) => {
      const heard = shared.check();
      return heard === undefined ? next() : heard.then(next);
    });
  }
  koa.use(requestId());
  // The cloud reads its own bodies and answers in AWS's dialect; it passes other paths on.
  koa.use(cloud.middleware());
  // Service discovery, `/app/…` addresses and `terraform login` for the terraform CLI.
  koa.use(createTerraformCli(core, identity, runs.model));
  koa.use(
    prefixed(
      '/api/v2',
      runsSurface(
        {
          clock,
          logger,
          bodyLimitBytes: config.bodyLimitBytes,
          rateLimit: config.rateLimit,
          principal: identity.principal,
          routers: modules.flatMap((c) => (c.runsRoutes === undefined ? [] : [c.runsRoutes])),
          publicRouters: modules.flatMap((c) =>
            c.runsPublicRoutes === undefined ? [] : [c.runsPublicRoutes],
          ),
        },
        limits,
      ),
    ),
  );
  koa.use(
    prefixed(
      '/v1',
      secretsSurface({
        core,
        queries: sys.queries,
        sys: sys.routes,
        engines,
        standby: () => !leading(),
      }),
    ),
  );
  koa.use(prefixed('/ui', ui.page));
  // Browsers ask for /favicon.ico at the root; the page's icon answers it. The root itself is
  // the page: a person typing the daemon's address lands on it.
  koa.use(async (ctx, next) => {
    if (ctx.path === '/favicon.ico') ctx.redirect('/ui/favicon.svg');
    else if (ctx.path === '/' && (ctx.method === 'GET' || ctx.method === 'HEAD'))
      ctx.redirect('/ui/');
    else await next();
  });
  koa.use(async (ctx) => {
    ctx.status = 404;
    ctx.body = { errors: [`no route for ${ctx.method} ${ctx.path}`] };
  });
  return koa.callback();
}

function prefixed(prefix: string, middleware: Middleware): Middleware {
  return async (ctx, next) => {
    if (ctx.path === prefix || ctx.path.startsWith(`${prefix}/`)) {
      await middleware(ctx, next);
      return;
    }
    await next();
  };
}
