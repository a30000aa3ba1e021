import type Koa from 'koa';
import type pino from 'pino';
import type { Clock } from '../core/clock.js';
import { randomIds } from '../core/ids.js';
import type { Ids } from '../core/ids.js';
import type { Sealer } from '../core/seal.js';
import { authenticate } from './authenticate.js';
import type { Action, ActionContext } from './context.js';
import { arn, mint, stamp } from './context.js';
import { CloudError } from './errors.js';
import { groupActions } from './iam-groups.js';
import { mfaActions } from './iam-mfa.js';
import { roleActions } from './iam-roles.js';
import { MAX_KEYS_PER_USER, userActions } from './iam-users.js';
import { Params } from './params.js';
import { authorize } from './permissions.js';
import type { SignedRequest } from './sigv4.js';
import { CloudStore, type CloudLocation } from './store.js';
import { stsActions } from './sts.js';
import { errorXml, successXml } from './xml.js';

/** Where the cloud is mounted inside the daemon, and its two endpoints under it. */
export const CLOUD_PREFIX = '/cloud';

/** The two Query-protocol services the cloud speaks. */
const SERVICES = {
  iam: {
    version: '2010-05-08',
    namespace: 'https://iam.amazonaws.com/doc/2010-05-08/',
    actions: { ...userActions, ...groupActions, ...roleActions, ...mfaActions },
  },
  sts: {
    version: '2011-06-15',
    namespace: 'https://sts.amazonaws.com/doc/2011-06-15/',
    actions: stsActions,
  },
} as const satisfies Record<
  string,
  { version: string; namespace: string; actions: Record<string, Action> }
>;

type ServiceName = keyof typeof SERVICES;

/** The account's bootstrap user: it holds `*`, like an account's administrator. */
const ROOT_USER = 'keel-root';
const ROOT_POLICY = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});
/** Request bodies above this are refused: no IAM or STS call comes close. */
const MAX_BODY = 1024 * 1024;

/** Options of {@link createCloud}. */
export interface CloudOptions {
  /** The cloud's own SQLite file (e.g. `<data>/cloud.sqlite`, or `:memory:`), or PostgreSQL. */
  location: CloudLocation;
  clock: Clock;
  /** Keel's keyring: the secrets the file must use again are sealed with it. */
  sealer: Sealer;
  ids?: Ids;
  logger?: pino.Logger;
  /** The 12-digit account id, fixed when the file is first created. */
  accountId?: string;
}

/** The embedded IAM/STS service. */
export interface CloudService {
  /** Koa middleware for `/cloud/iam` and `/cloud/sts`; it passes anything else on. */
  middleware(): Koa.Middleware;
  /** Creates the root user and its key on first call; returns the same key afterwards. */
  bootstrapRoot(): { accessKeyId: string; secretAccessKey: string };
  /** The account id the cloud answers for. */
  readonly accountId: string;
  close(): void;
}

function serviceOf(path: string): ServiceName | null {
  if (!path.startsWith(`${CLOUD_PREFIX}/`)) return null;
  const rest = path.slice(CLOUD_PREFIX.length + 1).replace(/\/$/, '');
  return rest === 'iam' || rest === 'sts' ? rest : null;
}

async function readBody(req: Koa.Request['req']): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > MAX_BODY) {
      req.resume();
      throw new CloudError('ValidationError', 'Request body is too large.');
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/** Lower-cased headers; repeated headers are joined with commas, as SigV4 canonicalises them. */
function headersOf(raw: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const k = (raw[i] ?? '').toLowerCase();
    const v = (raw[i + 1] ?? '').trim();
    out[k] = k in out ? `${out[k]},${v}` : v;
  }
  return out;
}

/**
 * Builds Keel's embedded cloud: IAM and STS over the AWS Query protocol, SigV4-verified, with
 * policies enforced, on its own SQLite file.
 */
export function createCloud(opts: CloudOptions): CloudService {
  const store = new CloudStore(opts.location, opts.sealer);
  const ids = opts.ids ?? randomIds;
  if (!store.meta('account_id')) store.setMeta('account_id', opts.accountId ?? '000000000000');
  const account = store.meta('account_id') ?? '000000000000';
  const log = opts.logger?.child({ component: 'cloud' });

  async function handle(service: ServiceName, req: SignedRequest, params: Params) {
    const spec = SERVICES[service];
    const principal = await authenticate(store, account, req, service, opts.clock.now());
    const actionName = params.get('Action');
    if (!actionName) throw new CloudError('MissingAction', 'Missing Action');
    const version = params.get('Version') ?? spec.version;
    const action: Action | undefined = Object.hasOwn(spec.actions, actionName)
      ? (spec.actions as Record<string, Action>)[actionName]
      : undefined;
    if (!action || version !== spec.version) {
      throw new CloudError(
        'InvalidAction',
        `Could not find operation ${actionName} for version ${version}`,
      );
    }
    const c: ActionContext = { store, params, principal, now: opts.clock.now(), account, ids };
    const resource = action.resource(c);
    if (resource !== null) {
      authorize(store, principal, `${service}:${actionName}`, resource, {
        // Roles have no user name, and AWS leaves the key out for them.
        ...(principal.kind === 'assumed-role' || !principal.userName
          ? {}
          : { 'aws:username': principal.userName }),
        'aws:userid': principal.userId,
        'aws:principalarn': principal.arn,
        'aws:principalaccount': account,
      });
    }
    return { actionName, result: store.tx(() => action.run(c)) };
  }

  return {
    accountId: account,
    middleware() {
      return async (ctx, next) => {
        const service = serviceOf(ctx.path);
        if (service === null) {
          await next();
          return;
        }
        const spec = SERVICES[service];
        const requestId = ids.uuid();
        ctx.set('x-amzn-RequestId', requestId);
        ctx.type = 'text/xml';
        try {
          if (ctx.method !== 'POST' && ctx.method !== 'GET') {
            throw new CloudError(
              'InvalidAction',
              `The HTTP method ${ctx.method} is not supported.`,
            );
          }
          const body = await readBody(ctx.req);
          const url = ctx.originalUrl;
          const q = url.indexOf('?');
          const req: SignedRequest = {
            method: ctx.method,
            path: q < 0 ? url : url.slice(0, q),
            query: q < 0 ? '' : url.slice(q + 1),
            headers: headersOf(ctx.req.rawHeaders),
            body,
          };
          const params = Params.parse(req.query, body.toString('utf8'));
          const { actionName, result } = await handle(service, req, params);
          ctx.status = 200;
          ctx.body = successXml(actionName, spec.namespace, result, requestId);
        } catch (err) {
          const e =
            err instanceof CloudError
              ? err
              : new CloudError(
                  'InternalFailure',
                  'The request processing has failed because of an unknown error.',
                );
          if (!(err instanceof CloudError)) log?.error({ err, requestId }, 'cloud request failed');
          ctx.status = e.status;
          ctx.body = errorXml(
            spec.namespace,
            { type: e.type, code: e.code, message: e.message },
            requestId,
          );
        }
      };
    },
    bootstrapRoot() {
      return store.tx(() => {
        const existing = store.get<{ id: string; secret: string }>(
          'SELECT id, secret FROM access_keys WHERE id = ?',
          store.meta('root_key') ?? '',
        );
        if (existing) {
          return { accessKeyId: existing.id, secretAccessKey: store.unseal(existing.secret) };
        }
        const now = stamp(opts.clock.now());
        if (!store.user(ROOT_USER)) {
          store.run(
            'INSERT INTO users (name, id, path, create_date, boundary_arn) VALUES (?, ?, ?, ?, NULL)',
            ROOT_USER,
            mint.uniqueId(ids, 'AIDA'),
            '/',
            now,
          );
          store.run(
            'INSERT INTO user_policies (user_name, name, document) VALUES (?, ?, ?)',
            ROOT_USER,
            'AdministratorAccess',
            ROOT_POLICY,
          );
        }
        // The recorded key was rotated away (or never made): mint one, within IAM's quota.
        const count = store.get<{ n: number }>(
          'SELECT COUNT(*) AS n FROM access_keys WHERE user_name = ?',
          ROOT_USER,
        );
        if ((count?.n ?? 0) >= MAX_KEYS_PER_USER) {
          throw new CloudError(
            'LimitExceeded',
            `Cannot exceed quota for AccessKeysPerUser: ${MAX_KEYS_PER_USER}`,
          );
        }
        const key = { id: mint.accessKeyId(ids, false), secret: mint.secretKey(ids) };
        store.run(
          `INSERT INTO access_keys (id, user_name, secret, status, create_date) VALUES (?, ?, ?, 'Active', ?)`,
          key.id,
          ROOT_USER,
          store.seal(key.secret),
          now,
        );
        store.setMeta('root_key', key.id);
        log?.info({ user: arn.user(account, '/', ROOT_USER) }, 'cloud root user bootstrapped');
        return { accessKeyId: key.id, secretAccessKey: key.secret };
      });
    },
    close() {
      store.close();
    },
  };
}
