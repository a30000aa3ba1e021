import type { Decider } from '../../../core/command-handler.js';
import type { AuditMetadata, NewEvent } from '../../../core/events.js';
import { machineDecider } from '../../../core/machine-decider.js';
import { acmeAccountMachine } from '../../../../machines/acme-account.machine.js';
import { acmeAuthorizationMachine } from '../../../../machines/acme-authorization.machine.js';
import { acmeChallengeMachine } from '../../../../machines/acme-challenge.machine.js';
import { acmeOrderMachine } from '../../../../machines/acme-order.machine.js';
import type { Logger } from '../../../core/logger.js';
import type { Authority } from '../authority.js';
import type { AcmeConfig, AcmeSettingsEvent, ClusterConfig } from './events.js';
import { acmeStreams } from './events.js';
import { Nonces } from './nonces.js';
import { AcmeQueries } from './projection.js';

export const accountDecider = machineDecider(acmeAccountMachine);
export const orderDecider = machineDecider(acmeOrderMachine);
export const authorizationDecider = machineDecider(acmeAuthorizationMachine);
export const challengeDecider = machineDecider(acmeChallengeMachine);

/** The settings stream has no lifecycle; the commands check what they need (an EAB key exists). */
export const settingsDecider: Decider<null, AcmeSettingsEvent & NewEvent> = {
  initialState: () => null,
  evolve: () => null,
};

/** The defaults of `config/acme` (the reference's). */
export const DEFAULT_ACME_CONFIG: AcmeConfig = {
  enabled: false,
  allowed_issuers: ['*'],
  allowed_roles: ['*'],
  allow_role_ext_key_usage: false,
  default_directory_policy: 'sign-verbatim',
  dns_resolver: '',
  eab_policy: 'not-required',
};

/** Metadata of a request signed by an ACME account (no token: the account is the actor). */
export const accountMetadata = (
  accountId: string,
  requestId: string | null,
  remoteAddress: string | null,
): AuditMetadata => ({
  actor: { accessor: `acme-account:${accountId}`, name: 'acme' },
  requestId,
  remoteAddress,
});

/** What the ACME server shares across routes, the validator and the tests: queries and nonces. */
export class AcmeService {
  readonly authority: Authority;
  readonly nonces: Nonces;
  #q: AcmeQueries | undefined;
  /** how validations reach the client's servers (ports are configurable for tests) */
  readonly ports: { http: number; tls: number };
  readonly logger: Logger;
  /** schedule keys whose validation is running in this process (the row stays the truth) */
  readonly validating = new Set<string>();

  constructor(authority: Authority, ports: { http: number; tls: number }, logger: Logger) {
    this.authority = authority;
    this.logger = logger;
    this.nonces = new Nonces(authority.core.clock);
    this.ports = ports;
  }

  get q(): AcmeQueries {
    this.#q ??= new AcmeQueries(this.authority.core.db);
    return this.#q;
  }

  config = (mount: string): AcmeConfig => ({
    ...DEFAULT_ACME_CONFIG,
    ...this.q.config<AcmeConfig>(mount, 'acme'),
  });

  cluster = (mount: string): ClusterConfig =>
    this.q.config<ClusterConfig>(mount, 'cluster') ?? { path: '', aia_path: '' };

  now = (): Date => this.authority.core.clock.now();

  /** Records a change of the mount's ACME settings (cluster URLs, ACME config, EAB keys). */
  recordSetting(mount: string, event: AcmeSettingsEvent, meta: AuditMetadata): void {
    this.authority.core.handler.handle(
      acmeStreams.settings(mount),
      settingsDecider,
      () => [event],
      meta,
    );
  }
}
