import { ValidationError } from '../../../core/errors.js';
import type { Sealed } from '../../../core/seal.js';
import { compile } from '@jmespath-community/jmespath';
import { field, declarePath, type FieldData } from '../../fields.js';
import { pemBlocks } from '../../../x509/certificate.js';
import { parsePrivateKey } from '../../../x509/keys.js';
import { keysMatch } from '../../../x509/keys.js';
import { parseCertificate } from '../../../x509/parse.js';

/**
 * `config/external-policy`: where the certificate issuance policy service (the reference's CIEPS)
 * is, how Keel trusts it and proves itself to it, how long it waits, and which parts of the
 * caller's identity it sends. The client key is sealed in the event.
 */
export const CONFIG_EXTERNAL_POLICY = declarePath({
  pattern: 'config/external-policy',
  summary: 'Read or set the external certificate issuance policy service',
  operations: ['read', 'update'],
  fields: {
    enabled: field.bool('Send external-policy requests to the service'),
    external_service_url: field.string('The service URL (https)'),
    trusted_ca: field.string('PEM CA certificates the service chain must lead to'),
    trusted_leaf_certificate_bundle: field.string(
      "PEM certificates the service's own certificate must be one of",
    ),
    vault_client_cert_bundle: field.string(
      'PEM client certificate and its private key Keel presents to the service',
    ),
    timeout: field.duration('How long one consultation may take (15s)'),
    entity_jmespath: field.map('Identity values to send: name → JMESPath over the caller'),
    group_jmespath: field.map("Identity values to send: name → JMESPath over the caller's groups"),
  },
});

/** The stored configuration (as in `PkiExternalPolicyConfigured`). */
export interface ExternalPolicyConfig {
  enabled: boolean;
  url: string;
  trustedCa: string;
  trustedLeaves: string;
  /** the client certificate chain (PEM), without its key */
  clientCertificates: string;
  /** the client private key (PEM), sealed; undefined without a client certificate */
  clientKey?: Sealed;
  timeoutSeconds: number;
  entityJmespath: Record<string, string>;
  groupJmespath: Record<string, string>;
  /** ISO time of the last write */
  updatedAt: string;
}

export const DEFAULT_TIMEOUT_SECONDS = 15;

export const defaultExternalPolicy = (): ExternalPolicyConfig => ({
  enabled: false,
  url: '',
  trustedCa: '',
  trustedLeaves: '',
  clientCertificates: '',
  timeoutSeconds: DEFAULT_TIMEOUT_SECONDS,
  entityJmespath: {},
  groupJmespath: {},
  updatedAt: '',
});

/** PEM certificates, each read strictly; '' stays ''. */
function certificates(text: string, what: string): string {
  if (!text.trim()) return '';
  const blocks = pemBlocks(text).filter((b) => b.label === 'CERTIFICATE');
  if (blocks.length === 0) throw new ValidationError(`${what} holds no PEM certificate`);
  for (const b of blocks) parseCertificate(b.der);
  return text.trim();
}

function expressions(map: Record<string, unknown>, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(map)) {
    if (typeof value !== 'string')
      throw new ValidationError(
        `${name}: the expression for ${JSON.stringify(key)} is not a string`,
      );
    try {
      compile(value);
    } catch (e) {
      throw new ValidationError(
        `${name}: ${JSON.stringify(key)} is not a JMESPath expression: ${(e as Error).message}`,
      );
    }
    out[key] = value;
  }
  return out;
}

/**
 * The configuration after a write: fields not sent keep their values. The URL must be https,
 * trust must be given when enabled (the service's own CA or its pinned certificate; the system's
 * store is not trusted for a policy decision), and a client bundle needs its matching key.
 */
export function nextExternalPolicy(
  current: ExternalPolicyConfig,
  b: FieldData<typeof CONFIG_EXTERNAL_POLICY.fields>,
  now: Date,
  seal: (plain: string) => Sealed,
): ExternalPolicyConfig {
  const next: ExternalPolicyConfig = {
    ...current,
    enabled: b.get('enabled') ?? current.enabled,
    url: (b.get('external_service_url') ?? current.url).trim(),
    trustedCa:
      b.get('trusted_ca') === undefined
        ? current.trustedCa
        : certificates(b.get('trusted_ca') ?? '', 'trusted_ca'),
    trustedLeaves:
      b.get('trusted_leaf_certificate_bundle') === undefined
        ? current.trustedLeaves
        : certificates(
            b.get('trusted_leaf_certificate_bundle') ?? '',
            'trusted_leaf_certificate_bundle',
          ),
    timeoutSeconds: b.get('timeout') ?? current.timeoutSeconds,
    entityJmespath:
      b.get('entity_jmespath') === undefined
        ? current.entityJmespath
        : expressions(b.get('entity_jmespath') ?? {}, 'entity_jmespath'),
    groupJmespath:
      b.get('group_jmespath') === undefined
        ? current.groupJmespath
        : expressions(b.get('group_jmespath') ?? {}, 'group_jmespath'),
    updatedAt: now.toISOString(),
  };
  const bundle = b.get('vault_client_cert_bundle');
  if (bundle !== undefined) {
    if (!bundle.trim()) {
      next.clientCertificates = '';
      delete next.clientKey;
    } else {
      const certs = pemBlocks(bundle).filter((x) => x.label === 'CERTIFICATE');
      const keys = pemBlocks(bundle).filter((x) => /PRIVATE KEY$/.test(x.label));
      if (certs.length === 0 || keys.length !== 1)
        throw new ValidationError(
          'vault_client_cert_bundle must hold the client certificate (and its chain) and exactly one private key',
        );
      const keyPem = `-----BEGIN ${keys[0]!.label}-----\n${keys[0]!.der.toString('base64')}\n-----END ${keys[0]!.label}-----\n`;
      const key = parsePrivateKey(keyPem);
      const leaf = parseCertificate(certs[0]!.der);
      if (!keysMatch(key, leaf.publicKey))
        throw new ValidationError(
          'vault_client_cert_bundle: the private key does not match the first certificate',
        );
      next.clientCertificates = certs
        .map(
          (c) =>
            `-----BEGIN CERTIFICATE-----\n${c.der.toString('base64')}\n-----END CERTIFICATE-----`,
        )
        .join('\n');
      next.clientKey = seal(keyPem);
    }
  }
  if (!Number.isFinite(next.timeoutSeconds) || next.timeoutSeconds <= 0)
    throw new ValidationError('timeout must be positive');
  if (next.url) {
    let url: URL;
    try {
      url = new URL(next.url);
    } catch {
      throw new ValidationError(`external_service_url is not a URL: ${next.url}`);
    }
    if (url.protocol !== 'https:')
      throw new ValidationError(
        'external_service_url must use https: the service is trusted over TLS only',
      );
  }
  if (next.enabled) {
    if (!next.url) throw new ValidationError('external_service_url is required when enabled');
    if (!next.trustedCa && !next.trustedLeaves)
      throw new ValidationError(
        'trusted_ca or trusted_leaf_certificate_bundle is required when enabled: Keel does not trust the system store for a policy service',
      );
  }
  return next;
}

/** The read view, in the reference's field names (timeout in nanoseconds, as it answers). */
export function externalPolicyView(
  c: ExternalPolicyConfig,
  lastSuccess: string | undefined,
): Record<string, unknown> {
  return {
    enabled: c.enabled,
    external_service_url: c.url,
    trusted_ca: c.trustedCa,
    trusted_leaf_certificate_bundle: c.trustedLeaves,
    vault_client_cert_bundle_no_keys: c.clientCertificates,
    timeout: c.timeoutSeconds * 1e9,
    entity_jmespath: c.entityJmespath,
    group_jmespath: c.groupJmespath,
    external_service_last_updated: c.updatedAt,
    external_service_validated: lastSuccess !== undefined,
    last_successful_request: lastSuccess ?? '',
  };
}
