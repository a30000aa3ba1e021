import type Router from '@koa/router';
import type { Context } from 'koa';
import { ValidationError } from '../../../core/errors.js';
import type { Authority } from '../authority.js';
import { configDecider } from '../deciders.js';
import { streams, type CrlConfig } from '../events.js';
import { bool, duration, list } from '../../fields.js';
import type { UrlConfig } from '../issuance.js';
import { durationText } from '../role.js';
import { input, meta, send, type RouteScope } from './common.js';
import { rebuildAllCrls, rebuildAllDeltaCrls } from '../crls.js';

const crlView = (c: CrlConfig) => ({
  ...c,
  // Enterprise-only in the reference, and refused on write as it refuses them.
  unified_crl: false,
  unified_crl_on_existing_paths: false,
  cross_cluster_revocation: false,
  expiry: durationText(c.expiry),
  ocsp_expiry: durationText(c.ocsp_expiry),
  auto_rebuild_grace_period: durationText(c.auto_rebuild_grace_period),
  delta_rebuild_interval: durationText(c.delta_rebuild_interval),
});

/** `config/urls`, `config/crl`, `crl/rotate` and `crl/rotate-delta`. */
export function configRoutes(r: Router, authority: Authority, { id }: RouteScope): void {
  const urlsView = (urls: UrlConfig) => ({
    ...urls,
    delta_crl_distribution_points: urls.delta_crl_distribution_points ?? [],
    enable_templating: false,
  });
  r.get('/config/urls', (ctx) => send(ctx, urlsView(authority.urls(id))));
  const setUrls = (ctx: Context) => {
    const b = input(ctx);
    const current = authority.urls(id);
    const urls: UrlConfig = {
      issuing_certificates:
        b.issuing_certificates === undefined
          ? current.issuing_certificates
          : list(b, 'issuing_certificates', []),
      crl_distribution_points:
        b.crl_distribution_points === undefined
          ? current.crl_distribution_points
          : list(b, 'crl_distribution_points', []),
      ocsp_servers:
        b.ocsp_servers === undefined ? current.ocsp_servers : list(b, 'ocsp_servers', []),
      delta_crl_distribution_points:
        b.delta_crl_distribution_points === undefined
          ? (current.delta_crl_distribution_points ?? [])
          : list(b, 'delta_crl_distribution_points', []),
    };
    for (const u of [
      ...urls.issuing_certificates,
      ...urls.crl_distribution_points,
      ...urls.ocsp_servers,
      ...(urls.delta_crl_distribution_points ?? []),
    ]) {
      if (!URL.canParse(u)) throw new ValidationError(`invalid URL: ${u}`);
    }
    authority.core.handler.handle(
      streams.config(id),
      configDecider,
      () => [{ type: 'PkiUrlsConfigured' as const, data: { mount: id, urls } }],
      meta(ctx),
    );
    send(ctx, urlsView(urls));
  };
  r.post('/config/urls', setUrls);

  r.get('/config/crl', (ctx) => send(ctx, crlView(authority.crlConfig(id))));
  const setCrl = (ctx: Context) => {
    const b = input(ctx);
    const c = authority.crlConfig(id);
    const d = (field: keyof CrlConfig) => {
      try {
        return duration(b, field) ?? (c[field] as number);
      } catch (e) {
        if (field === 'expiry')
          throw new ValidationError(`given expiry could not be decoded: ${(e as Error).message}`);
        throw e;
      }
    };
    const next: CrlConfig = {
      expiry: d('expiry'),
      disable: bool(b, 'disable', c.disable),
      ocsp_disable: bool(b, 'ocsp_disable', c.ocsp_disable),
      ocsp_expiry: d('ocsp_expiry'),
      auto_rebuild: bool(b, 'auto_rebuild', c.auto_rebuild),
      auto_rebuild_grace_period: d('auto_rebuild_grace_period'),
      enable_delta: bool(b, 'enable_delta', c.enable_delta),
      delta_rebuild_interval: d('delta_rebuild_interval'),
      allow_expired_cert_revocation: bool(
        b,
        'allow_expired_cert_revocation',
        c.allow_expired_cert_revocation,
      ),
    };
    if (next.expiry <= 0)
      throw new ValidationError('given expiry could not be decoded: expiry must be positive');
    if (next.auto_rebuild && next.auto_rebuild_grace_period >= next.expiry) {
      throw new ValidationError(
        `CRL auto-rebuilding grace period (${durationText(next.auto_rebuild_grace_period)}) must be strictly shorter than CRL expiry (${durationText(next.expiry)}) value when auto-rebuilding of CRLs is enabled`,
      );
    }
    // The reference's community edition refuses these with these messages.
    if (bool(b, 'cross_cluster_revocation', false))
      throw new ValidationError(
        'Global, cross-cluster revocation queue (cross_cluster_revocation) can only be enabled on an enterprise edition.',
      );
    if (bool(b, 'unified_crl', false))
      throw new ValidationError('unified_crl can only be enabled on an enterprise edition');
    if (bool(b, 'unified_crl_on_existing_paths', false))
      throw new ValidationError(
        'unified_crl_on_existing_paths cannot be enabled if unified_crl is disabled',
      );
    if (next.enable_delta && !next.auto_rebuild)
      throw new ValidationError(
        'Delta CRLs cannot be enabled when auto rebuilding is disabled as the complete CRL is always regenerated!',
      );
    authority.atomically(() => {
      authority.core.handler.handle(
        streams.config(id),
        configDecider,
        () => [{ type: 'PkiCrlConfigured' as const, data: { mount: id, config: next } }],
        meta(ctx),
      );
      // A change of expiry, disable or auto-rebuild shows in every issuer's CRL (and its schedule) at once.
      if (
        next.disable !== c.disable ||
        next.expiry !== c.expiry ||
        next.auto_rebuild !== c.auto_rebuild ||
        next.auto_rebuild_grace_period !== c.auto_rebuild_grace_period ||
        next.enable_delta !== c.enable_delta
      )
        rebuildAllCrls(authority, id, meta(ctx));
    });
    send(ctx, crlView(next));
  };
  r.post('/config/crl', setCrl);

  r.get('/crl/rotate-delta', (ctx) => {
    const on = authority.crlConfig(id).enable_delta;
    if (on) authority.atomically(() => rebuildAllDeltaCrls(authority, id, meta(ctx)));
    send(
      ctx,
      { success: true },
      on ? [] : ['requested rebuild of delta CRL when delta CRL is not enabled; this is a no-op'],
    );
  });
  r.get('/crl/rotate', (ctx) => {
    authority.atomically(() => {
      rebuildAllCrls(authority, id, meta(ctx));
    });
    send(ctx, { success: true });
  });
}
