import type { Context } from 'koa';
import { ValidationError } from '../../../core/errors.js';
import type { AutoTidyConfig, TidyParams } from '../events.js';
import { segmentsOnly, type FieldData } from '../../fields.js';
import { NOTHING_TO_TIDY, NOT_RUN_TIDY, type TIDY } from '../paths-fields.js';
import { AUTO_TIDY, TIDY_PATH } from '../paths.js';
import {
  autoTidyConfig,
  cancelTidy,
  configureAutoTidy,
  startTidy,
  tidyStatusView,
} from '../tidy.js';
import { meta, pkiRoute, reply, send } from './common.js';

type TidyFields = FieldData<typeof TIDY>;

/**
 * The reference's tidy operations that Keel does not run: one that would remove what Keel keeps is
 * refused (before anything starts or is stored); one with nothing to tidy in Keel is named in a
 * warning.
 */
const notRun = (b: TidyFields): string[] => {
  for (const [f, reason] of Object.entries(NOT_RUN_TIDY))
    if (b.get(f as keyof typeof NOT_RUN_TIDY))
      throw new ValidationError(`${f} is not run by Keel: ${reason}`);
  return Object.entries(NOTHING_TO_TIDY)
    .filter(([f]) => b.get(f as keyof typeof NOTHING_TO_TIDY))
    .map(([f, reason]) => `${f} has nothing to tidy in Keel: ${reason}`);
};

function safetyBuffer(b: TidyFields, fallback: number): number {
  const s = b.get('safety_buffer') ?? fallback;
  if (s <= 0) throw new ValidationError('safety_buffer must be greater than zero');
  return s;
}

/**
 * `tidy` (202, the work runs off the request when the schedule fires), `tidy-status`,
 * `tidy-cancel` and `config/auto-tidy`.
 */
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

export const TIDY_ROUTE = pkiRoute(TIDY_PATH, {
  update: async (ctx, { authority, id }, parse) => {
    const b = parse();
    const skipped = notRun(b);
    const params: TidyParams = {
      safetyBuffer: safetyBuffer(b, 72 * 3600),
      tidyCertStore: b.get('tidy_cert_store') ?? false,
      tidyRevokedCerts: b.get('tidy_revoked_certs') ?? false,
    };
    if (!params.tidyCertStore && !params.tidyRevokedCerts)
      return accepted(ctx, [
        'Manual tidy requested but no tidy operations were set. Enable at least one tidy operation to be run (tidy_cert_store or tidy_revoked_certs).',
        ...skipped,
        ...b.warnings,
      ]);
    const started = await startTidy(authority, id, meta(ctx), params, false);
    accepted(ctx, [
      started
        ? "Tidy operation successfully started. Any information from the operation will be printed to Keel's server logs."
        : 'Tidy operation already in progress.',
      ...skipped,
      ...b.warnings,
    ]);
  },
});

export const TIDY_STATUS_ROUTE = pkiRoute(
  segmentsOnly('tidy-status', 'Status of the last tidy', ['read']),
  { read: (ctx, { authority, id }) => send(ctx, tidyStatusView(authority, id)) },
);

export const TIDY_CANCEL_ROUTE = pkiRoute(
  segmentsOnly('tidy-cancel', 'Cancel a running tidy', ['update']),
  {
    update: async (ctx, { authority, id }) => {
      if (!(await cancelTidy(authority, id, meta(ctx))))
        return send(ctx, null, [
          'Tidy operation cannot be cancelled as none is currently running.',
        ]);
      send(ctx, tidyStatusView(authority, id));
    },
  },
);

export const AUTO_TIDY_ROUTE = pkiRoute(AUTO_TIDY, {
  read: (ctx, { authority, id }) => send(ctx, autoTidyConfig(authority, id)),
  update: async (ctx, { authority, id }, parse) => {
    const b = parse();
    const skipped = notRun(b);
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
    reply(ctx, b, next, skipped);
  },
});
