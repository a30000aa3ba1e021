import type Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import type { Clock } from '../core/clock.js';
import { KeelError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { parseBody, readRawBody } from './body.js';
import { jsonApiErrors } from './errors.js';
import { RateLimiter } from './rate-limit.js';
import { rememberMatches } from './route-match.js';
import type { RunsPrincipal } from './types.js';

export interface RunsSurfaceOptions {
  clock: Clock;
  logger: Logger;
  bodyLimitBytes: number;
  rateLimit: { enabled: boolean; perSecond: number; runListsPerMinute: number };
  principal(token: string): RunsPrincipal | undefined;
  routers: readonly Router[];
  /** Routes that take no token and read their own body (upload and log addresses). */
  publicRouters?: readonly Router[];
}

const JSONAPI = 'application/vnd.api+json';

/**
 * What `/api/v2` says it is, in the reference's headers: the API version, the product name
 * (go-tfe takes any name but the hosted service's for a self-hosted install) and a release in the
 * reference's `vYYYYMM-N` form, the feature level Keel follows.
 */
export const API_VERSION_HEADERS: Readonly<Record<string, string>> = {
  'TFP-API-Version': '2.6',
  'TFP-AppName': 'Keel',
  'X-TFE-Version': 'v202502-1',
};

/** Paths under `/api/v2` that answer without a token. */
const PUBLIC = new Set(['/api/v2/ping']);

/**
 * The per-identity rate limiters of the runs API: one for every request, one for run lists.
 * Routes that list runs add `runListLimit` in front of their handler.
 */
export function createRunsRateLimits(clock: Clock, options: RunsSurfaceOptions['rateLimit']) {
  const general = new RateLimiter(clock, options.perSecond, 1000);
  const runLists = new RateLimiter(clock, options.runListsPerMinute, 60_000);
  const check = (ctx: Context, limiter: RateLimiter) => {
    if (!options.enabled) return;
    const key =
      ctx.state.principal === undefined
        ? `ip:${ctx.request.ip}`
        : `${ctx.state.principal.kind}:${ctx.state.principal.id}`;
    ctx.set('X-RateLimit-Limit', String(limiter.limit));
    const decision = limiter.take(key);
    if (!decision.ok) {
      throw new KeelError('rate_limited', "You have exceeded the API's rate limit.", {
        title: 'Too many requests',
        headers: {
          'X-RateLimit-Reset': decision.resetSeconds.toFixed(3),
          'X-RateLimit-Remaining': '0',
          'Retry-After': String(Math.ceil(decision.resetSeconds)),
        },
      });
    }
  };
  const runListLimit: Middleware = async (ctx, next) => {
    check(ctx, runLists);
    await next();
  };
  return {
    general: (ctx: Context) => check(ctx, general),
    runListLimit,
    generalLimit: general.limit,
  };
}

/** Everything under `/api/v2`: errors, body, token, rate limit, then the context routers. */
export function runsSurface(
  options: RunsSurfaceOptions,
  limits: ReturnType<typeof createRunsRateLimits>,
): Middleware {
  const errors = jsonApiErrors(options.logger);
  // Each request walks the routers in turn until one answers: every router is matched once per
  // request path, so each remembers its matches.
  const dispatch = options.routers.map(rememberMatches).map((r) => ({
    routes: r.routes() as Middleware,
    allowed: r.allowedMethods() as Middleware,
  }));
  const publicDispatch = (options.publicRouters ?? [])
    .map(rememberMatches)
    .map((r) => r.routes() as Middleware);
  return async (ctx: Context, _next: Next) =>
    errors(ctx, async () => {
      ctx.set('X-RateLimit-Limit', String(limits.generalLimit));
      // The reference's version headers on every answer (go-tfe reads them from the ping).
      for (const [name, value] of Object.entries(API_VERSION_HEADERS)) ctx.set(name, value);
      if (ctx.path === '/api/v2/ping' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
        ctx.status = 204;
        return;
      }
      ctx.newRouterPath = ctx.path.slice('/api/v2'.length) || '/';
      for (const routes of publicDispatch) {
        await routes(ctx, async () => undefined);
        if (ctx.status !== 404 || ctx.body !== undefined) return;
      }
      if (!PUBLIC.has(ctx.path)) {
        const bearer = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
        if (bearer === undefined)
          throw new KeelError('unauthenticated', 'missing bearer token', { title: 'unauthorized' });
        const principal = options.principal(bearer);
        if (principal === undefined)
          throw new KeelError('unauthenticated', 'the token is not valid', {
            title: 'unauthorized',
          });
        ctx.state.principal = principal;
      }
      limits.general(ctx);
      if (['POST', 'PATCH', 'PUT', 'DELETE'].includes(ctx.method)) {
        const raw = await readRawBody(ctx, options.bodyLimitBytes);
        ctx.request.rawBody = raw;
        ctx.request.body = parseBody(raw, ctx.get('content-type'), 'jsonapi');
      }
      ctx.newRouterPath = ctx.path.slice('/api/v2'.length) || '/';
      for (const d of dispatch) {
        await d.routes(ctx, async () => undefined);
        if (ctx.status !== 404 || ctx.body !== undefined) break;
      }
      if (ctx.status === 404 && ctx.body === undefined) {
        for (const d of dispatch) {
          await d.allowed(ctx, async () => undefined);
          if ((ctx.status as number) === 405) break;
        }
      }
      if (isPlainJson(ctx.body)) {
        ctx.body = JSON.stringify(ctx.body);
        ctx.set('Content-Type', JSONAPI);
      }
    });
}

/** Route results that are plain objects or arrays are JSON:API documents. */
function isPlainJson(body: unknown): boolean {
  if (body === null || typeof body !== 'object') return false;
  const proto: unknown = Object.getPrototypeOf(body);
  return Array.isArray(body) || proto === Object.prototype || proto === null;
}
