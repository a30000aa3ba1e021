import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Authority } from '../authority.js';
import { answerOcsp } from '../ocsp.js';
import type { IssuerRow } from '../projection.js';
import { param, type RouteScope } from './common.js';

/** The request of `GET …/ocsp/<base64 DER, url-encoded>`: everything after `/ocsp/`. */
function getRequest(ctx: Context): Buffer {
  const at = ctx.path.indexOf('/ocsp/');
  const encoded = at < 0 ? '' : ctx.path.slice(at + '/ocsp/'.length);
  let text = encoded;
  try {
    text = decodeURIComponent(encoded);
  } catch {
    // not percent-encoded: the base64 as it came
  }
  return Buffer.from(text, 'base64');
}

/**
 * The OCSP responder (RFC 6960): `GET ocsp/<request>` and `POST ocsp`
 * (`application/ocsp-request`), both without a token as the reference serves them, and per issuer
 * `issuer/:ref/ocsp` (Keel's; it needs a token, the reference having no such path).
 */
export function ocspRoutes(r: Router, authority: Authority, { id }: RouteScope): void {
  const send = (ctx: Context, request: Buffer, only?: IssuerRow) => {
    const answer = answerOcsp(authority, id, request, only);
    ctx.status = answer.status;
    ctx.body = answer.body;
    ctx.set('Content-Type', 'application/ocsp-response');
  };
  const issuer = (ctx: Context & { params: Record<string, string> }) =>
    authority.resolveIssuer(id, param(ctx, 'ref'));
  r.get('/ocsp/*req', (ctx) => send(ctx, getRequest(ctx)));
  r.post('/ocsp', (ctx) => send(ctx, ctx.request.rawBody ?? Buffer.alloc(0)));
  r.get('/issuer/:ref/ocsp/*req', (ctx) => send(ctx, getRequest(ctx), issuer(ctx)));
  r.post('/issuer/:ref/ocsp', (ctx) =>
    send(ctx, ctx.request.rawBody ?? Buffer.alloc(0), issuer(ctx)),
  );
}
