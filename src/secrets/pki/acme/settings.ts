import type { RouterContext } from '@koa/router';
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { ValidationError } from '../../../core/errors.js';
import { CONFIG_ACME, CONFIG_CLUSTER } from '../paths.js';
import { segmentsOnly } from '../../fields.js';
import {
  meta,
  param,
  pkiRoute,
  reply,
  send,
  sendKeys,
  type PkiRoute,
  type PkiScope,
} from '../routes/common.js';
import type { AcmeConfig, AcmeSettingsEvent, ClusterConfig, EabPolicy } from './events.js';
import { acmeAt, directoryOf, directoryName, type DIRECTORY_PREFIXES } from './directory.js';
import type { AcmeService } from './service.js';

const EAB_POLICIES: readonly EabPolicy[] = [
  'not-required',
  'new-account-required',
  'always-required',
];

const rfc3339 = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

function checkUrl(field: string, v: string): string {
  if (v === '') return v;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new ValidationError(`${field} must be an absolute URL, got ${JSON.stringify(v)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ValidationError(`${field} must be an http or https URL`);
  return v.replace(/\/+$/, '');
}

function checkPolicy(service: AcmeService, mount: string, policy: string): string {
  if (policy === 'forbid' || policy === 'sign-verbatim') return policy;
  if (policy.startsWith('role:')) {
    const role = policy.slice(5);
    if (!role || !service.authority.role(mount, role))
      throw new ValidationError(
        `default directory policy role ${JSON.stringify(role)} does not exist`,
      );
    return policy;
  }
  if (policy.startsWith('external-policy'))
    throw new ValidationError(
      'external-policy ACME directory policies are not implemented in Keel: its external policy service serves the external-policy issuing paths, not ACME',
    );
  throw new ValidationError(
    `invalid default_directory_policy ${JSON.stringify(policy)}: use forbid, sign-verbatim or role:<name>`,
  );
}

function checkEabPolicy(v: string): EabPolicy {
  const policy = EAB_POLICIES.find((p) => p === v);
  if (policy === undefined)
    throw new ValidationError(
      `unknown value ${JSON.stringify(v)} for field "eab_policy"; must be one of ${EAB_POLICIES.join(', ')}`,
    );
  return policy;
}

function checkResolver(v: string): string {
  if (v === '') return v;
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d{1,5}))?$/.exec(v);
  const host = m?.[1] ?? m?.[2] ?? '';
  if (!m || !isIP(host) || (m[3] !== undefined && Number(m[3]) > 65535))
    throw new ValidationError(
      `dns_resolver must be an IP address with an optional port, got ${JSON.stringify(v)}`,
    );
  return v;
}

/**
 * `config/cluster`, `config/acme`, and the external account binding keys (`acme/new-eab` under
 * every directory, `LIST eab/`, `DELETE eab/:id`). These need a token, like the engine's other
 * paths; only the ACME protocol paths do not.
 */

// Inside a command (`authority.run`): each route's read, check and record are one.
const record = (ctx: RouterContext, { acme, id }: PkiScope, event: AcmeSettingsEvent) =>
  acme.record.settings(id, event, meta(ctx));
const command = <T>({ acme }: PkiScope, fn: () => T): Promise<T> => acme.authority.run(fn);

export const CONFIG_CLUSTER_ROUTE = pkiRoute(CONFIG_CLUSTER, {
  read: (ctx, { acme, id }) => send(ctx, acme.cluster(id)),
  update: async (ctx, s, parse) => {
    const b = parse();
    const config = await command(s, () => {
      const old = s.acme.cluster(s.id);
      const config: ClusterConfig = {
        path: checkUrl('path', b.get('path') ?? old.path),
        aia_path: checkUrl('aia_path', b.get('aia_path') ?? old.aia_path),
      };
      record(ctx, s, { type: 'PkiClusterConfigured', data: { mount: s.id, config } });
      return config;
    });
    reply(ctx, b, config);
  },
});

export const CONFIG_ACME_ROUTE = pkiRoute(CONFIG_ACME, {
  read: (ctx, { acme, id }) => send(ctx, acme.config(id)),
  update: async (ctx, s, parse) => {
    const { acme: service, id } = s;
    const b = parse();
    const config = await command(s, () => {
      const old = service.config(id);
      const config: AcmeConfig = {
        enabled: b.get('enabled') ?? old.enabled,
        allowed_issuers: b.get('allowed_issuers') ?? old.allowed_issuers,
        allowed_roles: b.get('allowed_roles') ?? old.allowed_roles,
        allow_role_ext_key_usage: b.get('allow_role_ext_key_usage') ?? old.allow_role_ext_key_usage,
        default_directory_policy: checkPolicy(
          service,
          id,
          b.get('default_directory_policy') ?? old.default_directory_policy,
        ),
        dns_resolver: checkResolver(b.get('dns_resolver') ?? old.dns_resolver),
        eab_policy: checkEabPolicy(b.get('eab_policy') ?? old.eab_policy),
      };
      for (const ref of config.allowed_issuers)
        if (ref !== '*') service.authority.resolveIssuer(id, ref);
      if (config.enabled && !service.cluster(id).path)
        throw new ValidationError(
          "ACME feature requires local cluster 'path' field configuration to be set",
        );
      record(ctx, s, { type: 'PkiAcmeConfigured', data: { mount: id, config } });
      return config;
    });
    reply(ctx, b, config);
  },
});

/** `acme/new-eab` under a directory (needs a token). */
export const newEabRoute = (prefix: (typeof DIRECTORY_PREFIXES)[number]): PkiRoute =>
  pkiRoute(
    segmentsOnly(acmeAt(prefix, 'new-eab'), 'Create an external account binding key', ['update']),
    {
      update: async (ctx, s) => {
        const { acme: service, id } = s;
        const dir = directoryOf(ctx);
        const eabId = service.authority.core.ids.uuid();
        const key = randomBytes(32).toString('base64url');
        const createdOn = rfc3339(service.now());
        await command(s, () =>
          record(ctx, s, {
            type: 'AcmeEabKeyCreated',
            data: {
              mount: id,
              eabId,
              key: service.authority.core.sealer.seal(key),
              directory: directoryName(dir),
              createdOn,
            },
          }),
        );
        send(ctx, {
          id: eabId,
          key_type: 'hs',
          key,
          acme_directory: `${directoryName(dir)}acme/directory`,
          created_on: createdOn,
        });
      },
    },
  );

export const EAB_ROUTE = pkiRoute(
  segmentsOnly('eab', 'List external account binding keys', ['list']),
  {
    list: (ctx, { acme, id }) => {
      const rows = acme.q.eabs(id);
      sendKeys(
        ctx,
        rows.map((e) => e.eab_id),
        Object.fromEntries(
          rows.map((e) => [
            e.eab_id,
            {
              key_type: 'hs',
              acme_directory: `${e.directory}acme/directory`,
              created_on: e.created_on,
              ...(e.account_id ? { account_binding: e.account_id } : {}),
            },
          ]),
        ),
      );
    },
  },
);
export const EAB_KEY_ROUTE = pkiRoute(
  segmentsOnly('eab/:key_id', 'Delete an external account binding key', ['delete']),
  {
    delete: async (ctx, s) => {
      const eabId = param(ctx, 'key_id');
      await command(s, () => {
        if (s.acme.q.eab(s.id, eabId))
          record(ctx, s, { type: 'AcmeEabKeyDeleted', data: { mount: s.id, eabId } });
      });
      ctx.status = 204;
      ctx.body = null;
    },
  },
);
