import type Router from '@koa/router';
import { NotFoundError, ValidationError } from '../../../core/errors.js';
import { NAME_PATTERN } from '../../fields.js';
import { ROLE } from '../paths-role.js';
import { roleToWire, type Role } from '../role.js';
import type { PkiService } from '../service.js';
import { fields, meta, param, reply, send, sendKeys, type RouteScope } from './common.js';

/** `roles/:name` (write replaces, PATCH merges, read, delete) and `LIST roles`. */
export function roleRoutes(r: Router, pki: PkiService, { id }: RouteScope): void {
  const { authority } = pki;
  const name = (ctx: Parameters<typeof param>[0]) => {
    const n = param(ctx, 'name');
    if (!NAME_PATTERN.test(n)) throw new ValidationError(`invalid role name ${JSON.stringify(n)}`);
    return n;
  };

  const write = async (ctx: Parameters<typeof fields>[0], patch: boolean) => {
    const roleName = name(ctx);
    const d = fields(ctx, ROLE);
    const { role, warnings } = await pki.writeRole(id, roleName, d, patch, meta(ctx));
    reply(ctx, d, roleToWire(role), warnings);
  };

  r.get('/roles', (ctx) => {
    if (!ctx.state.list) throw new NotFoundError('');
    sendKeys(ctx, authority.q.roleNames(id));
  });
  r.get('/roles/:name', (ctx) => {
    if (ctx.state.list) throw new NotFoundError('');
    const role = authority.q.role(id, name(ctx)) as Role | undefined;
    if (!role) throw new NotFoundError('');
    send(ctx, roleToWire(role));
  });
  r.post('/roles/:name', (ctx) => write(ctx, false));
  r.patch('/roles/:name', (ctx) => write(ctx, true));
  r.delete('/roles/:name', async (ctx) => {
    await pki.deleteRole(id, name(ctx), meta(ctx));
    ctx.status = 204;
    ctx.body = null;
  });
}
