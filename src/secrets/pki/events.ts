import { streamName } from '../../core/streams.js';
import type { Sealed } from '../../core/seal.js';
import type { CertificateEvent } from '../../../machines/certificate.machine.js';
import type { Role } from './role.js';
import type { LeafNotAfterBehavior } from './ttl.js';
import type { UrlConfig } from './issuance.js';
import type { ExternalPolicyConfig } from './external-policy/config.js';

export type { CertificateEvent } from '../../../machines/certificate.machine.js';

/** Every event carries the mount's accessor, so one read model serves every mount. */
interface OnMount {
  mount: string;
}

export type RoleEvent =
  | { type: 'PkiRoleWritten'; data: OnMount & { name: string; role: Role } }
  | { type: 'PkiRoleDeleted'; data: OnMount & { name: string } };

/** A CA key; the private key is sealed at rest and never readable through the API. */
export interface KeyCreatedData extends OnMount {
  keyId: string;
  name: string;
  keyType: 'rsa' | 'ec' | 'ed25519';
  keyBits: number;
  privateKey: Sealed;
  /** SubjectPublicKeyInfo, base64 DER: lets issuers be matched to keys without unsealing */
  publicKey: string;
}

export type KeyEvent =
  | { type: 'PkiKeyCreated'; data: KeyCreatedData }
  | { type: 'PkiKeyRenamed'; data: OnMount & { keyId: string; name: string } }
  | { type: 'PkiKeyDeleted'; data: OnMount & { keyId: string } };

/** The settable part of an issuer (`POST /issuer/:ref`). */
export interface IssuerSettings {
  name: string;
  leafNotAfterBehavior: LeafNotAfterBehavior;
  usage: string[];
  manualChain: string[];
  revocationSignatureAlgorithm: string;
  issuingCertificates: string[];
  crlDistributionPoints: string[];
  ocspServers: string[];
  /** set once `issuer/:ref/revoke` has revoked it (ISO time) */
  revokedAt?: string;
}

export interface IssuerCreatedData extends OnMount, IssuerSettings {
  issuerId: string;
  /** '' when the mount holds no key for this certificate */
  keyId: string;
  certificate: string;
  serial: string;
  notAfter: string;
  /** the issuer's SubjectPublicKeyInfo, base64 DER */
  publicKey: string;
}

export type IssuerEvent =
  | { type: 'PkiIssuerCreated'; data: IssuerCreatedData }
  | { type: 'PkiIssuerUpdated'; data: OnMount & IssuerSettings & { issuerId: string } }
  | { type: 'PkiIssuerKeyLinked'; data: OnMount & { issuerId: string; keyId: string } }
  | { type: 'PkiIssuerDeleted'; data: OnMount & { issuerId: string } };

/** CRL settings (`config/crl`). */
export interface CrlConfig {
  expiry: number;
  disable: boolean;
  ocsp_disable: boolean;
  ocsp_expiry: number;
  auto_rebuild: boolean;
  auto_rebuild_grace_period: number;
  enable_delta: boolean;
  delta_rebuild_interval: number;
  allow_expired_cert_revocation: boolean;
}

/** The defaults of `config/crl` (research §2.2). */
export const DEFAULT_CRL_CONFIG: CrlConfig = {
  expiry: 72 * 3600,
  disable: false,
  ocsp_disable: false,
  ocsp_expiry: 12 * 3600,
  auto_rebuild: false,
  auto_rebuild_grace_period: 12 * 3600,
  enable_delta: false,
  delta_rebuild_interval: 15 * 60,
  allow_expired_cert_revocation: false,
};

/**
 * Whether a `config/crl` change shows in every issuer's CRL or its rebuild schedule (expiry,
 * disable, auto-rebuild and its grace period, deltas), so that each CRL is built again.
 */
export const crlShapeChanged = (before: CrlConfig, after: CrlConfig): boolean =>
  after.disable !== before.disable ||
  after.expiry !== before.expiry ||
  after.auto_rebuild !== before.auto_rebuild ||
  after.auto_rebuild_grace_period !== before.auto_rebuild_grace_period ||
  after.enable_delta !== before.enable_delta;

/** Tidy's outcome, served by `tidy-status`. */
/** What a tidy run does. */
export interface TidyParams {
  safetyBuffer: number;
  tidyCertStore: boolean;
  tidyRevokedCerts: boolean;
}

export interface TidyResult extends TidyParams {
  startedAt: string;
  finishedAt: string;
  certStoreDeleted: number;
  revokedCertDeleted: number;
  /** absent (an older event) means Finished */
  state?: 'Finished' | 'Cancelled';
}

/** `config/auto-tidy`: a tidy every `interval_duration` seconds while enabled. */
export interface AutoTidyConfig {
  enabled: boolean;
  interval_duration: number;
  safety_buffer: number;
  tidy_cert_store: boolean;
  tidy_revoked_certs: boolean;
}

export type ConfigEvent =
  | { type: 'PkiUrlsConfigured'; data: OnMount & { urls: UrlConfig } }
  | { type: 'PkiCrlConfigured'; data: OnMount & { config: CrlConfig } }
  | {
      type: 'PkiIssuersConfigured';
      data: OnMount & { defaultIssuer: string; defaultFollowsLatestIssuer: boolean };
    }
  | { type: 'PkiKeysConfigured'; data: OnMount & { defaultKey: string } }
  | { type: 'PkiTidyStarted'; data: OnMount & TidyParams & { startedAt: string; auto: boolean } }
  | { type: 'PkiTidied'; data: OnMount & TidyResult }
  | { type: 'PkiAutoTidyConfigured'; data: OnMount & { config: AutoTidyConfig } }
  | { type: 'PkiExternalPolicyConfigured'; data: OnMount & { config: ExternalPolicyConfig } };

/**
 * One consultation of the external policy service: what was asked (the request document, which
 * holds no private key) and what came of it. `approved` events are followed, in the same
 * transaction, by the `CertificateIssued` they led to.
 */
export interface ConsultationData extends OnMount {
  requestUuid: string;
  mode: 'issue' | 'sign' | 'ica';
  /** the `/:policy` segment, '' without one */
  policy: string;
  /** the document sent, as sent */
  request: Record<string, unknown>;
  outcome: 'approved' | 'refused' | 'failed';
  /** the service's answer as read ('' when there was none), or why none could be used */
  answer: string;
  detail: string;
  /** the serial signed on an approval */
  serial: string;
}

export type ConsultationEvent = { type: 'PkiExternalPolicyConsulted'; data: ConsultationData };

/**
 * A certificate's lease (`generate_lease`) was revoked: it ends here, whether or not the
 * certificate was revoked before (a `revoke` of the certificate leaves its lease as it is).
 */
export type LeaseEvent = {
  type: 'PkiLeaseRevoked';
  data: OnMount & { serial: string; leaseId: string; revokedAt: string };
};

/** A CRL signed by one issuer; the DER is in the event so a replay restores the exact bytes. */
export interface CrlBuiltData extends OnMount {
  issuerId: string;
  number: number;
  thisUpdate: string;
  nextUpdate: string;
  /** base64 DER */
  crl: string;
  /**
   * The log's position the revoked list was read at: every revocation up to it is on the CRL.
   * Absent in CRLs built inside their revocation's command, which saw everything before them.
   */
  asOf?: number;
}

/** A delta CRL: what was revoked since the complete CRL `baseNumber`, in the same numbering. */
export interface DeltaCrlBuiltData extends CrlBuiltData {
  baseNumber: number;
}

export type CrlEvent =
  | { type: 'PkiCrlBuilt'; data: CrlBuiltData }
  | { type: 'PkiDeltaCrlBuilt'; data: DeltaCrlBuiltData };

/** Every event of the certificate authority context. */
export type PkiEvent =
  | CertificateEvent
  | RoleEvent
  | KeyEvent
  | IssuerEvent
  | ConfigEvent
  | CrlEvent
  | ConsultationEvent
  | LeaseEvent;

/**
 * Stream names: one per serial, role, key, issuer and CRL; one for the mount's configuration; one
 * per leased certificate for the end of its lease.
 */
export const streams = {
  cert: streamName`pki/${'mount'}/cert/${'serial'}`,
  role: streamName`pki/${'mount'}/role/${'name'}`,
  key: streamName`pki/${'mount'}/key/${'keyId'}`,
  issuer: streamName`pki/${'mount'}/issuer/${'issuerId'}`,
  crl: streamName`pki/${'mount'}/crl/${'issuerId'}`,
  config: streamName`pki/${'mount'}/config`,
  consultation: streamName`pki/${'mount'}/consultation/${'requestUuid'}`,
  lease: streamName`pki/${'mount'}/lease/${'serial'}`,
};

/** The event types this context owns. */
export const PKI_EVENT_TYPES: readonly PkiEvent['type'][] = [
  'CertificateIssued',
  'CertificateRevoked',
  'CertificateDeleted',
  'PkiRoleWritten',
  'PkiRoleDeleted',
  'PkiKeyCreated',
  'PkiKeyRenamed',
  'PkiKeyDeleted',
  'PkiIssuerCreated',
  'PkiIssuerUpdated',
  'PkiIssuerKeyLinked',
  'PkiIssuerDeleted',
  'PkiUrlsConfigured',
  'PkiCrlConfigured',
  'PkiIssuersConfigured',
  'PkiKeysConfigured',
  'PkiTidied',
  'PkiCrlBuilt',
  'PkiDeltaCrlBuilt',
  'PkiTidyStarted',
  'PkiAutoTidyConfigured',
  'PkiExternalPolicyConfigured',
  'PkiExternalPolicyConsulted',
  'PkiLeaseRevoked',
];
