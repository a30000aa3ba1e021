import type { RouterContext } from '@koa/router';
import { NotFoundError, ValidationError } from '../../../core/errors.js';
import { NAME_PATTERN, segmentsOnly, type FieldData } from '../../fields.js';
import { ROLE } from '../paths-role.js';
import { roleToWire, type Role } from '../role.js';
import { meta, param, pkiRoute, reply, send, sendKeys, type PkiScope } from './common.js';

/** The role named in the path, checked before anything else is read. */
const roleName = (ctx: Parameters<typeof param>[0]) => {
  const n = param(ctx, 'name');
  if (!NAME_PATTERN.test(n)) throw new ValidationError(`invalid role name ${JSON.stringify(n)}`);
  return n;
};

/** `roles/:name`: write replaces, PATCH merges, read, delete. */
export const ROLE_ROUTE = pkiRoute(ROLE, {
  read: (ctx, { authority, id }) => {
    if (ctx.state.list) throw new NotFoundError('');
    const role = authority.q.role(id, roleName(ctx)) as Role | undefined;
    if (!role) throw new NotFoundError('');
    send(ctx, roleToWire(role));
  },
  update: (ctx, s, parse) => write(ctx, s, parse, false),
  patch: (ctx, s, parse) => write(ctx, s, parse, true),
  delete: async (ctx, { pki, id }) => {
    await pki.deleteRole(id, roleName(ctx), meta(ctx));
    ctx.status = 204;
    ctx.body = null;
  },
});

async function write(
  ctx: RouterContext,
  { pki, id }: PkiScope,
  parse: () => FieldData<typeof ROLE.fields>,
  patch: boolean,
) {
  const name = roleName(ctx);
  const d = parse();
  const { role, warnings } = await pki.writeRole(id, name, d, patch, meta(ctx));
  reply(ctx, d, roleToWire(role), warnings);
}

/** `LIST roles`. */
export const ROLES_ROUTE = pkiRoute(segmentsOnly('roles', 'List roles', ['list']), {
  list: (ctx, { authority, id }) => sendKeys(ctx, authority.q.roleNames(id)),
});
