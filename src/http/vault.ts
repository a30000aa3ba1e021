import type { Context } from 'koa';
import { ValidationError } from '../core/errors.js';

export interface VaultEnvelopeOptions {
  leaseId?: string;
  leaseDuration?: number;
  renewable?: boolean;
  warnings?: readonly string[];
  auth?: unknown;
}

/** The secrets API's response envelope. */
export function vaultResponse(data: unknown, options: VaultEnvelopeOptions = {}) {
  return {
    request_id: '',
    lease_id: options.leaseId ?? '',
    renewable: options.renewable ?? false,
    lease_duration: options.leaseDuration ?? 0,
    data: data ?? null,
    wrap_info: null,
    warnings:
      options.warnings !== undefined && options.warnings.length > 0 ? [...options.warnings] : null,
    auth: options.auth ?? null,
  };
}

/** Send an envelope (or nothing, 204) with `Content-Type: application/json` exactly. */
export function sendVault(ctx: Context, data: unknown, options: VaultEnvelopeOptions = {}): void {
  if (data === undefined && options.warnings === undefined && options.auth === undefined) {
    ctx.status = 204;
    ctx.body = null;
    return;
  }
  ctx.status = 200;
  ctx.body = JSON.stringify({ ...vaultResponse(data, options), request_id: ctx.state.requestId });
  ctx.set('Content-Type', 'application/json');
}

/** Go's strconv.ParseBool, which the reference uses for `?list=`. */
export function parseGoBool(value: string, field: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw new ValidationError(
    `error parsing ${field} parameter: invalid syntax ${JSON.stringify(value)}`,
  );
}

/**
 * Request data for a secrets route: the JSON body for writes, the query string for reads and
 * deletes (the reference treats query parameters as data there).
 */
export function requestData(ctx: Context): Record<string, unknown> {
  const body = ctx.request.body;
  if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) {
    throw new ValidationError('request body must be a JSON object');
  }
  const query: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(ctx.query)) {
    if (k === 'list') continue;
    query[k] = Array.isArray(v) ? v[v.length - 1] : v;
  }
  return { ...query, ...(body as Record<string, unknown> | undefined) };
}
