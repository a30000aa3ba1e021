import type { Db } from '../../core/database.js';
import type { IssuerRow, KeyRow, PkiQueries } from './projection.js';

/** Entries kept at most; past it the memo starts again (it only saves queries). */
const LIMIT = 10_000;

/** Freezes an object and everything in it (values shared between requests). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * The read-model rows every issue and sign request needs (its role, the issuer, the issuer's key,
 * the mount's configuration), remembered between requests instead of queried and parsed each
 * time. The pki projection calls `clear` whenever it applies an event that changes any of them,
 * inside the same transaction, so a remembered row is never older than the table. Values are
 * frozen, being shared; a value read inside a transaction may still roll back and is not kept;
 * absent rows are only remembered for configuration kinds, whose keys are Keel's own.
 */
export class PkiReads {
  readonly #db: Db;
  readonly #q: () => PkiQueries;
  readonly #memo = new Map<string, unknown>();

  constructor(db: Db, q: () => PkiQueries) {
    this.#db = db;
    this.#q = q;
  }

  /** Forgets every row (a role, key, issuer or configuration event was applied). */
  clear(): void {
    this.#memo.clear();
  }

  #get<T>(key: string, read: () => T, keepAbsent = false): T {
    if (this.#memo.has(key)) return this.#memo.get(key) as T;
    const value = deepFreeze(read());
    if ((value !== undefined || keepAbsent) && !this.#db.inTransaction) {
      if (this.#memo.size >= LIMIT) this.#memo.clear();
      this.#memo.set(key, value);
    }
    return value;
  }

  role = (mount: string, name: string): unknown =>
    this.#get(`role\0${mount}\0${name}`, () => this.#q().role(mount, name));

  issuer = (mount: string, id: string): IssuerRow | undefined =>
    this.#get(`issuer\0${mount}\0${id}`, () => this.#q().issuer(mount, id));

  key = (mount: string, id: string): KeyRow | undefined =>
    this.#get(`key\0${mount}\0${id}`, () => this.#q().key(mount, id));

  config = <T>(mount: string, kind: string): T | undefined =>
    this.#get(`config\0${mount}\0${kind}`, () => this.#q().config<T>(mount, kind), true);
}
