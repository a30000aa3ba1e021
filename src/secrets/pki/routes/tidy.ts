import type Router from '@koa/router';
import type { Context } from 'koa';
import { ValidationError } from '../../../core/errors.js';
import type { Authority } from '../authority.js';
import type { AutoTidyConfig, TidyParams } from '../events.js';
import type { FieldData } from '../../fields.js';
import { NOT_RUN_TIDY, type TIDY } from '../paths-fields.js';
import { AUTO_TIDY, TIDY_PATH } from '../paths.js';
import {
  autoTidyConfig,
  cancelTidy,
  configureAutoTidy,
  startTidy,
  tidyStatusView,
} from '../tidy.js';
import { fields, meta, reply, send, type RouteScope } from './common.js';

type TidyFields = FieldData<typeof TIDY>;

/** Tidy operations the reference has and Keel does not run: named in a warning when set. */
const notRun = (b: TidyFields): string[] =>
  (Object.keys(NOT_RUN_TIDY) as (keyof typeof NOT_RUN_TIDY)[])
    .filter((f) => b.get(f))
    .map((f) => `${f} is not run by Keel; the operation is ignored`);

function safetyBuffer(b: TidyFields, fallback: number): number {
  const s = b.get('safety_buffer') ?? fallback;
  if (s <= 0) throw new ValidationError('safety_buffer must be greater than zero');
  return s;
}

/**
 * `tidy` (202, the work runs off the request when the schedule fires), `tidy-status`,
 * `tidy-cancel` and `config/auto-tidy`.
 */
export function tidyRoutes(r: Router, authority: Authority, { id }: RouteScope): void {
  const accepted = (ctx: Context, warnings: readonly string[]) => {
    ctx.status = 202;
    ctx.body = JSON.stringify({
      request_id: ctx.state.requestId,
      lease_id: '',
      renewable: false,
      lease_duration: 0,
      data: null,
      wrap_info: null,
      warnings,
      auth: null,
    });
    ctx.set('Content-Type', 'application/json');
  };

  r.post('/tidy', async (ctx) => {
    const b = fields(ctx, TIDY_PATH);
    const params: TidyParams = {
      safetyBuffer: safetyBuffer(b, 72 * 3600),
      tidyCertStore: b.get('tidy_cert_store') ?? false,
      tidyRevokedCerts: b.get('tidy_revoked_certs') ?? false,
    };
    if (!params.tidyCertStore && !params.tidyRevokedCerts)
      return accepted(ctx, [
        'Manual tidy requested but no tidy operations were set. Enable at least one tidy operation to be run (tidy_cert_store or tidy_revoked_certs).',
        ...notRun(b),
        ...b.warnings,
      ]);
    const started = await startTidy(authority, id, meta(ctx), params, false);
    accepted(ctx, [
      started
        ? "Tidy operation successfully started. Any information from the operation will be printed to Keel's server logs."
        : 'Tidy operation already in progress.',
      ...notRun(b),
      ...b.warnings,
    ]);
  });

  r.get('/tidy-status', (ctx) => send(ctx, tidyStatusView(authority, id)));

  r.post('/tidy-cancel', async (ctx) => {
    if (!(await cancelTidy(authority, id, meta(ctx))))
      return send(ctx, null, ['Tidy operation cannot be cancelled as none is currently running.']);
    send(ctx, tidyStatusView(authority, id));
  });

  r.get('/config/auto-tidy', (ctx) => send(ctx, autoTidyConfig(authority, id)));
  r.post('/config/auto-tidy', async (ctx) => {
    const b = fields(ctx, AUTO_TIDY);
    const next = await configureAutoTidy(authority, id, meta(ctx), (c) => {
      const next: AutoTidyConfig = {
        enabled: b.get('enabled') ?? c.enabled,
        interval_duration: b.get('interval_duration') ?? c.interval_duration,
        safety_buffer: safetyBuffer(b, c.safety_buffer),
        tidy_cert_store: b.get('tidy_cert_store') ?? c.tidy_cert_store,
        tidy_revoked_certs: b.get('tidy_revoked_certs') ?? c.tidy_revoked_certs,
      };
      if (next.interval_duration <= 0)
        throw new ValidationError('interval_duration must be greater than zero');
      if (next.enabled && !next.tidy_cert_store && !next.tidy_revoked_certs)
        throw new ValidationError(
          'Auto-tidy enabled but no tidy operations were requested. Enable at least one tidy operation to be run (tidy_cert_store or tidy_revoked_certs).',
        );
      return next;
    });
    reply(ctx, b, next, notRun(b));
  });
}
