import type { Context } from 'koa';
import { NotFoundError } from '../../../core/errors.js';
import type { AuditMetadata } from '../../../core/events.js';
import { requestData, sendVault } from '../../../http/vault.js';
import type { Mount } from '../../../http/types.js';
import { secretsMetadata } from '../../surface.js';
import { body, type FieldData, type Fields, type PathSchema } from '../../fields.js';
import {
  param,
  route,
  type Handler,
  type PathRoute,
  type RouteFlags,
  type Verb,
} from '../../route.js';
import type { Authority } from '../authority.js';
import type { PkiService } from '../service.js';
import type { PkiSettings } from '../settings.js';
import type { AcmeService } from '../acme/service.js';

export { param };

/** What every route file receives: the mount it serves. */
export interface RouteScope {
  mount: Mount;
  /** the key of this mount's rows and streams */
  id: string;
}

/** What every handler of the engine receives: the mount and the engine's services. */
export interface PkiScope extends RouteScope {
  pki: PkiService;
  authority: Authority;
  settings: PkiSettings;
  acme: AcmeService;
}

/** A declared path of the engine with its handlers (src/secrets/route.ts). */
export type PkiRoute = PathRoute<PkiScope>;

/** Declares the handlers of a path of the engine. */
export const pkiRoute = <F extends Fields>(
  schema: PathSchema<F>,
  handlers: Readonly<Partial<Record<Verb, Handler<PkiScope, F>>>>,
  flags?: RouteFlags,
): PkiRoute => route(schema, handlers, flags);

/** The request's data (JSON body over query) as a plain object. */
export const input = (ctx: Context): Record<string, unknown> => body(requestData(ctx));

/** Sends a result with its warnings, then the reference's warnings about the request's fields. */
export function reply(
  ctx: Context,
  d: FieldData<Fields>,
  data: unknown,
  warnings: readonly string[] = [],
  /** a certificate's lease (`generate_lease`): not renewable, it ends with the certificate */
  lease?: { id: string; duration: number },
): void {
  send(ctx, data, [...warnings, ...d.warnings], lease);
}

/** Audit metadata of the request. */
export const meta = (ctx: Context): AuditMetadata => secretsMetadata(ctx);

/** Sends a Vault envelope with the given data and warnings (and a certificate's lease). */
export function send(
  ctx: Context,
  data: unknown,
  warnings: readonly string[] = [],
  lease?: { id: string; duration: number },
): void {
  sendVault(ctx, data, {
    ...(warnings.length > 0 ? { warnings } : {}),
    ...(lease === undefined ? {} : { leaseId: lease.id, leaseDuration: lease.duration }),
  });
}

/** A LIST answer; an empty list is 404 `{"errors":[]}` as the reference answers it. */
export function sendKeys(
  ctx: Context,
  keys: readonly string[],
  keyInfo?: Record<string, unknown>,
): void {
  if (keys.length === 0) throw new NotFoundError('');
  send(ctx, keyInfo ? { keys, key_info: keyInfo } : { keys });
}

/** A raw (non-JSON) body; nothing to send is 204 with an empty body, as the reference does. */
export function sendRaw(
  ctx: Context,
  bytes: Buffer | string | undefined,
  contentType: string,
): void {
  if (bytes === undefined || bytes.length === 0) {
    ctx.status = 204;
    ctx.body = null;
    return;
  }
  ctx.status = 200;
  ctx.body = bytes;
  ctx.set('Content-Type', contentType);
}
