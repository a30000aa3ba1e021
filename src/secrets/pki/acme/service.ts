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

const accountDecider = machineDecider(acmeAccountMachine);
const orderDecider = machineDecider(acmeOrderMachine);
const authorizationDecider = machineDecider(acmeAuthorizationMachine);
const challengeDecider = machineDecider(acmeChallengeMachine);

/** The settings stream has no lifecycle; the commands check what they need (an EAB key exists). */
const settingsDecider: Decider<null, AcmeSettingsEvent & NewEvent> = {
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

  /**
   * The ACME server's commands: each records events on one kind of stream through that stream's
   * machine, the one place a stream meets its decider. The protocol modules (accounts, orders,
   * authorizations, challenges, settings) check the request and call these.
   */
  readonly record = {
    /** A change of the mount's ACME settings (cluster URLs, ACME config, EAB keys). */
    settings: (mount: string, event: AcmeSettingsEvent, meta: AuditMetadata): void =>
      this.#record(acmeStreams.settings(mount), settingsDecider, event, meta),
    account: (
      mount: string,
      accountId: string,
      event: EventOf<typeof accountDecider>,
      meta: AuditMetadata,
      options?: NewStream,
    ): void =>
      this.#record(acmeStreams.account(mount, accountId), accountDecider, event, meta, options),
    order: (
      mount: string,
      orderId: string,
      event: EventOf<typeof orderDecider>,
      meta: AuditMetadata,
      options?: NewStream,
    ): void => this.#record(acmeStreams.order(mount, orderId), orderDecider, event, meta, options),
    authorization: (
      mount: string,
      authzId: string,
      event: EventOf<typeof authorizationDecider>,
      meta: AuditMetadata,
      options?: NewStream,
    ): void =>
      this.#record(
        acmeStreams.authorization(mount, authzId),
        authorizationDecider,
        event,
        meta,
        options,
      ),
    challenge: (
      mount: string,
      authzId: string,
      type: string,
      event: EventOf<typeof challengeDecider>,
      meta: AuditMetadata,
      options?: NewStream,
    ): void =>
      this.#record(
        acmeStreams.challenge(mount, authzId, type),
        challengeDecider,
        event,
        meta,
        options,
      ),
  };

  #record<S, E extends NewEvent>(
    stream: string,
    decider: Decider<S, E>,
    event: E,
    meta: AuditMetadata,
    options?: NewStream,
  ): void {
    this.authority.append(stream, decider, () => [event], meta, options);
  }
}

/** The events a decider takes. */
type EventOf<D> = D extends Decider<infer _S, infer E> ? E : never;
/** A command that starts its stream (the append fails if the stream exists). */
type NewStream = { newStream?: boolean };
