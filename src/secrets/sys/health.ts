import type { Context } from 'koa';
import { KeelError } from '../../core/errors.js';
import { STORE_UNAVAILABLE } from '../../core/store/port.js';
import { multierror } from '../../http/errors.js';
import { parseGoBool } from '../../http/vault.js';
import type { Core } from '../../context.js';
import { segmentsOnly } from '../fields.js';
import { sysRoute } from './routes.js';

/**
 * `sys/health` and `sys/seal-status`, served without a token (declared unauthenticated): the
 * surface dispatches the system backend's open paths before it reads any token or rate limit, so
 * a load balancer's probe is never refused for want of one.
 */

/**
 * The reference's status for `sys/health`: `activecode` (200) on the leading process,
 * `standbycode` (429) on one standing by unless `standbyok` asks for the active code.
 */
function healthStatus(ctx: Context, standby: boolean): number {
  const code = (name: string, fallback: number): number => {
    const raw = ctx.query[name];
    if (typeof raw !== 'string' || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 100 || n > 599) {
      throw new KeelError('validation', multierror(`${name}: not a valid status code: ${raw}`));
    }
    return n;
  };
  const active = code('activecode', 200);
  if (!standby) return active;
  const standbyOk =
    typeof ctx.query.standbyok === 'string' && parseGoBool(ctx.query.standbyok, 'standbyok');
  return standbyOk ? active : code('standbycode', 429);
}

/** Whether the store answers (a PostgreSQL store may be out of reach, ADR 0081). */
export function storeProbe(db: Core['db']): () => boolean {
  const probe = db.prepare('SELECT 1');
  return () => {
    try {
      probe.get();
      return true;
    } catch (err) {
      if ((err as { code?: unknown }).code !== STORE_UNAVAILABLE) throw err;
      return false;
    }
  };
}

const sendJson = (ctx: Context, status: number, body: unknown): void => {
  ctx.status = status;
  ctx.body = JSON.stringify(body);
  ctx.set('Content-Type', 'application/json');
};

export const HEALTH_ROUTE = sysRoute(
  segmentsOnly('sys/health', 'Health of the server', ['read']),
  {
    read: (ctx, { core, storeAnswers }) => {
      // Whether this process stands by (another leads; `--workers`, ADR 0080): the surface knows.
      const standby = ctx.state.standby === true;
      const health = {
        initialized: true,
        sealed: false,
        standby,
        performance_standby: false,
        replication_performance_mode: 'disabled',
        replication_dr_mode: 'disabled',
        server_time_utc: Math.floor(core.clock.now().getTime() / 1000),
        version: 'keel',
        enterprise: false,
        cluster_name: 'keel',
        cluster_id: 'keel',
      };
      sendJson(ctx, storeAnswers() ? healthStatus(ctx, standby) : 503, health);
    },
  },
  { unauthenticated: true },
);

export const SEAL_STATUS_ROUTE = sysRoute(
  segmentsOnly('sys/seal-status', 'Seal status of the server', ['read']),
  {
    read: (ctx) =>
      sendJson(ctx, 200, {
        type: 'shamir',
        initialized: true,
        sealed: false,
        t: 1,
        n: 1,
        progress: 0,
        nonce: '',
        version: 'keel',
        migration: false,
        recovery_seal: false,
        storage_type: 'keel',
      }),
  },
  { unauthenticated: true },
);
