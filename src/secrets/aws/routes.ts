import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { secretsRouter } from '../request-path.js';
import { KeelError, isKeelError } from '../../core/errors.js';
import { multierror } from '../../http/errors.js';
import { requestData, sendVault } from '../../http/vault.js';
import { secretsMetadata } from '../surface.js';
import type { CredsService } from './creds.js';
import type { MountRef } from './events.js';
import { parseFields, type FieldData, type Fields, type PathSchema, type Raw } from '../fields.js';
import { presentLease, presentRole, presentRoot, presentStaticRole } from './presenters.js';
import type { RoleService } from './roles.js';
import type { RootService } from './root.js';
import { CONFIG_LEASE, CONFIG_ROOT, CREDS, ROLE, STATIC_ROLE, STS } from './paths.js';
import { checkName } from './schema.js';
import type { StaticRoleService } from './static-roles.js';

/** The services the routes call; each route is validate → command → present. */
export interface AwsServices {
  root: RootService;
  roles: RoleService;
  creds: CredsService;
  staticRoles: StaticRoleService;
}

function mountOf(ctx: Context): MountRef {
  const m = ctx.state.mount;
  if (!m) throw new KeelError('internal', 'route reached without a mount');
  return { accessor: m.accessor, path: m.path };
}

const metadataOf = secretsMetadata;
/** The `:name` segment, checked against the reference's name pattern. */
const nameParam = (ctx: Context): string =>
  checkName((ctx as Context & { params: Record<string, string | undefined> }).params.name);
const dataOf = (ctx: Context): Raw => requestData(ctx);
/** The request's fields, parsed against its path's declaration (the `:name` segment included). */
const parsed = <F extends Fields>(ctx: Context, path: PathSchema<F>, name?: string): FieldData<F> =>
  parseFields(path, dataOf(ctx), name === undefined ? {} : { name });

/** The reference's answer for a read of nothing: 404 with an empty error list. */
function notFound(): never {
  throw new KeelError('not_found', '');
}

const noContent = (ctx: Context) => sendVault(ctx, undefined);

function unsupported(): never {
  throw new KeelError('unsupported', multierror('unsupported operation'));
}

/**
 * Server-side failures read as the reference prints a plain Go error: a one-item multierror.
 * Caller mistakes (400) keep their text as it is.
 */
async function referenceErrors(_ctx: Context, next: Next): Promise<void> {
  try {
    await next();
  } catch (e) {
    if (
      isKeelError(e) &&
      (e.details.status ?? 500) >= 500 &&
      e.code === 'internal' &&
      !/^\d+ errors? occurred:/.test(e.message)
    ) {
      throw new KeelError('internal', multierror(e.message), e.details, { cause: e });
    }
    throw e;
  }
}

/** Routes of one mount, relative to it (`/config/root`, `/roles/:name`, ...). */
export function awsRoutes(s: AwsServices): Router {
  const r = secretsRouter();
  r.use(referenceErrors);

  r.get('/config/root', (ctx) => {
    const settings = s.root.read(mountOf(ctx));
    if (!settings) notFound();
    sendVault(ctx, presentRoot(settings));
  });
  r.post('/config/root', async (ctx) => {
    await s.root.write(mountOf(ctx), parsed(ctx, CONFIG_ROOT), metadataOf(ctx));
    noContent(ctx);
  });

  const rotateRoot = async (ctx: Context) => {
    const accessKey = await s.root.rotate(mountOf(ctx), metadataOf(ctx));
    sendVault(ctx, { access_key: accessKey });
  };
  r.post('/config/rotate-root', rotateRoot);

  r.get('/config/lease', (ctx) => {
    const { lease, leaseMax } = s.root.lease(mountOf(ctx));
    sendVault(ctx, presentLease(lease, leaseMax));
  });
  const writeLease = async (ctx: Context) => {
    await s.root.writeLease(mountOf(ctx), parsed(ctx, CONFIG_LEASE), metadataOf(ctx));
    noContent(ctx);
  };
  r.post('/config/lease', writeLease);

  r.get(['/roles', '/roles/'], (ctx) => {
    if (!ctx.state.list) unsupported();
    const keys = s.roles.list(mountOf(ctx));
    if (keys.length === 0) notFound();
    sendVault(ctx, { keys });
  });
  r.get('/roles/:name', (ctx) => {
    if (ctx.state.list) unsupported();
    const role = s.roles.read(mountOf(ctx), nameParam(ctx));
    if (!role) notFound();
    sendVault(ctx, presentRole(role));
  });
  const writeRole = async (ctx: Context) => {
    const name = nameParam(ctx);
    const d = parsed(ctx, ROLE, name);
    const warnings = await s.roles.write(mountOf(ctx), name, d, metadataOf(ctx));
    // The reference adds its field warnings to a response, and a 204 has none.
    if (warnings.length === 0) return noContent(ctx);
    sendVault(ctx, null, { warnings: [...warnings, ...d.warnings] });
  };
  r.post('/roles/:name', writeRole);
  r.delete('/roles/:name', async (ctx) => {
    await s.roles.delete(mountOf(ctx), nameParam(ctx), metadataOf(ctx));
    noContent(ctx);
  });

  for (const [path, declared] of [
    ['creds', CREDS],
    ['sts', STS],
  ] as const) {
    const issue = async (ctx: Context) => {
      if (ctx.state.list) unsupported();
      const name = nameParam(ctx);
      const d = parsed(ctx, declared, name);
      const out = await s.creds.issue(
        mountOf(ctx),
        name,
        path,
        d,
        ctx.state.token?.displayName ?? '',
        metadataOf(ctx),
      );
      const { warnings } = d;
      sendVault(ctx, out.data, {
        leaseId: out.leaseId,
        leaseDuration: out.leaseDuration,
        renewable: out.renewable,
        ...(warnings.length ? { warnings } : {}),
      });
    };
    r.get(`/${path}/:name`, issue);
    r.post(`/${path}/:name`, issue);
  }

  r.get(['/static-roles', '/static-roles/'], (ctx) => {
    if (!ctx.state.list) unsupported();
    const keys = s.staticRoles.list(mountOf(ctx));
    if (keys.length === 0) notFound();
    sendVault(ctx, { keys });
  });
  r.get('/static-roles/:name', (ctx) => {
    if (ctx.state.list) unsupported();
    const row = s.staticRoles.read(mountOf(ctx), nameParam(ctx));
    if (!row) notFound();
    sendVault(ctx, presentStaticRole(row));
  });
  const writeStatic = async (ctx: Context) => {
    const name = nameParam(ctx);
    const d = parsed(ctx, STATIC_ROLE, name);
    const view = await s.staticRoles.write(mountOf(ctx), name, d, metadataOf(ctx));
    const { warnings } = d;
    sendVault(ctx, presentStaticRole(view), warnings.length ? { warnings } : {});
  };
  r.post('/static-roles/:name', writeStatic);
  r.delete('/static-roles/:name', async (ctx) => {
    await s.staticRoles.delete(mountOf(ctx), nameParam(ctx), metadataOf(ctx));
    noContent(ctx);
  });

  r.get('/static-creds/:name', (ctx) => {
    if (ctx.state.list) unsupported();
    const name = nameParam(ctx);
    sendVault(ctx, s.staticRoles.creds(mountOf(ctx), name));
  });

  return r;
}
