import { createPrivateKey, type KeyObject } from 'node:crypto';
import type { Clock } from '../../core/clock.js';
import type { CommandHandler, Decider, Handled, StreamFold } from '../../core/command-handler.js';
import type { Db } from '../../core/database.js';
import { ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { Ids } from '../../core/ids.js';
import type { Logger } from '../../core/logger.js';
import type { NewEvent, StoredEvent } from '../../core/events.js';
import { Lru } from '../../core/lru.js';
import { whenAnotherProcessCommits, type ForeignChange } from '../../core/read-memo.js';
import type { Sealer, Sealed } from '../../core/seal.js';
import { configDecider, certificateDecider, issuerDecider, keyDecider } from './deciders.js';
import {
  DEFAULT_CRL_CONFIG,
  PKI_EVENT_TYPES,
  streams,
  type CrlConfig,
  type IssuerSettings,
  type PkiEvent,
  type TidyResult,
} from './events.js';
import type { Signer, UrlConfig } from './issuance.js';
import { CERTIFICATE_ONLY, PkiQueries, type IssuerRow, type KeyRow } from './projection.js';
import { PkiReads } from './reads.js';
import { keySpecOf, onThePool, signatureScheme, spkiDer } from '../../x509/keys.js';
import { isSignedBy, parseCertificate, type ParsedCertificate } from '../../x509/parse.js';
import {
  randomSerial,
  signCertificate,
  signCertificateNow,
  type UnsignedCertificate,
} from '../../x509/certificate.js';
import type { MountTtls } from '../sys/projection.js';
import { CrlBuilds, type CrlWork } from './crls.js';

/** A CRL a command asks for, built once the command is durable. */
interface CrlRequest {
  mount: string;
  issuerId: string;
  work: CrlWork;
  meta: AuditMetadata;
}

/** What the certificate authority needs from Keel's core (a subset of the composition root's Core). */
export interface PkiCore {
  db: Db;
  handler: CommandHandler;
  /** the log's end, which a CRL records as what its list was read at */
  store: { lastPosition(): number };
  sealer: Sealer;
  clock: Clock;
  ids: Ids;
  /** Where a failure no request answers for (an OCSP signer that failed) is told. */
  logger: Logger;
}

/** How many CA keys (and parsed issuer certificates, chains) are kept in memory at most. */
export const CACHED_KEYS = 256;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** How many times a certificate is decided and signed again when its decision went stale. */
const STALE_ATTEMPTS = 3;

/**
 * What the recording command says of a certificate whose decision no longer holds: the state it
 * was decided on changed while it was signed. It is not recorded, and never returned.
 */
export class StaleDecision extends ValidationError {
  constructor() {
    super(
      'the role, issuer, key or mount settings changed while the certificate was being signed, again and again; nothing was issued',
    );
    this.name = 'StaleDecision';
  }
}

/** The instant and serial a certificate is decided with: fixed before it is signed. */
export interface SigningInstant {
  now: Date;
  serial: Buffer;
}

/** CRLSign in a certificate's keyUsage (bit 6): without it, an issuer signs no CRL. */
export const hasCrlSign = (cert: ParsedCertificate): boolean => (cert.keyUsage & (1 << 6)) !== 0;

/**
 * Settings a new issuer starts with: `err` for leaves that would outlive it, every usage but
 * crl-signing when its certificate lacks CRLSign (as the reference imports such an issuer). Without
 * a certificate, every usage: the defaults a POST to `issuer/:ref` starts from.
 */
export const newIssuerSettings = (name: string, cert?: ParsedCertificate): IssuerSettings => ({
  name,
  leafNotAfterBehavior: 'err',
  usage: ['read-only', 'issuing-certificates', 'crl-signing', 'ocsp-signing'].filter(
    (u) => u !== 'crl-signing' || !cert || hasCrlSign(cert),
  ),
  manualChain: [],
  revocationSignatureAlgorithm: '',
  issuingCertificates: [],
  crlDistributionPoints: [],
  ocspServers: [],
});

/**
 * The mount-level state of a certificate authority: issuer and key resolution, signers (CA keys
 * unsealed on first use and kept in memory), chains, configuration, and the commands shared by
 * several routes (keys, issuers, certificate records, CRLs).
 */
export class Authority {
  readonly #core: PkiCore;
  #q: PkiQueries | undefined;
  /** rows the issuing path reads on every request; cleared by the projection on any change */
  readonly #reads: PkiReads;
  /** unsealed CA keys by key id: bounded, and a key is dropped as soon as it is deleted */
  readonly #keys = new Lru<string, KeyObject>(CACHED_KEYS);
  readonly #certs = new Lru<string, ParsedCertificate>(CACHED_KEYS);
  /** chains by mount and issuer; cleared by the projection whenever an issuer event is applied */
  readonly #chains = new Lru<string, string[]>(CACHED_KEYS);
  /** signature checks between two issuers, which never change for a pair of ids */
  readonly #signedBy = new Lru<string, boolean>(CACHED_KEYS * 4);

  /** Counts the times what the caches hold went stale (`readModelsChanged`). */
  #generation = 0;

  /** Builds CRLs after the commands that ask for them (`rebuildCrlAfter`). */
  readonly crls: CrlBuilds = new CrlBuilds(this);
  /** Whether a command of `run` is deciding now, and the CRLs it asks for (built once durable). */
  #inRun = false;
  #crlsAfter: CrlRequest[] | undefined;

  /** The lease TTLs in force on a mount (by accessor): tuned through `sys/mounts/:path/tune`. */
  readonly mountTtls: (mount: string) => MountTtls;
  /** Whether the mount (by accessor) is enabled: a disabled mount's CRLs are never built again. */
  readonly mounted: (mount: string) => boolean;

  constructor(
    core: PkiCore,
    mountTtls: (mount: string) => MountTtls,
    mounted: (mount: string) => boolean = () => true,
  ) {
    this.#core = core;
    this.mountTtls = mountTtls;
    this.mounted = mounted;
    this.#reads = new PkiReads(core.db, () => this.q);
    whenAnotherProcessCommits(core.db, (change) => this.#foreignCommit(change));
  }

  /** Read-model queries, prepared on first use (after the projection has opened its tables). */
  get q(): PkiQueries {
    this.#q ??= new PkiQueries(this.#core.db);
    return this.#q;
  }

  get core(): PkiCore {
    return this.#core;
  }

  /**
   * Runs a command of the certificate authority: `fn` (synchronous: it reads, decides and appends
   * with `append`) runs as one item of the next group-commit batch, all or nothing, and the
   * promise settles once it is durable (DESIGN §10), and after that once the CRLs it asked for
   * (`rebuildCrlAfter`) are recorded.
   */
  async run<T>(fn: () => T): Promise<T> {
    let after: CrlRequest[] | undefined;
    const out = await this.#core.handler.atomically(() => {
      this.#inRun = true;
      try {
        const result = fn();
        after = this.#crlsAfter;
        return result;
      } finally {
        this.#inRun = false;
        this.#crlsAfter = undefined;
      }
    });
    if (after !== undefined)
      await Promise.all(after.map((r) => this.crls.request(r.mount, r.issuerId, r.work, r.meta)));
    return out;
  }

  /**
   * Asks, from inside a command (`run`), for the issuer's CRL to be rebuilt once the command is
   * durable; the command's caller is answered after that. The reference rebuilds a CRL after the
   * revocation it lists is stored, too, and answers the revocation once the CRL is.
   */
  rebuildCrlAfter(mount: string, issuerId: string, work: CrlWork, meta: AuditMetadata): void {
    if (!this.#inRun)
      throw new Error(
        'a CRL rebuild is asked for only inside a certificate authority command (Authority.run)',
      );
    (this.#crlsAfter ??= []).push({ mount, issuerId, work, meta });
  }

  /**
   * Several appends as one unit inside the command running now (a savepoint of its batch item),
   * so a part that fails undoes the others. Only inside `run`: outside a batch there is no
   * transaction for the appends to join, and the call is refused.
   */
  atomically<T>(fn: () => T): T {
    this.#inCommand('Authority.atomically');
    return this.#core.db.transaction(fn)();
  }

  /**
   * Decides and appends on one stream, now, as part of the command running (`run`): the one way
   * the certificate authority writes to the log. Refused outside a batch.
   */
  append<S, E extends NewEvent>(
    stream: string,
    decider: Decider<S, E>,
    decide: (state: S, version: number) => readonly E[],
    meta: AuditMetadata,
    options: { newStream?: boolean; seed?: StreamFold<S> } = {},
  ): Handled<S, E> {
    this.#inCommand('a certificate authority append');
    return this.#core.handler.handleSync(stream, decider, decide, meta, options);
  }

  #inCommand(what: string): void {
    if (!this.#core.handler.inBatch)
      throw new Error(
        `${what} runs only inside a certificate authority command (Authority.run), as part of a group-commit batch`,
      );
  }

  /**
   * Decides, signs and records a certificate (DESIGN §10, ADR 0105). `decide` reads the state
   * (role, issuer, key, URLs, TTLs) and gives the unsigned certificate for an instant and a serial
   * chosen here; it must be a function of the state and of them alone. `record` appends what was
   * decided and signed, inside a command; `command` runs its function as one (`run` by default).
   *
   * - A signature that costs less than the trip to the libuv pool (EC, Ed25519) is made in the
   *   command that decides and records: one command, as any other.
   * - One that does not (RSA) is decided in a first command, which records nothing, then made on
   *   the pool while the event loop serves, and recorded by the next command. That one checks the
   *   decision on the state of its moment: if anything the decision read has changed since, it
   *   decides again with the same instant and serial and records only if that gives the very
   *   bytes that were signed, with the same key. Otherwise the certificate is dropped, never
   *   recorded nor returned, and decided and signed again on the new state, a few times at most.
   */
  async issueSigned<D extends { unsigned: UnsignedCertificate }, T>(
    mount: string,
    decide: (at: SigningInstant) => D,
    record: (decision: D, der: Buffer) => T,
    command: <R>(fn: () => R) => Promise<R> = (fn) => this.run(fn),
  ): Promise<T> {
    for (let tries = 1; ; tries++) {
      const at: SigningInstant = { now: this.#core.clock.now(), serial: randomSerial() };
      const first = await command(() => {
        const decision = decide(at);
        if (!onThePool(decision.unsigned.scheme))
          return {
            done: true as const,
            recorded: record(decision, signCertificateNow(decision.unsigned)),
          };
        return {
          done: false as const,
          decision,
          generation: this.#generation,
          ttls: this.mountTtls(mount),
        };
      });
      if (first.done) return first.recorded;
      const der = await signCertificate(first.decision.unsigned);
      try {
        return await command(() => record(this.#confirmed(mount, first, decide, at), der));
      } catch (err) {
        if (!(err instanceof StaleDecision) || tries >= STALE_ATTEMPTS) throw err;
      }
    }
  }

  /** The decision as it holds now (see `issueSigned`), or a StaleDecision. */
  #confirmed<D extends { unsigned: UnsignedCertificate }>(
    mount: string,
    first: { decision: D; generation: number; ttls: MountTtls },
    decide: (at: SigningInstant) => D,
    at: SigningInstant,
  ): D {
    const ttls = this.mountTtls(mount);
    if (
      first.generation === this.#generation &&
      ttls.defaultTtl === first.ttls.defaultTtl &&
      ttls.maxTtl === first.ttls.maxTtl
    )
      return first.decision;
    const again = decide(at);
    const signed = first.decision.unsigned;
    if (
      !again.unsigned.tbs.equals(signed.tbs) ||
      !again.unsigned.signingKey.equals(signed.signingKey)
    )
      throw new StaleDecision();
    return again;
  }

  /** A stored role as written (without the defaults of fields added since), if any. */
  role = (mount: string, name: string): unknown => this.#reads.role(mount, name);

  defaults(mount: string): { defaultIssuer: string; defaultFollowsLatestIssuer: boolean } {
    return (
      this.#reads.config(mount, 'issuers') ?? {
        defaultIssuer: '',
        defaultFollowsLatestIssuer: false,
      }
    );
  }

  defaultKey = (mount: string): string =>
    this.#reads.config<{ defaultKey: string }>(mount, 'keys')?.defaultKey ?? '';

  urls = (mount: string): UrlConfig =>
    this.#reads.config<UrlConfig>(mount, 'urls') ?? {
      issuing_certificates: [],
      crl_distribution_points: [],
      ocsp_servers: [],
    };

  crlConfig = (mount: string): CrlConfig => ({
    ...DEFAULT_CRL_CONFIG,
    ...this.#reads.config<CrlConfig>(mount, 'crl'),
  });

  tidyStatus = (mount: string): TidyResult | undefined => this.q.config<TidyResult>(mount, 'tidy');

  /** `default`, an issuer id, or an issuer name; the reference's texts when it does not resolve. */
  resolveIssuer(mount: string, ref: string): IssuerRow {
    if (ref === 'default' || ref === '') {
      const id = this.defaults(mount).defaultIssuer;
      const row = id ? this.#reads.issuer(mount, id) : undefined;
      if (!row) throw new ValidationError('no default issuer currently configured');
      return row;
    }
    const byId = UUID.test(ref) ? this.#reads.issuer(mount, ref) : undefined;
    const row = byId ?? this.q.issuers(mount).find((i) => i.name === ref);
    if (!row) throw new ValidationError(`unable to resolve issuer id for reference: ${ref}`);
    return row;
  }

  /** `default`, a key id, or a key name. */
  resolveKey(mount: string, ref: string): KeyRow {
    if (ref === 'default' || ref === '') {
      const id = this.defaultKey(mount);
      const row = id ? this.q.key(mount, id) : undefined;
      if (!row) throw new ValidationError('no default key currently configured');
      return row;
    }
    const row =
      (UUID.test(ref) ? this.q.key(mount, ref) : undefined) ??
      this.q.keys(mount).find((k) => k.name === ref);
    if (!row) throw new ValidationError(`unable to resolve key id for reference: ${ref}`);
    return row;
  }

  parsed(issuer: { issuer_id: string; certificate: string }): ParsedCertificate {
    return this.#certs.getOrSet(issuer.issuer_id, () =>
      parseCertificate(
        Buffer.from(issuer.certificate.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64'),
      ),
    );
  }

  privateKey(key: KeyRow): KeyObject {
    return this.#keys.getOrSet(key.key_id, () =>
      createPrivateKey(this.#core.sealer.unseal(JSON.parse(key.private_key) as Sealed)),
    );
  }

  /** Whether the unsealed key is held in memory (it is not once the key is deleted). */
  holdsKey(keyId: string): boolean {
    return this.#keys.has(keyId);
  }

  /** The signer for an issuer, refusing issuers without a key or without the needed usage. */
  /** Whether the issuer can sign for `usage` here: its key is in this mount and it has the usage. */
  canSign(
    mount: string,
    issuer: IssuerRow,
    usage: 'issuing-certificates' | 'crl-signing' | 'ocsp-signing',
  ): boolean {
    return (
      issuer.key_id !== '' &&
      this.#reads.key(mount, issuer.key_id) !== undefined &&
      issuer.settings.usage.includes(usage)
    );
  }

  signer(
    mount: string,
    issuer: IssuerRow,
    usage: 'issuing-certificates' | 'crl-signing' | 'ocsp-signing',
    signatureBits = 0,
    usePss = false,
  ): Signer {
    const key = issuer.key_id ? this.#reads.key(mount, issuer.key_id) : undefined;
    if (!key) {
      throw new ValidationError(
        `unable to fetch corresponding key for issuer ${issuer.issuer_id}; unable to use this issuer for signing`,
      );
    }
    if (!issuer.settings.usage.includes(usage)) {
      throw new ValidationError(`issuer ${issuer.issuer_id} does not have the ${usage} usage`);
    }
    const cert = this.parsed(issuer);
    return {
      cert,
      key: this.privateKey(key),
      scheme: signatureScheme(cert.key, signatureBits, usePss),
    };
  }

  /**
   * Drops cached rows and chains (a key, issuer or configuration event was applied; for a role's,
   * that role alone), and the unsealed key or parsed certificate of a deleted key or issuer.
   */
  readModelsChanged(event?: StoredEvent): void {
    this.#generation++;
    // A role's event changes that role alone: the rest stays remembered.
    if (event?.type === 'PkiRoleWritten' || event?.type === 'PkiRoleDeleted') {
      const { mount, name } = event.data as { mount: string; name: string };
      this.#reads.forgetRole(mount, name);
      return;
    }
    this.#reads.clear();
    this.#chains.clear();
    if (event?.type === 'PkiKeyDeleted') this.#keys.delete((event.data as { keyId: string }).keyId);
    if (event?.type === 'PkiIssuerDeleted')
      this.#certs.delete((event.data as { issuerId: string }).issuerId);
  }

  /**
   * Another process committed: what its events may have made stale is dropped, as the projection
   * drops it for this process's own (`readModelsChanged`). Certificates change nothing cached;
   * roles change only themselves.
   */
  #foreignCommit(change: ForeignChange): void {
    if (change !== 'unknown') {
      const types = [...change.types].filter(
        (t) => PKI_EVENT_TYPES.includes(t as PkiEvent['type']) && !CERTIFICATE_ONLY.has(t),
      );
      if (types.length === 0) return;
      if (types.every((t) => t === 'PkiRoleWritten' || t === 'PkiRoleDeleted')) {
        this.#generation++;
        this.#reads.forgetRoleStreams(change.streams);
        return;
      }
    }
    this.readModelsChanged();
  }

  #isSignedBy(child: IssuerRow, parent: IssuerRow): boolean {
    return this.#signedBy.getOrSet(`${child.issuer_id}|${parent.issuer_id}`, () =>
      isSignedBy(this.parsed(child), this.parsed(parent)),
    );
  }

  /** The issuer's chain: itself, then its parents among this mount's issuers, up to a root. */
  chain(mount: string, issuer: IssuerRow): string[] {
    return this.#chains.getOrSet(`${mount}|${issuer.issuer_id}`, () =>
      this.#buildChain(mount, issuer),
    );
  }

  #buildChain(mount: string, issuer: IssuerRow): string[] {
    if (issuer.settings.manualChain.length) {
      return issuer.settings.manualChain.flatMap((ref) => {
        const row = this.q.issuer(mount, ref);
        return row ? [row.certificate] : [];
      });
    }
    const all = this.q.issuers(mount);
    const out = [issuer];
    for (let cur = issuer; out.length < 10;) {
      const child = this.parsed(cur);
      if (child.issuer.equals(child.subject) && isSignedBy(child, child)) break;
      const parent = all.find((p) => !out.includes(p) && this.#isSignedBy(cur, p));
      if (!parent) break;
      out.push(parent);
      cur = parent;
    }
    return out.map((i) => i.certificate);
  }

  /** Stores a new CA key (sealed) and makes it the default key when there is none. */
  createKey(mount: string, meta: AuditMetadata, key: KeyObject, name: string): string {
    if (name && this.q.keys(mount).some((k) => k.name === name))
      throw new ValidationError(`key name (${name}) already in use`);
    if (name === 'default') throw new ValidationError('reserved key name: default');
    const keyId = this.#core.ids.uuid();
    const spec = keySpecOf(key);
    const privateKey = this.#core.sealer.seal(
      key.export({ type: 'pkcs8', format: 'pem' }) as string,
    );
    this.append(
      streams.key(mount, keyId),
      keyDecider,
      () => [
        {
          type: 'PkiKeyCreated' as const,
          data: {
            mount,
            keyId,
            name,
            keyType: spec.type,
            keyBits: spec.bits,
            privateKey,
            publicKey: spkiDer(key).toString('base64'),
          },
        },
      ],
      meta,
    );
    this.#keys.set(keyId, key);
    if (!this.defaultKey(mount)) {
      this.append(
        streams.config(mount),
        configDecider,
        () => [{ type: 'PkiKeysConfigured' as const, data: { mount, defaultKey: keyId } }],
        meta,
      );
    }
    return keyId;
  }

  /** The stored key whose public key matches, if any. */
  keyFor(mount: string, spki: Buffer): KeyRow | undefined {
    const b64 = spki.toString('base64');
    return this.q.keys(mount).find((k) => k.public_key === b64);
  }

  /**
   * Records a CA certificate as an issuer, linked to the mount's matching key, the default issuer
   * when there is none (or when the default follows the latest). Returns the new issuer id.
   */
  createIssuer(
    mount: string,
    meta: AuditMetadata,
    cert: ParsedCertificate,
    name: string,
    certificatePem: string,
  ): string {
    if (name && this.q.issuers(mount).some((i) => i.name === name))
      throw new ValidationError(`issuer name (${name}) already in use`);
    if (name === 'default') throw new ValidationError('reserved issuer name: default');
    const issuerId = this.#core.ids.uuid();
    const key = this.keyFor(mount, cert.spki);
    this.append(
      streams.issuer(mount, issuerId),
      issuerDecider,
      () => [
        {
          type: 'PkiIssuerCreated' as const,
          data: {
            mount,
            issuerId,
            keyId: key?.key_id ?? '',
            certificate: certificatePem,
            serial: cert.serial,
            notAfter: cert.notAfter.toISOString(),
            publicKey: cert.spki.toString('base64'),
            ...newIssuerSettings(name, cert),
          },
        },
      ],
      meta,
    );
    this.#certs.set(issuerId, cert);
    const defaults = this.defaults(mount);
    if (
      !defaults.defaultIssuer ||
      !this.q.issuer(mount, defaults.defaultIssuer) ||
      defaults.defaultFollowsLatestIssuer
    ) {
      this.append(
        streams.config(mount),
        configDecider,
        () => [
          {
            type: 'PkiIssuersConfigured' as const,
            data: {
              mount,
              defaultIssuer: issuerId,
              defaultFollowsLatestIssuer: defaults.defaultFollowsLatestIssuer,
            },
          },
        ],
        meta,
      );
    }
    return issuerId;
  }

  /** Appends CertificateIssued on the serial's own stream; a serial already used in the mount is refused. */
  recordIssued(
    mount: string,
    meta: AuditMetadata,
    data: {
      serial: string;
      issuerId: string;
      certificate: string;
      notAfter: Date;
      commonName: string;
      isCa: boolean;
      stored: boolean;
      /** the lease id it is issued with (`leaseFor`), held by the token of `meta` */
      leaseId?: string;
    },
  ): void {
    const token = meta.actor?.accessor;
    this.append(
      streams.cert(mount, data.serial),
      certificateDecider,
      () => [
        {
          type: 'CertificateIssued' as const,
          data: {
            mount,
            serial: data.serial,
            issuerId: data.issuerId,
            certificate: data.stored ? data.certificate : '',
            notAfter: data.notAfter.toISOString(),
            commonName: data.commonName,
            isCa: data.isCa,
            stored: data.stored,
            ...(data.leaseId === undefined
              ? {}
              : { leaseId: data.leaseId, ...(token === undefined ? {} : { leaseToken: token }) }),
          },
        },
      ],
      meta,
      // A fresh random serial: a stream that exists is refused by the append and then decided on.
      { newStream: true },
    );
  }
}
