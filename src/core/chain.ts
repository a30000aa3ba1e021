import { createHmac, hash, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { Db } from './database.js';
import { deriveSecretKey } from './seal.js';

/**
 * The chain over the event log: each event's hash covers the one before it and everything stored
 * about the event. From the position recorded in `audit_chain` on, a link is an HMAC-SHA256 under
 * a subkey of the keyring, so whoever lacks the key cannot recompute it after an edit; the rows
 * before it (a log written before the chain was keyed) keep their plain SHA-256 links (ADR 0060).
 */

/** An events row as stored. */
export interface EventRow {
  position: number;
  stream: string;
  version: number;
  type: string;
  time: string;
  data: string;
  metadata: string;
  hash: string;
}

/** The genesis link of the hash chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** Everything stored about the event, as the exact text held in the row: any changed byte shows. */
function linkBody(prevHash: string, row: Omit<EventRow, 'hash'>): string {
  const body = JSON.stringify([
    row.position,
    row.stream,
    row.version,
    row.type,
    row.time,
    row.data,
    row.metadata,
  ]);
  return `${prevHash}\n${body}`;
}

/** The unkeyed link of a log written before the chain was keyed. */
export function legacyLink(prevHash: string, row: Omit<EventRow, 'hash'>): string {
  return hash('sha256', linkBody(prevHash, row), 'hex');
}

/** The audit keys, derived from the keyring: one links the chain, the other signs anchors. */
export class ChainKey {
  readonly #link: KeyObject;
  readonly #sign: KeyObject;

  constructor(masterKey: Buffer) {
    this.#link = deriveSecretKey(masterKey, 'keel audit chain');
    this.#sign = deriveSecretKey(masterKey, 'keel audit anchor');
  }

  link(prevHash: string, row: Omit<EventRow, 'hash'>): string {
    return createHmac('sha256', this.#link).update(linkBody(prevHash, row), 'utf8').digest('hex');
  }

  sign(text: string): string {
    return createHmac('sha256', this.#sign).update(text, 'utf8').digest('hex');
  }

  /** Constant-time check of a signature made by `sign`. */
  signed(text: string, signature: string): boolean {
    const a = Buffer.from(this.sign(text), 'hex');
    const b = Buffer.from(/^[0-9a-f]{64}$/.test(signature) ? signature : '', 'hex');
    return a.length === b.length && timingSafeEqual(a, b);
  }
}

/** The last position of the log in `db` (0 when it is empty), asked of the database itself. */
export const logEnd = (db: Db): number =>
  db.prepare<[], { p: number | null }>('SELECT max(position) AS p FROM events').get()?.p ?? 0;

const markerText = (keyedFrom: number) => `keel audit chain keyed from ${keyedFrom}`;

/**
 * The chain of one log: its key, and the first position linked with it. `headFile` is where the
 * latest anchor is also kept outside the database (none for a log without a data directory).
 */
export class Chain {
  constructor(
    readonly key: ChainKey,
    readonly keyedFrom: number,
    readonly headFile: string | null,
  ) {}

  link(prevHash: string, row: Omit<EventRow, 'hash'>): string {
    return row.position >= this.keyedFrom
      ? this.key.link(prevHash, row)
      : legacyLink(prevHash, row);
  }
}

/** The log cannot be trusted as it stands: start-up refuses, naming why. */
export class AuditError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuditError';
  }
}

/**
 * The chain of the log in `db`. On the first open by a Keel with a keyed chain, the position keyed
 * hashing starts at is recorded — signed, so it cannot be moved to make keyed rows pass as
 * unkeyed: 1 for a new log, the next position for a log written before.
 */
export function openChain(db: Db, key: ChainKey, headFile: string | null = null): Chain {
  const read = () =>
    db
      .prepare<[], { keyed_from: number; mac: string }>(
        'SELECT keyed_from, mac FROM audit_chain WHERE id = 1',
      )
      .get();
  let marker = read();
  if (marker === undefined) {
    db.transaction(() => {
      const anchored = db.prepare('SELECT 1 FROM audit_anchors LIMIT 1').get() !== undefined;
      if (anchored) {
        throw new AuditError(
          'the audit chain record (where keyed hashing starts) is missing but anchors exist: the log was tampered with; run keel audit verify',
        );
      }
      const last = logEnd(db);
      db.prepare('INSERT OR IGNORE INTO audit_chain (id, keyed_from, mac) VALUES (1, ?, ?)').run(
        last + 1,
        key.sign(markerText(last + 1)),
      );
    }).immediate();
    marker = read()!;
  }
  if (!key.signed(markerText(marker.keyed_from), marker.mac)) {
    throw new AuditError(
      'the audit chain record is not signed by this keyring: a different KEEL_SEAL_KEY or keyring, or the record was edited',
    );
  }
  return new Chain(key, marker.keyed_from, headFile);
}
