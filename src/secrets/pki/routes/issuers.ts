import type Router from '@koa/router';
import type { Context } from 'koa';
import { NotFoundError } from '../../../core/errors.js';
import type { Authority } from '../authority.js';
import type { PkiService } from '../service.js';
import { generateIntermediate, generateRoot, importBundle } from '../ca.js';
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
import { fields, meta, param, reply, send, sendKeys, type RouteScope } from './common.js';

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
export function issuerRoutes(r: Router, pki: PkiService, { id }: RouteScope): void {
  const { authority } = pki;
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
    r.post(`/${path.pattern}`, async (ctx) => {
      const d = fields(ctx, path);
      const out = await importBundle(
        authority,
        id,
        meta(ctx),
        d.get('pem_bundle') ?? '',
        allowKeys,
      );
      reply(ctx, d, out.data, out.warnings);
    });
  }
  r.post('/intermediate/set-signed', async (ctx) => {
    const d = fields(ctx, SET_SIGNED);
    const out = await importBundle(authority, id, meta(ctx), d.get('certificate') ?? '', false);
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

  const update = (patch: boolean) => async (ctx: Context) => {
    const d = fields(ctx, ISSUER);
    const updated = await pki.updateIssuer(id, d, patch, meta(ctx));
    reply(ctx, d, updated ? issuerView(authority, id, updated) : null);
  };
  r.post('/issuer/:ref', update(false));
  r.patch('/issuer/:ref', update(true));
  r.post('/issuer/:ref/revoke', async (ctx) => {
    const updated = await pki.revokeIssuer(id, param(ctx, 'ref'), meta(ctx));
    send(ctx, updated ? issuerView(authority, id, updated) : null);
  });
  r.delete('/issuer/:ref', async (ctx) => {
    const warnings = await pki.deleteIssuer(id, param(ctx, 'ref'), meta(ctx));
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
  const setDefault = (fallback: string) => async (ctx: Context) => {
    const d = fields(ctx, fallback ? ROOT_REPLACE : CONFIG_ISSUERS);
    const set = await pki.setDefaultIssuer(id, d, fallback, meta(ctx));
    reply(ctx, d, { default: set.defaultIssuer, default_follows_latest_issuer: set.follows });
  };
  r.post('/config/issuers', setDefault(''));
  // root/replace makes an issuer (by default the one named "next") the default.
  r.post('/root/replace', setDefault('next'));

  r.delete('/root', async (ctx) => {
    await pki.deleteRoot(id, meta(ctx));
    send(ctx, null, [
      'DELETE /root deletes all keys and issuers; prefer the new multi-issuer directives (DELETE /issuer/:ref and DELETE /key/:ref) for finer control',
    ]);
  });
}
