import { streamName } from '../../../core/streams.js';
import type { Sealed } from '../../../core/seal.js';
import type { AcmeAccountEvent } from '../../../../machines/acme-account.machine.js';
import type { AcmeAuthorizationEvent } from '../../../../machines/acme-authorization.machine.js';
import type { AcmeChallengeEvent } from '../../../../machines/acme-challenge.machine.js';
import type { AcmeOrderEvent } from '../../../../machines/acme-order.machine.js';

export type { AcmeAccountEvent } from '../../../../machines/acme-account.machine.js';
export type { AcmeAuthorizationEvent } from '../../../../machines/acme-authorization.machine.js';
export type {
  AcmeChallengeEvent,
  AcmeChallengeType,
} from '../../../../machines/acme-challenge.machine.js';
export type { AcmeIdentifier, AcmeOrderEvent } from '../../../../machines/acme-order.machine.js';

/** `config/cluster`: the addresses ACME URLs and AIA URLs are built from. */
export interface ClusterConfig {
  path: string;
  aia_path: string;
}

export type EabPolicy = 'not-required' | 'new-account-required' | 'always-required';

/** `config/acme`. */
export interface AcmeConfig {
  enabled: boolean;
  allowed_issuers: string[];
  allowed_roles: string[];
  allow_role_ext_key_usage: boolean;
  default_directory_policy: string;
  dns_resolver: string;
  eab_policy: EabPolicy;
}

/** The mount's ACME settings and external account binding keys, on one stream. */
export type AcmeSettingsEvent =
  | { type: 'PkiClusterConfigured'; data: { mount: string; config: ClusterConfig } }
  | { type: 'PkiAcmeConfigured'; data: { mount: string; config: AcmeConfig } }
  | {
      type: 'AcmeEabKeyCreated';
      data: {
        mount: string;
        eabId: string;
        /** the HMAC key, sealed */
        key: Sealed;
        directory: string;
        createdOn: string;
      };
    }
  | { type: 'AcmeEabKeyUsed'; data: { mount: string; eabId: string; accountId: string } }
  | { type: 'AcmeEabKeyDeleted'; data: { mount: string; eabId: string } };

export type AcmeEvent =
  | AcmeSettingsEvent
  | AcmeAccountEvent
  | AcmeOrderEvent
  | AcmeAuthorizationEvent
  | AcmeChallengeEvent;

export const ACME_EVENT_TYPES: readonly AcmeEvent['type'][] = [
  'PkiClusterConfigured',
  'PkiAcmeConfigured',
  'AcmeEabKeyCreated',
  'AcmeEabKeyUsed',
  'AcmeEabKeyDeleted',
  'AcmeAccountCreated',
  'AcmeAccountUpdated',
  'AcmeAccountKeyChanged',
  'AcmeAccountDeactivated',
  'AcmeOrderCreated',
  'AcmeOrderReady',
  'AcmeOrderIssued',
  'AcmeOrderInvalidated',
  'AcmeAuthorizationCreated',
  'AcmeAuthorizationValidated',
  'AcmeAuthorizationInvalidated',
  'AcmeAuthorizationDeactivated',
  'AcmeChallengeOffered',
  'AcmeChallengeStarted',
  'AcmeChallengeAttemptFailed',
  'AcmeChallengeValidated',
  'AcmeChallengeFailed',
];

/** Stream names, beside the engine's others under `pki/<mount>/`. */
export const acmeStreams = {
  settings: streamName`pki/${'mount'}/acme-settings`,
  account: streamName`pki/${'mount'}/acme-account/${'accountId'}`,
  order: streamName`pki/${'mount'}/acme-order/${'orderId'}`,
  authorization: streamName`pki/${'mount'}/acme-authz/${'authzId'}`,
  challenge: streamName`pki/${'mount'}/acme-challenge/${'authzId'}/${'type'}`,
};
