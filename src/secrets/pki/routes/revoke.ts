import type Router from '@koa/router';
import type { Authority } from '../authority.js';
import { REVOKE_PATH, REVOKE_WITH_KEY } from '../paths.js';
import { revoke } from '../revoke.js';
import { fields, meta, reply, type RouteScope } from './common.js';

/** `revoke` (privileged, by serial or certificate) and `revoke-with-key` (proof of possession). */
export function revokeRoutes(r: Router, authority: Authority, { id }: RouteScope): void {
  r.post('/revoke', async (ctx) => {
    const d = fields(ctx, REVOKE_PATH);
    const out = await authority.run(() => revoke(authority, id, meta(ctx), d));
    reply(ctx, d, out.data, out.warnings);
  });
  r.post('/revoke-with-key', async (ctx) => {
    const d = fields(ctx, REVOKE_WITH_KEY);
    const out = await authority.run(() =>
      revoke(authority, id, meta(ctx), d, d.get('private_key') ?? ''),
    );
    reply(ctx, d, out.data, out.warnings);
  });
}
