import { hash } from 'node:crypto';
import type { Db } from './database.js';

/**
 * The hash chain over the event log: each event's hash covers the one before it and everything
 * stored about the event, so `keel audit verify` finds the first changed, missing or reordered row.
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

/**
 * The link of the chain for one event. Everything stored about the event takes part, as the exact
 * text held in the row, so `keel audit verify` needs no parsing and any changed byte shows.
 */
export function chainHash(prevHash: string, row: Omit<EventRow, 'hash'>): string {
  const body = JSON.stringify([
    row.position,
    row.stream,
    row.version,
    row.type,
    row.time,
    row.data,
    row.metadata,
  ]);
  return hash('sha256', `${prevHash}\n${body}`, 'hex');
}

/** Result of walking the chain: ok, or the first position whose hash does not match. */
export type ChainVerdict =
  { ok: true; events: number } | { ok: false; position: number; reason: string };

export function verifyChain(db: Db): ChainVerdict {
  let prevHash = GENESIS_HASH;
  let expected = 1;
  let count = 0;
  const rows = db.prepare<[], EventRow>('SELECT * FROM events ORDER BY position').iterate();
  for (const row of rows) {
    if (row.position !== expected) {
      return { ok: false, position: expected, reason: `event ${expected} is missing` };
    }
    if (chainHash(prevHash, row) !== row.hash) {
      return { ok: false, position: row.position, reason: 'hash does not match the event' };
    }
    prevHash = row.hash;
    expected += 1;
    count += 1;
  }
  return { ok: true, events: count };
}
