import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { secretsRouter } from '../request-path.js';
import { KeelError, isKeelError } from '../../core/errors.js';
import { multierror } from '../../http/errors.js';
import { requestData, sendVault } from '../../http/vault.js';
import { secretsMetadata } from '../surface.js';
import type { CredsService } from './creds.js';
import type { MountRef } from './events.js';
import {
  parseFields,
  segmentsOnly,
  type FieldData,
  type Fields,
  type PathSchema,
  type Raw,
} from '../fields.js';
import {
  route,
  routerOf,
  type Handler,
  type PathRoute,
  type RouteFlags,
  type Verb,
} from '../route.js';
import { presentLease, presentRole, presentRoot, presentStaticRole } from './presenters.js';
import type { RoleService } from './roles.js';
import type { RootService } from './root.js';
import { CONFIG_LEASE, CONFIG_ROOT, CREDS, ROLE, ROTATE_ROOT, STATIC_ROLE, STS } from './paths.js';
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

/** A declared path of the engine with its handlers (src/secrets/route.ts). */
export type AwsRoute = PathRoute<AwsServices>;

const awsRoute = <F extends Fields>(
  schema: PathSchema<F>,
  handlers: Readonly<Partial<Record<Verb, Handler<AwsServices, F>>>>,
  flags?: RouteFlags,
): AwsRoute => route(schema, handlers, flags);

/** A LIST of names; a plain GET is refused (405), an empty list is 404 `{"errors":[]}`. */
const listOf = (
  pattern: string,
  summary: string,
  keys: (s: AwsServices, mount: MountRef) => string[],
): AwsRoute =>
  awsRoute(
    segmentsOnly(pattern, summary, ['list']),
    {
      list: (ctx, s) => {
        if (!ctx.state.list) unsupported();
        const found = keys(s, mountOf(ctx));
        if (found.length === 0) notFound();
        sendVault(ctx, { keys: found });
      },
    },
    { getAsList: true },
  );

/** `creds/:name` and `sts/:name`: credentials under a role, asked for by a read or a write. */
const credsRoute = (path: 'creds' | 'sts', declared: typeof CREDS) => {
  const issue = async (ctx: Context, s: AwsServices) => {
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
  return awsRoute(declared, { read: issue, update: issue });
};

/**
 * Every path of the engine with its handlers, in the order the OpenAPI document lists them: the
 * router and the OpenAPI document are made from this list (src/secrets/route.ts). The fields are
 * declared in paths.ts. No path is served without a token or needs sudo.
 */
export const AWS_PATHS: readonly AwsRoute[] = [
  awsRoute(CONFIG_ROOT, {
    read: (ctx, s) => {
      const settings = s.root.read(mountOf(ctx));
      if (!settings) notFound();
      sendVault(ctx, presentRoot(settings));
    },
    update: async (ctx, s) => {
      await s.root.write(mountOf(ctx), parsed(ctx, CONFIG_ROOT), metadataOf(ctx));
      noContent(ctx);
    },
  }),
  awsRoute(ROTATE_ROOT, {
    update: async (ctx, s) => {
      const accessKey = await s.root.rotate(mountOf(ctx), metadataOf(ctx));
      sendVault(ctx, { access_key: accessKey });
    },
  }),
  awsRoute(CONFIG_LEASE, {
    read: (ctx, s) => {
      const { lease, leaseMax } = s.root.lease(mountOf(ctx));
      sendVault(ctx, presentLease(lease, leaseMax));
    },
    update: async (ctx, s) => {
      await s.root.writeLease(mountOf(ctx), parsed(ctx, CONFIG_LEASE), metadataOf(ctx));
      noContent(ctx);
    },
  }),
  listOf('roles', 'List roles', (s, mount) => s.roles.list(mount)),
  awsRoute(ROLE, {
    read: (ctx, s) => {
      if (ctx.state.list) unsupported();
      const role = s.roles.read(mountOf(ctx), nameParam(ctx));
      if (!role) notFound();
      sendVault(ctx, presentRole(role));
    },
    update: async (ctx, s) => {
      const name = nameParam(ctx);
      const d = parsed(ctx, ROLE, name);
      const warnings = await s.roles.write(mountOf(ctx), name, d, metadataOf(ctx));
      // The reference adds its field warnings to a response, and a 204 has none.
      if (warnings.length === 0) return noContent(ctx);
      sendVault(ctx, null, { warnings: [...warnings, ...d.warnings] });
    },
    delete: async (ctx, s) => {
      await s.roles.delete(mountOf(ctx), nameParam(ctx), metadataOf(ctx));
      noContent(ctx);
    },
  }),
  credsRoute('creds', CREDS),
  credsRoute('sts', STS),
  listOf('static-roles', 'List static roles', (s, mount) => s.staticRoles.list(mount)),
  awsRoute(STATIC_ROLE, {
    read: (ctx, s) => {
      if (ctx.state.list) unsupported();
      const row = s.staticRoles.read(mountOf(ctx), nameParam(ctx));
      if (!row) notFound();
      sendVault(ctx, presentStaticRole(row));
    },
    update: async (ctx, s) => {
      const name = nameParam(ctx);
      const d = parsed(ctx, STATIC_ROLE, name);
      const view = await s.staticRoles.write(mountOf(ctx), name, d, metadataOf(ctx));
      const { warnings } = d;
      sendVault(ctx, presentStaticRole(view), warnings.length ? { warnings } : {});
    },
    delete: async (ctx, s) => {
      await s.staticRoles.delete(mountOf(ctx), nameParam(ctx), metadataOf(ctx));
      noContent(ctx);
    },
  }),
  awsRoute(segmentsOnly('static-creds/:name', "A static role's current key", ['read']), {
    read: (ctx, s) => {
      if (ctx.state.list) unsupported();
      const name = nameParam(ctx);
      sendVault(ctx, s.staticRoles.creds(mountOf(ctx), name));
    },
  }),
];

/** Routes of one mount, relative to it (`/config/root`, `/roles/:name`, ...). */
export function awsRoutes(s: AwsServices): Router {
  const r = secretsRouter();
  r.use(referenceErrors);
  return routerOf(r, AWS_PATHS, s);
}
