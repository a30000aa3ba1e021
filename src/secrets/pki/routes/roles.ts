import type Router from '@koa/router';
import { NotFoundError, ValidationError } from '../../../core/errors.js';
import type { Authority } from '../authority.js';
import { roleDecider } from '../deciders.js';
import { streams } from '../events.js';
import { NAME_PATTERN } from '../../fields.js';
import { roleFromInput, roleToWire, type Role } from '../role.js';
import { ROLE } from '../paths-role.js';
import { fields, meta, param, reply, send, sendKeys, type RouteScope } from './common.js';

/** `roles/:name` (write replaces, PATCH merges, read, delete) and `LIST roles`. */
export function roleRoutes(r: Router, authority: Authority, { id }: RouteScope): void {
  const name = (ctx: Parameters<typeof param>[0]) => {
    const n = param(ctx, 'name');
    if (!NAME_PATTERN.test(n)) throw new ValidationError(`invalid role name ${JSON.stringify(n)}`);
    return n;
  };

  const write = (ctx: Parameters<typeof fields>[0], patch: boolean) => {
    const roleName = name(ctx);
    const stored = authority.q.role(id, roleName) as Role | undefined;
    if (patch && !stored) throw new ValidationError('Unable to fetch role entry to patch');
    const d = fields(ctx, ROLE);
    const { role, warnings } = roleFromInput(d, patch ? stored : undefined);
    authority.core.handler.handle(
      streams.role(id, roleName),
      roleDecider,
      () => [{ type: 'PkiRoleWritten' as const, data: { mount: id, name: roleName, role } }],
      meta(ctx),
    );
    if (role.issuer_ref === 'default' && !authority.defaults(id).defaultIssuer) {
      warnings.push(
        'Issuing Certificate was set to default, but no default issuing certificate (configurable at /config/issuers) is currently set',
      );
    }
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
  r.delete('/roles/:name', (ctx) => {
    const roleName = name(ctx);
    if (authority.q.role(id, roleName)) {
      authority.core.handler.handle(
        streams.role(id, roleName),
        roleDecider,
        () => [{ type: 'PkiRoleDeleted' as const, data: { mount: id, name: roleName } }],
        meta(ctx),
      );
    }
    ctx.status = 204;
    ctx.body = null;
  });
}
