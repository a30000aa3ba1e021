import { ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import { durationSeconds } from '../duration.js';
import type { FieldData } from '../fields.js';
import type { Authority } from './authority.js';
import { rebuildAllCrls, rebuildAllDeltaCrls } from './crls.js';
import { configDecider } from './deciders.js';
import { crlShapeChanged, streams, type CrlConfig } from './events.js';
import type { UrlConfig } from './issuance.js';
import type { CONFIG_CRL, CONFIG_URLS } from './paths.js';
import {
  nextExternalPolicy,
  type CONFIG_EXTERNAL_POLICY,
  type ExternalPolicyConfig,
} from './external-policy/config.js';
import { externalPolicyOf } from './external-policy/issue.js';
import { durationText } from './role.js';

/** The mount's URL and CRL settings and CRL rebuilds: validated, then recorded. */
export class PkiSettings {
  constructor(readonly authority: Authority) {}

  /** `config/urls`: fields not sent keep their values; every URL must parse. */
  setUrls(
    mount: string,
    b: FieldData<typeof CONFIG_URLS.fields>,
    meta: AuditMetadata,
  ): Promise<UrlConfig> {
    return this.authority.run(() => {
      const current = this.authority.urls(mount);
      const urls: UrlConfig = {
        issuing_certificates: b.get('issuing_certificates') ?? current.issuing_certificates,
        crl_distribution_points:
          b.get('crl_distribution_points') ?? current.crl_distribution_points,
        ocsp_servers: b.get('ocsp_servers') ?? current.ocsp_servers,
        delta_crl_distribution_points:
          b.get('delta_crl_distribution_points') ?? current.delta_crl_distribution_points ?? [],
      };
      for (const u of [
        ...urls.issuing_certificates,
        ...urls.crl_distribution_points,
        ...urls.ocsp_servers,
        ...(urls.delta_crl_distribution_points ?? []),
      ]) {
        if (!URL.canParse(u)) throw new ValidationError(`invalid URL: ${u}`);
      }
      this.authority.append(
        streams.config(mount),
        configDecider,
        () => [{ type: 'PkiUrlsConfigured' as const, data: { mount, urls } }],
        meta,
      );
      return urls;
    });
  }

  /** `config/external-policy`: fields not sent keep their values; the client key is sealed. */
  setExternalPolicy(
    mount: string,
    b: FieldData<typeof CONFIG_EXTERNAL_POLICY.fields>,
    meta: AuditMetadata,
  ): Promise<ExternalPolicyConfig> {
    return this.authority.run(() => {
      const core = this.authority.core;
      const config = nextExternalPolicy(
        externalPolicyOf(this.authority, mount),
        b,
        core.clock.now(),
        (plain) => core.sealer.seal(plain),
      );
      this.authority.append(
        streams.config(mount),
        configDecider,
        () => [{ type: 'PkiExternalPolicyConfigured' as const, data: { mount, config } }],
        meta,
      );
      return config;
    });
  }

  /** `config/crl`: fields not sent keep their values; a change that shows in CRLs rebuilds them. */
  setCrl(
    mount: string,
    b: FieldData<typeof CONFIG_CRL.fields>,
    meta: AuditMetadata,
  ): Promise<CrlConfig> {
    return this.authority.run(() => {
      const c = this.authority.crlConfig(mount);
      const d = (field: 'ocsp_expiry' | 'auto_rebuild_grace_period' | 'delta_rebuild_interval') =>
        b.get(field) ?? c[field];
      // The reference reads expiry as text and decodes it itself, with its own words.
      const expiryText = b.get('expiry');
      let expiry = c.expiry;
      if (expiryText !== undefined) {
        const seconds = durationSeconds(expiryText, { days: true });
        if (seconds === null)
          throw new ValidationError(
            `given expiry could not be decoded: time: invalid duration ${JSON.stringify(expiryText)}`,
          );
        expiry = seconds;
      }
      const next: CrlConfig = {
        expiry,
        disable: b.get('disable') ?? c.disable,
        ocsp_disable: b.get('ocsp_disable') ?? c.ocsp_disable,
        ocsp_expiry: d('ocsp_expiry'),
        auto_rebuild: b.get('auto_rebuild') ?? c.auto_rebuild,
        auto_rebuild_grace_period: d('auto_rebuild_grace_period'),
        enable_delta: b.get('enable_delta') ?? c.enable_delta,
        delta_rebuild_interval: d('delta_rebuild_interval'),
        allow_expired_cert_revocation:
          b.get('allow_expired_cert_revocation') ?? c.allow_expired_cert_revocation,
      };
      if (next.expiry <= 0)
        throw new ValidationError('given expiry could not be decoded: expiry must be positive');
      if (next.auto_rebuild && next.auto_rebuild_grace_period >= next.expiry) {
        throw new ValidationError(
          `CRL auto-rebuilding grace period (${durationText(next.auto_rebuild_grace_period)}) must be strictly shorter than CRL expiry (${durationText(next.expiry)}) value when auto-rebuilding of CRLs is enabled`,
        );
      }
      // The reference's community edition refuses these with these messages.
      if (b.get('cross_cluster_revocation') ?? false)
        throw new ValidationError(
          'Global, cross-cluster revocation queue (cross_cluster_revocation) can only be enabled on an enterprise edition.',
        );
      if (b.get('unified_crl') ?? false)
        throw new ValidationError('unified_crl can only be enabled on an enterprise edition');
      if (b.get('unified_crl_on_existing_paths') ?? false)
        throw new ValidationError(
          'unified_crl_on_existing_paths cannot be enabled if unified_crl is disabled',
        );
      if (next.enable_delta && !next.auto_rebuild)
        throw new ValidationError(
          'Delta CRLs cannot be enabled when auto rebuilding is disabled as the complete CRL is always regenerated!',
        );
      this.authority.append(
        streams.config(mount),
        configDecider,
        () => [{ type: 'PkiCrlConfigured' as const, data: { mount, config: next } }],
        meta,
      );
      // A change that shows in every issuer's CRL (or its schedule) rebuilds them at once.
      if (crlShapeChanged(c, next)) rebuildAllCrls(this.authority, mount, meta);
      return next;
    });
  }

  /** `crl/rotate`: every issuer's CRL rebuilt now. */
  rotateCrls(mount: string, meta: AuditMetadata): Promise<void> {
    return this.authority.run(() => rebuildAllCrls(this.authority, mount, meta));
  }

  /** `crl/rotate-delta`: every delta CRL rebuilt now; false (nothing done) when deltas are off. */
  rotateDeltaCrls(mount: string, meta: AuditMetadata): Promise<boolean> {
    return this.authority.run(() => {
      if (!this.authority.crlConfig(mount).enable_delta) return false;
      rebuildAllDeltaCrls(this.authority, mount, meta);
      return true;
    });
  }
}
