import type Router from '@koa/router';
import type { Authority } from '../authority.js';
import { revoke } from '../revoke.js';
import { input, meta, send, type RouteScope } from './common.js';

/** `revoke` (privileged, by serial or certificate) and `revoke-with-key` (proof of possession). */
export function revokeRoutes(r: Router, authority: Authority, { id }: RouteScope): void {
  r.post('/revoke', (ctx) => {
    const out = revoke(authority, id, meta(ctx), input(ctx));
    send(ctx, out.data, out.warnings);
  });
  r.post('/revoke-with-key', (ctx) => {
    const out = revoke(authority, id, meta(ctx), input(ctx), true);
    send(ctx, out.data, out.warnings);
  });
}
