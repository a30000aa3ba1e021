import { canonicalJson } from '../../core/canonical.js';
import type { AuditMetadata } from '../../core/events.js';
import type { Authority } from './authority.js';
import { crlDecider } from './deciders.js';
import { streams, type CrlBuiltData, type DeltaCrlBuiltData } from './events.js';
import type { IssuerRow } from './projection.js';
import type { CrlJob } from '../../x509/crl.js';
import { crlThread } from '../../x509/crl-thread.js';

/**
 * What a command asks of an issuer's CRLs: a complete CRL (and after it a new delta, when
 * `enable_delta` is on), or only the delta CRL.
 */
export type CrlWork = 'complete' | 'delta';

/**
 * The issuer's CRL is rebuilt once the command running now is durable, and the command's caller
 * is answered only after that (`Authority.run`). With `disable`, the CRL is signed but empty, as
 * the reference does. An issuer without a key (or without the crl-signing usage) has no CRL.
 */
export function rebuildCrl(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  issuer: IssuerRow,
): void {
  authority.rebuildCrlAfter(mount, issuer.issuer_id, 'complete', meta);
}

/**
 * The issuer's delta CRL (`enable_delta`) is rebuilt once the command is durable: every
 * certificate revoked since its complete CRL was built, with the Delta CRL Indicator naming that
 * CRL's number, numbered in the same sequence (RFC 5280 §5.2.4). Nothing without a complete CRL,
 * a key, or with `enable_delta` off.
 */
export function rebuildDeltaCrl(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  issuer: IssuerRow,
): void {
  authority.rebuildCrlAfter(mount, issuer.issuer_id, 'delta', meta);
}

/** Rebuilds the CRL of every issuer of the mount, once the command is durable. */
export function rebuildAllCrls(authority: Authority, mount: string, meta: AuditMetadata): void {
  for (const issuer of authority.q.issuers(mount)) rebuildCrl(authority, mount, meta, issuer);
}

/** Rebuilds the delta CRL of every issuer of the mount (`crl/rotate-delta`), once durable. */
export function rebuildAllDeltaCrls(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
): void {
  for (const issuer of authority.q.issuers(mount)) rebuildDeltaCrl(authority, mount, meta, issuer);
}

/**
 * A CRL still behind a revocation (or a `config/crl` change) this long after it was made was left
 * by a process that died between the two (a build takes well under a second, 200 ms at 100,000
 * revoked).
 */
export const CRL_ORPHANED_AFTER_MS = 60_000;

/**
 * How many times a build is planned again when another process recorded a CRL meanwhile, or its
 * issuer changed.
 */
const ATTEMPTS = 5;

/** One issuer's builds: whether one runs, and the one that waits to run after it. */
interface Slot {
  running: boolean;
  next: Queued | undefined;
}

/** A build waiting to start, with everyone who asked for it while another ran. */
interface Queued {
  complete: boolean;
  meta: AuditMetadata;
  done: Promise<void>;
  settle: (err?: Error) => void;
}

/**
 * What a build read inside its first command: the CRL to make, and the event that records it, all
 * but the CRL itself. Its `asOf` is the log's end when the list was read. `issuer`: the issuer's
 * key and settings it was made from (`issuerBasis`).
 */
interface Plan {
  job: CrlJob;
  issuer: string;
  event:
    | { type: 'PkiCrlBuilt'; data: Omit<CrlBuiltData, 'crl'> & { asOf: number } }
    | { type: 'PkiDeltaCrlBuilt'; data: Omit<DeltaCrlBuiltData, 'crl'> & { asOf: number } };
}

/**
 * Builds CRLs off the command that asked for them (DESIGN §10, ADR 0116). A build is three steps:
 *
 * 1. a command reads the revoked list, the next CRL number and the log's end (`asOf`), and
 *    appends nothing;
 * 2. the CRL is built and signed outside any command (on the CRL thread when it is long);
 * 3. a second command records it if no other CRL of the issuer was recorded since step 1. If one
 *    was (another process built it), a complete CRL that read the log at least as far stands for
 *    this one; otherwise this one is planned again, a few times at most.
 *
 * Builds of one issuer run one at a time. Whoever asks while one runs waits for the next, which
 * starts once it ends and so reads every revocation made before the ask: one build stands for
 * every revocation that arrived meanwhile (the reference serialises its CRL builds the same way).
 * A build a process did not finish (it was killed between the revocation and the record) is found
 * at the next start (`catchUp`): the issuer's CRL is behind a revocation recorded after its `asOf`.
 */
export class CrlBuilds {
  readonly #authority: Authority;
  readonly #slots = new Map<string, Slot>();
  /** The issuers' build loops now running. */
  readonly #draining = new Set<Promise<void>>();
  #sweeping: Promise<void> | undefined;

  constructor(authority: Authority) {
    this.#authority = authority;
  }

  /** Settles once a CRL that reads the log from now on is recorded for the issuer. */
  request(mount: string, issuerId: string, work: CrlWork, meta: AuditMetadata): Promise<void> {
    const key = `${mount}\n${issuerId}`;
    let slot = this.#slots.get(key);
    if (slot === undefined) {
      slot = { running: false, next: undefined };
      this.#slots.set(key, slot);
    }
    const next = (slot.next ??= queued(meta));
    next.complete ||= work === 'complete';
    if (!slot.running) {
      const draining = this.#drain(key, slot, mount, issuerId);
      this.#draining.add(draining);
      void draining.finally(() => this.#draining.delete(draining));
    }
    return next.done;
  }

  /** Settles once no build runs or waits to run (what a start, a sweep or a request began). */
  async idle(): Promise<void> {
    while (this.#draining.size > 0 || this.#sweeping !== undefined)
      await Promise.allSettled([...this.#draining, this.#sweeping]);
  }

  /**
   * Rebuilds what a process left unfinished (made at or before `madeBy`, when given): every issuer
   * with no CRL, or whose complete CRL read the log before a `config/crl` change it shows, in full;
   * every other issuer whose CRL is behind a revocation, as its revocation would have (the complete
   * CRL without `auto_rebuild`, the delta with `auto_rebuild` and `enable_delta`; with
   * `auto_rebuild` alone its schedule rebuilds it). Settles once they are built; one that fails is
   * logged, and left to the next revocation, rotate or start.
   */
  catchUp(meta: AuditMetadata, madeBy?: string): Promise<void> {
    const authority = this.#authority;
    const builds: Promise<void>[] = [];
    for (const { mount, issuer_id, complete } of authority.q.crlsBehind(madeBy)) {
      // One this process builds now will list it; an issuer without its key here has no CRL,
      // and neither has one of a disabled mount.
      if (this.#slots.has(`${mount}\n${issuer_id}`) || !authority.mounted(mount)) continue;
      const issuer = authority.q.issuer(mount, issuer_id);
      if (issuer === undefined || !authority.canSign(mount, issuer, 'crl-signing')) continue;
      const config = authority.crlConfig(mount);
      const work: CrlWork | undefined =
        complete === 1 || !config.auto_rebuild
          ? 'complete'
          : config.enable_delta
            ? 'delta'
            : undefined;
      if (work === undefined) continue;
      builds.push(
        this.request(mount, issuer_id, work, meta).catch((err: unknown) =>
          authority.core.logger.warn(
            { mount, issuer: issuer_id, error: err instanceof Error ? err.message : String(err) },
            'a CRL left behind its revocations or configuration was not rebuilt',
          ),
        ),
      );
    }
    return Promise.all(builds).then(() => undefined);
  }

  /**
   * On a log other processes share, what a process that died mid-build left is not waited for
   * until a start: the leader builds, at each poll, the CRLs behind a revocation or a `config/crl`
   * change made more than `CRL_ORPHANED_AFTER_MS` ago (far longer than a build takes, so not
   * another process's build still running). One sweep at a time; settles with it.
   */
  sweep(meta: AuditMetadata): Promise<void> {
    if (this.#sweeping !== undefined) return this.#sweeping;
    const by = new Date(this.#authority.core.clock.now().getTime() - CRL_ORPHANED_AFTER_MS);
    this.#sweeping = this.catchUp(meta, by.toISOString()).finally(() => {
      this.#sweeping = undefined;
    });
    return this.#sweeping;
  }

  async #drain(key: string, slot: Slot, mount: string, issuerId: string): Promise<void> {
    slot.running = true;
    for (let job = slot.next; job !== undefined; job = slot.next) {
      slot.next = undefined;
      try {
        if (job.complete) await this.#build(mount, issuerId, 'complete', job.meta);
        await this.#build(mount, issuerId, 'delta', job.meta);
        job.settle();
      } catch (err) {
        job.settle(err instanceof Error ? err : new Error(String(err)));
      }
    }
    slot.running = false;
    this.#slots.delete(key);
  }

  async #build(mount: string, issuerId: string, work: CrlWork, meta: AuditMetadata): Promise<void> {
    const authority = this.#authority;
    for (let tries = 1; ; tries++) {
      const plan = await authority.run(() => this.#plan(mount, issuerId, work));
      if (plan === undefined) return;
      const crl = await crlThread.build(plan.job);
      const recorded = await authority.run(() => this.#record(mount, issuerId, plan, crl, meta));
      if (recorded) return;
      if (tries >= ATTEMPTS)
        throw new Error(
          `the CRL of issuer ${issuerId} was recorded by another process, or its issuer changed, ${tries} times while this one built it`,
        );
    }
  }

  /** Step 1, inside a command: what to build, or nothing for an issuer that has no such CRL. */
  #plan(mount: string, issuerId: string, work: CrlWork): Plan | undefined {
    const authority = this.#authority;
    const issuer = authority.q.issuer(mount, issuerId);
    // An issuer without its key here, or without the crl-signing usage, has no CRL of its own;
    // any other failure to sign is an error the caller sees, not a CRL quietly left stale.
    if (issuer === undefined || !authority.canSign(mount, issuer, 'crl-signing')) return undefined;
    const config = authority.crlConfig(mount);
    const base = work === 'delta' ? authority.q.crlHead(mount, issuerId) : undefined;
    if (work === 'delta' && (!config.enable_delta || base === undefined)) return undefined;
    const signer = authority.signer(mount, issuer, 'crl-signing');
    const now = authority.core.clock.now();
    const nextUpdate = new Date(now.getTime() + config.expiry * 1000);
    const { state } = authority.core.handler.load(
      streams.crl(mount, issuerId),
      crlDecider,
      authority.q.crlFold(mount, issuerId),
    );
    const number = state.number + 1;
    // A delta lists what was revoked at or after its base's thisUpdate: a revocation in that same
    // instant may be in both, which RFC 5280 allows.
    const lines = config.disable ? [] : authority.q.revokedOf(mount, issuerId, base?.this_update);
    const asOf = authority.core.store.lastPosition();
    const data = {
      mount,
      issuerId,
      number,
      thisUpdate: now.toISOString(),
      nextUpdate: nextUpdate.toISOString(),
      asOf,
    };
    return {
      issuer: issuerBasis(issuer),
      job: {
        issuer: signer.cert.subject,
        issuerKeyId: signer.cert.subjectKeyId,
        number,
        thisUpdate: now,
        nextUpdate,
        lines,
        scheme: signer.scheme,
        signingKey: signer.key,
        ...(base ? { deltaOf: base.number } : {}),
      },
      event: base
        ? { type: 'PkiDeltaCrlBuilt', data: { ...data, baseNumber: base.number } }
        : { type: 'PkiCrlBuilt', data },
    };
  }

  /**
   * Step 3, inside a command: records the CRL, or says whether one recorded since stands for it.
   * An issuer deleted or changed since step 1 (its key, usage or signature algorithm) gets no CRL
   * made for what it was: the build is planned again, from what it is now.
   */
  #record(mount: string, issuerId: string, plan: Plan, crl: string, meta: AuditMetadata): boolean {
    const authority = this.#authority;
    const issuer = authority.q.issuer(mount, issuerId);
    if (issuer === undefined || issuerBasis(issuer) !== plan.issuer) return false;
    const { number, asOf } = plan.event.data;
    const { events } = authority.append(
      streams.crl(mount, issuerId),
      crlDecider,
      (state) => {
        if (state.number !== number - 1) return [];
        return plan.event.type === 'PkiCrlBuilt'
          ? [{ type: 'PkiCrlBuilt' as const, data: { ...plan.event.data, crl } }]
          : [{ type: 'PkiDeltaCrlBuilt' as const, data: { ...plan.event.data, crl } }];
      },
      meta,
      { seed: authority.q.crlFold(mount, issuerId) },
    );
    if (events.length > 0) return true;
    const now = authority.q.crlHead(mount, issuerId);
    return plan.event.type === 'PkiCrlBuilt' && now !== undefined && now.as_of >= asOf;
  }
}

/** What of an issuer a CRL is made from: its key and its settings. */
const issuerBasis = (issuer: IssuerRow): string =>
  `${issuer.key_id}\n${canonicalJson(issuer.settings)}`;

function queued(meta: AuditMetadata): Queued {
  let settle: (err?: Error) => void = () => undefined;
  const done = new Promise<void>((resolve, reject) => {
    settle = (err) => (err === undefined ? resolve() : reject(err));
  });
  return { complete: false, meta, done, settle };
}
