import Router from '@koa/router';
import { KeelError, ValidationError } from '../core/errors.js';
import { multierror } from '../http/errors.js';
import { CONTROL_CHARACTER } from './names.js';

/**
 * The one spelling of a `/v1` request path that routing, the sudo check and the ACL all use
 * (docs/security.md, "Paths and ACL"):
 *
 * - percent-escapes are decoded exactly once (a malformed escape is a 400, as Go's URL parser
 *   answers the reference's clients);
 * - one trailing slash is dropped (a list adds it back for the ACL, as the reference does);
 * - an empty, `.` or `..` segment, or a control character, is not a path Keel serves; but after
 *   an `ocsp/` segment, where the rest is a GET OCSP request's base64, an empty segment or a
 *   trailing slash is kept as it is (a `.` or `..` segment is still refused);
 * - case is kept: routers match it exactly (`pki/ISSUE/web` is not `pki/issue/web`).
 *
 * The result is relative to `/v1/`, decoded, without a trailing slash.
 */

export const unsupportedPath = () => new KeelError('not_found', multierror('unsupported path'));

/** `rawPath` is the request's path as sent, starting with `/v1`. */
export function canonicalPath(rawPath: string): string {
  const rest = rawPath.replace(/^\/v1(?:\/|$)/, '');
  let decoded: string;
  try {
    decoded = decodeURIComponent(rest);
  } catch {
    const bad = /%(?![0-9a-fA-F]{2}).{0,2}/.exec(rest)?.[0];
    throw new ValidationError(
      bad === undefined
        ? 'invalid URL escape: the path is not UTF-8'
        : `invalid URL escape ${JSON.stringify(bad)}`,
    );
  }
  if (CONTROL_CHARACTER.test(decoded)) throw unsupportedPath();
  // An OCSP request sent by GET is base64 after `ocsp/` (RFC 6960 A.1), whose `/` may come
  // doubled or last: that part is data, kept as it is, and the path before it is checked.
  const ocsp = `/${decoded}`.indexOf('/ocsp/');
  const head = ocsp < 0 ? decoded : decoded.slice(0, ocsp + 'ocsp'.length);
  const data = ocsp < 0 ? '' : decoded.slice(ocsp + 'ocsp/'.length);
  const path = data === '' && head.endsWith('/') ? head.slice(0, -1) : head;
  const dots = (s: string) => s === '.' || s === '..';
  if (path !== '' && path.split('/').some((s) => s === '' || dots(s))) throw unsupportedPath();
  // Base64 has no `.`: a dot segment after `ocsp/` is no request, and no path Keel serves either.
  if (data.split('/').some(dots)) throw unsupportedPath();
  return data === '' ? path : `${path}/${data}`;
}

/**
 * The path a router receives for a canonical one: `%` is escaped again so that the router's own
 * decoding of parameters gives back the canonical value, never a second decoding.
 */
export const routerPath = (relative: string): string => `/${relative.replaceAll('%', '%25')}`;

/**
 * Every `/v1` router: case-sensitive and strict about a trailing slash, so it matches exactly
 * the canonical path the ACL was asked about.
 */
export const secretsRouter = (): Router => new Router({ sensitive: true, strict: true });

/**
 * Throws unless a route of the router serves the path and method: 404 `unsupported path` when
 * none matches the path, 405 `unsupported operation` when none takes the method. Taken before
 * the ACL, so that a path is either routed and judged, or refused the same way for every token.
 */
export function ensureRouted(router: Router, path: string, method: string): void {
  const m = router.match(path, method);
  if (m.route) return;
  // Middleware layers (no methods) match every path; only routes make a path supported.
  if (m.path.some((layer) => layer.methods.length > 0))
    throw new KeelError('unsupported', multierror('unsupported operation'));
  throw unsupportedPath();
}
