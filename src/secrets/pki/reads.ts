import type { Db } from '../../core/database.js';
import { ReadMemo } from '../../core/read-memo.js';
import { streams } from './events.js';
import type { IssuerRow, KeyRow, PkiQueries } from './projection.js';

/**
 * The read-model rows every issue and sign request needs (its role, the issuer, the issuer's key,
 * the mount's configuration), remembered between requests instead of queried and parsed each
 * time. The pki projection calls `clear` whenever it applies an event that changes any of them,
 * inside the same transaction, so a remembered row is never older than the table. Values are
 * frozen, being shared; a value read inside a transaction may still roll back and is not kept;
 * absent rows are only remembered for configuration kinds, whose keys are Keel's own.
 */
/** A role's row is remembered under its stream's name: a role's event names what to forget. */
const roleKey = (mount: string, name: string) => streams.role(mount, name);

export class PkiReads {
  readonly #q: () => PkiQueries;
  readonly #memo: ReadMemo;

  constructor(db: Db, q: () => PkiQueries) {
    this.#q = q;
    // Another process's commits are followed by `Authority`, which knows which events change what.
    this.#memo = new ReadMemo(db, { events: [] });
  }

  /** Forgets every row (a key, issuer or configuration event was applied). */
  clear(): void {
    this.#memo.clear();
  }

  /** Forgets one role (it was written or deleted): nothing else derives from it. */
  forgetRole(mount: string, name: string): void {
    this.#memo.forget(roleKey(mount, name));
  }

  /** Forgets the roles among `names`, streams that role events were appended to. */
  forgetRoleStreams(names: Iterable<string>): void {
    for (const name of names) this.#memo.forget(name);
  }

  role = (mount: string, name: string): unknown =>
    this.#memo.get(roleKey(mount, name), () => this.#q().role(mount, name));

  issuer = (mount: string, id: string): IssuerRow | undefined =>
    this.#memo.get(`issuer\0${mount}\0${id}`, () => this.#q().issuer(mount, id));

  key = (mount: string, id: string): KeyRow | undefined =>
    this.#memo.get(`key\0${mount}\0${id}`, () => this.#q().key(mount, id));

  config = <T>(mount: string, kind: string): T | undefined =>
    this.#memo.get(`config\0${mount}\0${kind}`, () => this.#q().config<T>(mount, kind), true);
}
