import type Router from '@koa/router';
import type { Context } from 'koa';
import type { CrlConfig } from '../events.js';
import type { UrlConfig } from '../issuance.js';
import { durationText } from '../role.js';
import { CONFIG_CRL, CONFIG_URLS } from '../paths.js';
import { CONFIG_EXTERNAL_POLICY, externalPolicyView } from '../external-policy/config.js';
import { externalPolicyOf } from '../external-policy/issue.js';
import { fields, meta, reply, send, type RouteScope } from './common.js';
import type { PkiSettings } from '../settings.js';

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

/** `config/urls`, `config/crl`, `config/external-policy`, `crl/rotate` and `crl/rotate-delta`. */
export function configRoutes(r: Router, settings: PkiSettings, { id }: RouteScope): void {
  const { authority } = settings;
  const urlsView = (urls: UrlConfig) => ({
    ...urls,
    delta_crl_distribution_points: urls.delta_crl_distribution_points ?? [],
    enable_templating: false,
  });
  r.get('/config/urls', (ctx) => send(ctx, urlsView(authority.urls(id))));
  const setUrls = async (ctx: Context) => {
    const b = fields(ctx, CONFIG_URLS);
    reply(ctx, b, urlsView(await settings.setUrls(id, b, meta(ctx))));
  };
  r.post('/config/urls', setUrls);

  r.get('/config/crl', (ctx) => send(ctx, crlView(authority.crlConfig(id))));
  const setCrl = async (ctx: Context) => {
    const b = fields(ctx, CONFIG_CRL);
    reply(ctx, b, crlView(await settings.setCrl(id, b, meta(ctx))));
  };
  r.post('/config/crl', setCrl);

  const externalView = () =>
    externalPolicyView(
      externalPolicyOf(authority, id),
      authority.q.config<{ at: string }>(id, 'external-policy-success')?.at,
    );
  r.get('/config/external-policy', (ctx) => send(ctx, externalView()));
  r.post('/config/external-policy', async (ctx) => {
    const b = fields(ctx, CONFIG_EXTERNAL_POLICY);
    await settings.setExternalPolicy(id, b, meta(ctx));
    reply(ctx, b, externalView());
  });

  r.get('/crl/rotate-delta', async (ctx) => {
    const on = await settings.rotateDeltaCrls(id, meta(ctx));
    send(
      ctx,
      { success: true },
      on ? [] : ['requested rebuild of delta CRL when delta CRL is not enabled; this is a no-op'],
    );
  });
  r.get('/crl/rotate', async (ctx) => {
    await settings.rotateCrls(id, meta(ctx));
    send(ctx, { success: true });
  });
}
