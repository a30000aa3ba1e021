import type { RouterContext } from '@koa/router';
import type { Context } from 'koa';
import { segmentsOnly } from '../../fields.js';
import { answerOcsp } from '../ocsp.js';
import type { IssuerRow } from '../projection.js';
import { param, pkiRoute, type PkiScope } from './common.js';

/**
 * The OCSP responder (RFC 6960): `GET ocsp/<request>` and `POST ocsp`
 * (`application/ocsp-request`), both without a token as the reference serves them, and per issuer
 * `issuer/:ref/ocsp` (Keel's; it needs a token, the reference having no such path).
 */

/**
 * The request of `GET …/ocsp/<base64 DER, url-encoded>`: everything after `/ocsp/`, read as the
 * reference reads it (the standard alphabet, padded) and only in the one spelling that encoding
 * gives its bytes. Node's decoder also takes the same bytes without padding, with bits set past
 * the last byte, in the URL-safe alphabet, with spaces or with anything after the padding: one
 * request under many paths, each with an ACL decision of its own. Any other text is no request
 * (the responder answers malformedRequest).
 */
function getRequest(ctx: Context): Buffer {
  const at = ctx.path.indexOf('/ocsp/');
  const encoded = at < 0 ? '' : ctx.path.slice(at + '/ocsp/'.length);
  let text = encoded;
  try {
    text = decodeURIComponent(encoded);
  } catch {
    // not percent-encoded: the base64 as it came
  }
  const der = Buffer.from(text, 'base64');
  return der.toString('base64') === text ? der : Buffer.alloc(0);
}

const postRequest = (ctx: Context) => ctx.request.rawBody ?? Buffer.alloc(0);

async function answer(
  ctx: Context,
  { authority, id }: PkiScope,
  request: Buffer,
  only?: IssuerRow,
): Promise<void> {
  const out = await answerOcsp(authority, id, request, only);
  ctx.status = out.status;
  ctx.body = out.body;
  ctx.set('Content-Type', 'application/ocsp-response');
}

const issuer = (ctx: RouterContext, { authority, id }: PkiScope) =>
  authority.resolveIssuer(id, param(ctx, 'ref'));

export const OCSP_ROUTE = pkiRoute(
  segmentsOnly('ocsp', 'OCSP (POST, DER request)', ['update']),
  { update: (ctx, s) => answer(ctx, s, postRequest(ctx)) },
  { unauthenticated: true },
);
export const OCSP_GET_ROUTE = pkiRoute(
  segmentsOnly('ocsp/*req', 'OCSP (GET, base64 request)', ['read']),
  { read: (ctx, s) => answer(ctx, s, getRequest(ctx)) },
  { unauthenticated: true },
);
export const ISSUER_OCSP_ROUTE = pkiRoute(
  segmentsOnly('issuer/:ref/ocsp', 'OCSP of one issuer (POST)', ['update']),
  { update: (ctx, s) => answer(ctx, s, postRequest(ctx), issuer(ctx, s)) },
);
export const ISSUER_OCSP_GET_ROUTE = pkiRoute(
  segmentsOnly('issuer/:ref/ocsp/*req', 'OCSP of one issuer (GET)', ['read']),
  { read: (ctx, s) => answer(ctx, s, getRequest(ctx), issuer(ctx, s)) },
);
