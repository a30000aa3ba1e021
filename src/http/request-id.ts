import { randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import type { Actor, AuditMetadata } from '../core/events.js';

/** A client's `X-Request-Id` worth keeping: up to 128 word characters, dots and dashes. */
const CLIENT_ID = /^[\w.-]{1,128}$/;

/**
 * Every request gets an id Keel makes (answered as `X-Request-Id` and recorded in the audit
 * metadata). A client's own `X-Request-Id` is never used as that id: it is kept apart, as
 * `clientRequestId`, when it is well formed (docs/security.md, "Request ids and names").
 */
export function requestId(): Middleware {
  return async (ctx, next) => {
    ctx.state.requestId = randomUUID();
    const incoming = ctx.get('x-request-id');
    if (CLIENT_ID.test(incoming)) ctx.state.clientRequestId = incoming;
    ctx.set('X-Request-Id', ctx.state.requestId);
    await next();
  };
}

/** Audit metadata for a request made by `actor`. */
export function requestMetadata(ctx: Context, actor: Actor | null): AuditMetadata {
  const client = ctx.state.clientRequestId;
  return {
    actor,
    requestId: ctx.state.requestId,
    remoteAddress: ctx.request.ip || null,
    ...(client === undefined ? {} : { clientRequestId: client }),
  };
}
