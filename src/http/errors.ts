import type { Context, Next } from 'koa';
import type { ErrorCode } from '../core/errors.js';
import { isKeelError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { STORE_UNAVAILABLE } from '../core/store/port.js';

/** One status map per surface (style rule 8). */
const JSONAPI_STATUS: Record<ErrorCode, number> = {
  validation: 422,
  unauthenticated: 401,
  forbidden: 404, // a valid token without access sees nothing
  not_found: 404,
  conflict: 409,
  illegal_transition: 409,
  concurrency: 409,
  unsupported: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
};

const VAULT_STATUS: Record<ErrorCode, number> = {
  validation: 400,
  unauthenticated: 403, // the reference never answers 401
  forbidden: 403,
  not_found: 404,
  conflict: 400,
  illegal_transition: 400,
  concurrency: 400,
  unsupported: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
};

const TITLES: Record<number, string> = {
  400: 'bad request',
  401: 'unauthorized',
  404: 'not found',
  405: 'method not allowed',
  409: 'conflict',
  413: 'payload too large',
  415: 'unsupported media type',
  422: 'invalid attribute',
  429: 'Too many requests',
  500: 'internal error',
};

/** JSON:API errors: `{"errors":[{"status":"409","title":"…","detail":"…"}]}`. */
export function jsonApiErrors(logger: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        renderJsonApi(ctx, 404, 'not found', `no route for ${ctx.method} ${ctx.path}`);
      } else if (ctx.status === 405 && ctx.body === undefined) {
        renderJsonApi(
          ctx,
          405,
          'method not allowed',
          `${ctx.method} is not allowed on ${ctx.path}`,
        );
      }
    } catch (err) {
      if (isKeelError(err)) {
        const status = err.details.status ?? JSONAPI_STATUS[err.code];
        for (const [k, v] of Object.entries(err.details.headers ?? {})) ctx.set(k, v);
        renderJsonApi(ctx, status, err.details.title ?? TITLES[status] ?? 'error', err.message);
        return;
      }
      if (storeUnavailable(err)) {
        ctx.set('Retry-After', '1');
        renderJsonApi(ctx, 503, 'service unavailable', STORE_UNAVAILABLE_MESSAGE);
        return;
      }
      logger.error({ err, requestId: ctx.state.requestId }, 'unhandled error');
      renderJsonApi(ctx, 500, 'internal error', `request ${ctx.state.requestId} failed`);
    }
  };
}

/**
 * The database is out of reach (a PostgreSQL store failing over or restarting, ADR 0081): 503,
 * to be asked again shortly. A write whose commit met the loss may or may not have landed, as
 * with any request whose answer is lost.
 */
const storeUnavailable = (err: unknown): boolean =>
  (err as { code?: unknown } | null)?.code === STORE_UNAVAILABLE;

const STORE_UNAVAILABLE_MESSAGE = 'the store is out of reach; try again shortly';

function renderJsonApi(ctx: Context, status: number, title: string, detail: string): void {
  ctx.status = status;
  ctx.body = JSON.stringify({ errors: [{ status: String(status), title, detail }] });
  ctx.set('Content-Type', 'application/vnd.api+json');
}

/** Secrets API errors: `{"errors":["…"]}` with `Content-Type: application/json` exactly. */
export function vaultErrors(logger: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) renderVault(ctx, 404, []);
      else if (ctx.status === 405 && ctx.body === undefined) {
        renderVault(ctx, 405, [multierror('unsupported operation')]);
      }
    } catch (err) {
      if (isKeelError(err)) {
        const status = err.details.status ?? VAULT_STATUS[err.code];
        for (const [k, v] of Object.entries(err.details.headers ?? {})) ctx.set(k, v);
        // A missing resource is an empty error list, as the reference answers.
        renderVault(
          ctx,
          status,
          err.code === 'not_found' && err.message === '' ? [] : [err.message],
        );
        return;
      }
      if (storeUnavailable(err)) {
        ctx.set('Retry-After', '1');
        renderVault(ctx, 503, [STORE_UNAVAILABLE_MESSAGE]);
        return;
      }
      logger.error({ err, requestId: ctx.state.requestId }, 'unhandled error');
      renderVault(ctx, 500, [multierror(`internal error (request ${ctx.state.requestId})`)]);
    }
  };
}

/** The reference wraps plain errors the way go-multierror prints one. */
export const multierror = (...messages: string[]): string =>
  `${messages.length} error${messages.length === 1 ? '' : 's'} occurred:\n${messages.map((m) => `\t* ${m}\n`).join('')}\n`;

export function renderVault(ctx: Context, status: number, errors: string[]): void {
  ctx.status = status;
  ctx.body = JSON.stringify({ errors });
  ctx.set('Content-Type', 'application/json');
}
