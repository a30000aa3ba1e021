import type Router from '@koa/router';
import type { Context } from 'koa';
import { NotFoundError, ValidationError } from '../../../core/errors.js';
import type { Authority } from '../authority.js';
import { newIssuerSettings } from '../authority.js';
import { generateIntermediate, generateRoot, importBundle } from '../ca.js';
import { configDecider, issuerDecider, keyDecider } from '../deciders.js';
import { streams, type IssuerSettings } from '../events.js';
import { NAME_PATTERN } from '../../fields.js';
import {
  CONFIG_CA,
  CONFIG_ISSUERS,
  CROSS_SIGN,
  IMPORT_BUNDLE,
  IMPORT_CERT,
  INTERMEDIATE_GENERATE,
  ISSUER,
  ROOT_GENERATE,
  ROOT_REPLACE,
  SET_SIGNED,
} from '../paths.js';
import type { IssuerRow } from '../projection.js';
import { revokeIssuer } from '../revoke.js';
import { fields, meta, param, reply, send, sendKeys, type RouteScope } from './common.js';

const USAGES = ['read-only', 'issuing-certificates', 'crl-signing', 'ocsp-signing'];

/** The issuer read shape (`GET issuer/:ref`). */
export function issuerView(
  authority: Authority,
  id: string,
  row: IssuerRow,
): Record<string, unknown> {
  const s = row.settings;
  return {
    issuer_id: row.issuer_id,
    issuer_name: s.name,
    key_id: row.key_id,
    certificate: row.certificate,
    ca_chain: authority.chain(id, row),
    serial_number: row.serial,
    not_after: row.not_after,
    manual_chain: s.manualChain.length ? s.manualChain : null,
    leaf_not_after_behavior: s.leafNotAfterBehavior,
    usage: s.usage.join(','),
    revocation_signature_algorithm: s.revocationSignatureAlgorithm,
    revoked: s.revokedAt !== undefined,
    ...(s.revokedAt === undefined
      ? {}
      : {
          revocation_time: Math.floor(Date.parse(s.revokedAt) / 1000),
          revocation_time_rfc3339: new Date(s.revokedAt).toISOString().replace(/\.000Z$/, 'Z'),
        }),
    issuing_certificates: s.issuingCertificates,
    crl_distribution_points: s.crlDistributionPoints,
    delta_crl_distribution_points: [],
    ocsp_servers: s.ocspServers,
  };
}

/** Root and intermediate generation, imports, issuer management and `config/issuers`. */
export function issuerRoutes(r: Router, authority: Authority, scope: RouteScope): void {
  const { id } = scope;
  // root/rotate is root generation whose issuer_name defaults to "next" (the default issuer
  // moves only through root/replace or default_follows_latest_issuer), as the reference.
  for (const [pattern, issuerName] of [
    ['/root/generate/:type', ''],
    ['/issuers/generate/root/:type', ''],
    ['/root/rotate/:type', 'next'],
  ] as const) {
    r.post(pattern, async (ctx) => {
      const d = fields(ctx, ROOT_GENERATE);
      const out = await generateRoot(authority, id, meta(ctx), d.get('type'), d, issuerName);
      reply(ctx, d, out.data, out.warnings);
    });
  }
  for (const pattern of ['/intermediate/generate/:type', '/issuers/generate/intermediate/:type']) {
    r.post(pattern, async (ctx) => {
      const d = fields(ctx, INTERMEDIATE_GENERATE);
      const out = await generateIntermediate(authority, id, meta(ctx), d.get('type'), d);
      reply(ctx, d, out.data, out.warnings);
    });
  }
  // A CSR for an existing key, for another CA to cross-sign: intermediate/generate/existing.
  r.post('/intermediate/cross-sign', async (ctx) => {
    const d = fields(ctx, CROSS_SIGN);
    const out = await generateIntermediate(authority, id, meta(ctx), 'existing', d);
    reply(ctx, d, out.data, out.warnings);
  });

  for (const [path, allowKeys] of [
    [CONFIG_CA, true],
    [IMPORT_BUNDLE, true],
    [IMPORT_CERT, false],
  ] as const) {
    r.post(`/${path.pattern}`, (ctx) => {
      const d = fields(ctx, path);
      const out = importBundle(authority, id, meta(ctx), d.get('pem_bundle') ?? '', allowKeys);
      reply(ctx, d, out.data, out.warnings);
    });
  }
  r.post('/intermediate/set-signed', (ctx) => {
    const d = fields(ctx, SET_SIGNED);
    const out = importBundle(authority, id, meta(ctx), d.get('certificate') ?? '', false);
    reply(ctx, d, out.data, out.warnings);
  });

  r.get('/issuers', (ctx) => {
    if (!ctx.state.list) throw new NotFoundError('');
    const rows = authority.q.issuers(id);
    sendKeys(
      ctx,
      rows.map((i) => i.issuer_id),
      Object.fromEntries(
        rows.map((i) => [
          i.issuer_id,
          {
            issuer_name: i.settings.name,
            key_id: i.key_id,
            serial_number: i.serial,
            is_default: authority.defaults(id).defaultIssuer === i.issuer_id,
          },
        ]),
      ),
    );
  });

  r.get('/issuer/:ref', (ctx) =>
    send(ctx, issuerView(authority, id, authority.resolveIssuer(id, param(ctx, 'ref')))),
  );

  const update = (patch: boolean) => (ctx: Context & { params: Record<string, string> }) => {
    const row = authority.resolveIssuer(id, param(ctx, 'ref'));
    const b = fields(ctx, ISSUER);
    const base: IssuerSettings = patch
      ? row.settings
      : { ...newIssuerSettings(row.settings.name), name: row.settings.name };
    const name = !b.sent('issuer_name') ? base.name : (b.get('issuer_name') ?? '');
    if (name === 'default') throw new ValidationError('reserved issuer name: default');
    if (name && !NAME_PATTERN.test(name))
      throw new ValidationError(`invalid issuer name ${JSON.stringify(name)}`);
    if (
      name &&
      authority.q.issuers(id).some((i) => i.settings.name === name && i.issuer_id !== row.issuer_id)
    ) {
      throw new ValidationError(`issuer name (${name}) already in use`);
    }
    const behavior = b.get('leaf_not_after_behavior') ?? base.leafNotAfterBehavior;
    if (behavior !== 'err' && behavior !== 'truncate' && behavior !== 'permit') {
      throw new ValidationError(
        'Unknown value for field `leaf_not_after_behavior`. Possible values are `err`, `truncate`, and `permit`.',
      );
    }
    const usage = !b.sent('usage') ? base.usage : (b.get('usage') ?? []);
    if (row.settings.revokedAt !== undefined && usage.includes('issuing-certificates'))
      throw new ValidationError('cannot set issuing-certificates usage on a revoked issuer');
    for (const u of usage)
      if (!USAGES.includes(u))
        throw new ValidationError(
          `unknown issuer usage ${JSON.stringify(u)}; must be one of ${USAGES.join(', ')}`,
        );
    const manualChain = (
      !b.sent('manual_chain') ? base.manualChain : (b.get('manual_chain') ?? [])
    ).map((ref) => (ref === 'self' ? row.issuer_id : authority.resolveIssuer(id, ref).issuer_id));
    const settings: IssuerSettings = {
      name,
      leafNotAfterBehavior: behavior,
      usage,
      manualChain,
      revocationSignatureAlgorithm:
        b.get('revocation_signature_algorithm') ?? base.revocationSignatureAlgorithm,
      issuingCertificates: !b.sent('issuing_certificates')
        ? base.issuingCertificates
        : (b.get('issuing_certificates') ?? []),
      crlDistributionPoints: !b.sent('crl_distribution_points')
        ? base.crlDistributionPoints
        : (b.get('crl_distribution_points') ?? []),
      ocspServers: !b.sent('ocsp_servers') ? base.ocspServers : (b.get('ocsp_servers') ?? []),
      // Revocation is for good: an update keeps it.
      ...(row.settings.revokedAt === undefined ? {} : { revokedAt: row.settings.revokedAt }),
    };
    authority.core.handler.handle(
      streams.issuer(id, row.issuer_id),
      issuerDecider,
      () => [
        {
          type: 'PkiIssuerUpdated' as const,
          data: { mount: id, issuerId: row.issuer_id, ...settings },
        },
      ],
      meta(ctx),
    );
    const updated = authority.q.issuer(id, row.issuer_id);
    reply(ctx, b, updated ? issuerView(authority, id, updated) : null);
  };
  r.post('/issuer/:ref', update(false));
  r.post('/issuer/:ref/revoke', (ctx) => {
    const row = authority.resolveIssuer(id, param(ctx, 'ref'));
    revokeIssuer(authority, id, meta(ctx), row);
    const updated = authority.q.issuer(id, row.issuer_id);
    send(ctx, updated ? issuerView(authority, id, updated) : null);
  });
  r.patch('/issuer/:ref', update(true));

  r.delete('/issuer/:ref', (ctx) => {
    let row: IssuerRow;
    try {
      row = authority.resolveIssuer(id, param(ctx, 'ref'));
    } catch {
      ctx.status = 204;
      ctx.body = null;
      return;
    }
    const warnings: string[] = [];
    authority.atomically(() => {
      authority.core.handler.handle(
        streams.issuer(id, row.issuer_id),
        issuerDecider,
        () => [{ type: 'PkiIssuerDeleted' as const, data: { mount: id, issuerId: row.issuer_id } }],
        meta(ctx),
      );
      const defaults = authority.defaults(id);
      if (defaults.defaultIssuer === row.issuer_id) {
        authority.core.handler.handle(
          streams.config(id),
          configDecider,
          () => [
            {
              type: 'PkiIssuersConfigured' as const,
              data: {
                mount: id,
                defaultIssuer: '',
                defaultFollowsLatestIssuer: defaults.defaultFollowsLatestIssuer,
              },
            },
          ],
          meta(ctx),
        );
        warnings.push(
          'Deleted issuer was the default issuer; a new default issuer has not been set',
        );
      }
    });
    if (warnings.length) send(ctx, null, warnings);
    else {
      ctx.status = 204;
      ctx.body = null;
    }
  });

  r.get('/config/issuers', (ctx) => {
    const d = authority.defaults(id);
    send(ctx, {
      default: d.defaultIssuer,
      default_follows_latest_issuer: d.defaultFollowsLatestIssuer,
    });
  });
  const setDefault = (fallback: string) => (ctx: Context) => {
    const b = fields(ctx, fallback ? ROOT_REPLACE : CONFIG_ISSUERS);
    const current = authority.defaults(id);
    const ref = (b.get('default') ?? '') || fallback;
    const issuerId = ref ? authority.resolveIssuer(id, ref).issuer_id : current.defaultIssuer;
    const follows = b.get('default_follows_latest_issuer') ?? current.defaultFollowsLatestIssuer;
    authority.core.handler.handle(
      streams.config(id),
      configDecider,
      () => [
        {
          type: 'PkiIssuersConfigured' as const,
          data: { mount: id, defaultIssuer: issuerId, defaultFollowsLatestIssuer: follows },
        },
      ],
      meta(ctx),
    );
    reply(ctx, b, { default: issuerId, default_follows_latest_issuer: follows });
  };
  r.post('/config/issuers', setDefault(''));
  // root/replace makes an issuer (by default the one named "next") the default.
  r.post('/root/replace', setDefault('next'));

  r.delete('/root', (ctx) => {
    authority.atomically(() => {
      for (const row of authority.q.issuers(id)) {
        authority.core.handler.handle(
          streams.issuer(id, row.issuer_id),
          issuerDecider,
          () => [
            { type: 'PkiIssuerDeleted' as const, data: { mount: id, issuerId: row.issuer_id } },
          ],
          meta(ctx),
        );
      }
      for (const key of authority.q.keys(id)) {
        authority.core.handler.handle(
          streams.key(id, key.key_id),
          keyDecider,
          () => [{ type: 'PkiKeyDeleted' as const, data: { mount: id, keyId: key.key_id } }],
          meta(ctx),
        );
      }
      authority.core.handler.handle(
        streams.config(id),
        configDecider,
        () => [
          {
            type: 'PkiIssuersConfigured' as const,
            data: {
              mount: id,
              defaultIssuer: '',
              defaultFollowsLatestIssuer: authority.defaults(id).defaultFollowsLatestIssuer,
            },
          },
          { type: 'PkiKeysConfigured' as const, data: { mount: id, defaultKey: '' } },
        ],
        meta(ctx),
      );
    });
    send(ctx, null, [
      'DELETE /root deletes all keys and issuers; prefer the new multi-issuer directives (DELETE /issuer/:ref and DELETE /key/:ref) for finer control',
    ]);
  });
}
