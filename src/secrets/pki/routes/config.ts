import type { CrlConfig } from '../events.js';
import type { UrlConfig } from '../issuance.js';
import { durationText } from '../role.js';
import { CONFIG_CRL, CONFIG_URLS } from '../paths.js';
import { segmentsOnly } from '../../fields.js';
import { CONFIG_EXTERNAL_POLICY, externalPolicyView } from '../external-policy/config.js';
import { externalPolicyOf } from '../external-policy/issue.js';
import { meta, pkiRoute, reply, send, type PkiScope } from './common.js';

/** `config/urls`, `config/crl`, `config/external-policy`, `crl/rotate` and `crl/rotate-delta`. */

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

const urlsView = (urls: UrlConfig) => ({
  ...urls,
  delta_crl_distribution_points: urls.delta_crl_distribution_points ?? [],
  enable_templating: false,
});

export const CONFIG_URLS_ROUTE = pkiRoute(CONFIG_URLS, {
  read: (ctx, { authority, id }) => send(ctx, urlsView(authority.urls(id))),
  update: async (ctx, { settings, id }, parse) => {
    const b = parse();
    reply(ctx, b, urlsView(await settings.setUrls(id, b, meta(ctx))));
  },
});

export const CONFIG_CRL_ROUTE = pkiRoute(CONFIG_CRL, {
  read: (ctx, { authority, id }) => send(ctx, crlView(authority.crlConfig(id))),
  update: async (ctx, { settings, id }, parse) => {
    const b = parse();
    reply(ctx, b, crlView(await settings.setCrl(id, b, meta(ctx))));
  },
});

const externalView = ({ authority, id }: PkiScope) =>
  externalPolicyView(
    externalPolicyOf(authority, id),
    authority.q.config<{ at: string }>(id, 'external-policy-success')?.at,
  );
export const CONFIG_EXTERNAL_POLICY_ROUTE = pkiRoute(CONFIG_EXTERNAL_POLICY, {
  read: (ctx, s) => send(ctx, externalView(s)),
  update: async (ctx, s, parse) => {
    const b = parse();
    await s.settings.setExternalPolicy(s.id, b, meta(ctx));
    reply(ctx, b, externalView(s));
  },
});

export const CRL_ROTATE_ROUTE = pkiRoute(
  segmentsOnly('crl/rotate', 'Rebuild every CRL', ['read']),
  {
    read: async (ctx, { settings, id }) => {
      await settings.rotateCrls(id, meta(ctx));
      send(ctx, { success: true });
    },
  },
);

export const CRL_ROTATE_DELTA_ROUTE = pkiRoute(
  segmentsOnly('crl/rotate-delta', 'Rebuild every delta CRL', ['read']),
  {
    read: async (ctx, { settings, id }) => {
      const on = await settings.rotateDeltaCrls(id, meta(ctx));
      send(
        ctx,
        { success: true },
        on ? [] : ['requested rebuild of delta CRL when delta CRL is not enabled; this is a no-op'],
      );
    },
  },
);
