import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import {
  AuditError,
  GENESIS_HASH,
  logEnd,
  openChain,
  type Chain,
  type ChainKey,
  type EventRow,
} from './chain.js';
import type { Db } from './database.js';
import { checkReactorCheckpoints } from './reactors.js';

/**
 * Anchors: signed checkpoints of the chain's head (position, hash, time), kept outside the events
 * table — in `audit_anchors` and, the latest, in `<data>/audit/head.json` — so a log cut short or
 * recomputed no longer matches what was signed. `keel audit head` prints one for a witness to keep.
 */
export interface Anchor {
  readonly position: number;
  readonly hash: string;
  readonly time: string;
  readonly keyed_from: number;
  readonly signature: string;
}

const anchorText = (a: Omit<Anchor, 'signature'>) =>
  `keel audit anchor\n${a.position}\n${a.hash}\n${a.time}\n${a.keyed_from}`;

/** Anchors recorded in the database, oldest first. */
export function tableAnchors(db: Db): Anchor[] {
  return db.prepare<[], Anchor>('SELECT * FROM audit_anchors ORDER BY position').all();
}

/** Every anchor kept on this machine: the table's, and the head file's. */
function keptAnchors(db: Db, chain: Chain): Anchor[] {
  const file = fileAnchor(chain);
  return [...tableAnchors(db), ...(file === null ? [] : [file])];
}

/** The head kept in the file beside the database, if any; its shape is checked, not trusted. */
export function fileAnchor(chain: Chain): Anchor | null {
  if (chain.headFile === null || !existsSync(chain.headFile)) return null;
  return parseAnchor(readFileSync(chain.headFile, 'utf8'), chain.headFile);
}

/** An anchor as `keel audit head` prints it (JSON), or an error naming `source`. */
export function parseAnchor(text: string, source: string): Anchor {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new AuditError(`${source} is not an anchor (JSON from keel audit head)`);
  }
  const o = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
  const { position, hash, time, keyed_from, signature } = o;
  if (
    !Number.isSafeInteger(position) ||
    (position as number) < 1 ||
    typeof hash !== 'string' ||
    typeof time !== 'string' ||
    !Number.isSafeInteger(keyed_from) ||
    typeof signature !== 'string'
  ) {
    throw new AuditError(
      `${source} is not an anchor: it needs position, hash, time, keyed_from and signature`,
    );
  }
  return {
    position: position as number,
    hash,
    time,
    keyed_from: keyed_from as number,
    signature,
  };
}

/**
 * Sign the log's current head and record it (table and file). Nothing is written when the log is
 * empty; the same head is not recorded twice. Returns the latest anchor.
 */
export function writeAnchor(db: Db, chain: Chain, now: Date): Anchor | null {
  const last = db
    .prepare<[], { position: number; hash: string }>(
      'SELECT position, hash FROM events ORDER BY position DESC LIMIT 1',
    )
    .get();
  if (last === undefined) return null;
  const unsigned = {
    position: last.position,
    hash: last.hash,
    time: now.toISOString(),
    keyed_from: chain.keyedFrom,
  };
  const anchor: Anchor = { ...unsigned, signature: chain.key.sign(anchorText(unsigned)) };
  db.prepare(
    'INSERT OR IGNORE INTO audit_anchors (position, hash, time, keyed_from, signature) VALUES (?, ?, ?, ?, ?)',
  ).run(anchor.position, anchor.hash, anchor.time, anchor.keyed_from, anchor.signature);
  if (chain.headFile !== null) {
    const kept = fileAnchor(chain);
    if (kept === null || kept.position < anchor.position) writeDurably(chain.headFile, anchor);
  }
  return anchor;
}

function writeDurably(path: string, anchor: Anchor): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o644);
  try {
    writeSync(fd, `${JSON.stringify(anchor)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  // The rename itself is durable once the directory is synced.
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/**
 * The chain of a log about to be served, checked before anything reads it: its chain record and
 * latest anchor are signed by this keyring, the log reaches the anchor, and no reactor has read
 * past its end (else an `AuditError` says which). A log never anchored (one written before the
 * keyed chain) is anchored at once, so its unkeyed part is pinned before a keyed event follows.
 */
export function openCheckedChain(db: Db, key: ChainKey, headFile: string | null, now: Date): Chain {
  const chain = openChain(db, key, headFile);
  checkAnchoredHead(db, chain);
  checkReactorCheckpoints(db, logEnd(db));
  if (tableAnchors(db).length === 0) writeAnchor(db, chain, now);
  return chain;
}

/**
 * What start-up checks before anything reads or writes the log: the latest anchor is signed by
 * this keyring, the log reaches it, and its event still has the signed hash. A full walk is
 * `keel audit verify`.
 */
export function checkAnchoredHead(db: Db, chain: Chain): void {
  const anchors = keptAnchors(db, chain);
  if (anchors.length === 0) return;
  const latest = anchors.reduce((a, b) => (b.position > a.position ? b : a));
  const problem = anchorProblem(chain, latest);
  if (problem !== null) throw new AuditError(problem);
  const row = db
    .prepare<[number], { hash: string }>('SELECT hash FROM events WHERE position = ?')
    .get(latest.position);
  const end = logEnd(db);
  if (end < latest.position) {
    throw new AuditError(
      `the event log ends at position ${end} but it was anchored at position ${latest.position} (${latest.time}): events were removed; run keel audit verify`,
    );
  }
  if (row?.hash !== latest.hash) {
    throw new AuditError(
      `the event at position ${latest.position} does not match its signed anchor (${latest.time}): the log was rewritten; run keel audit verify`,
    );
  }
}

/** Why an anchor cannot be trusted (not signed by this keyring, or of another chain), or null. */
function anchorProblem(chain: Chain, anchor: Anchor): string | null {
  if (!chain.key.signed(anchorText(anchor), anchor.signature)) {
    return `the anchor at position ${anchor.position} (${anchor.time}) is not signed by this keyring`;
  }
  if (anchor.keyed_from !== chain.keyedFrom) {
    return `the anchor at position ${anchor.position} says keyed hashing starts at ${anchor.keyed_from}, the log says ${chain.keyedFrom}`;
  }
  return null;
}

export type ChainVerdict =
  | { ok: true; events: number; anchors: number; keyedFrom: number }
  | { ok: false; position: number; reason: string };

/**
 * Every event row in order (after a position, if given), read a page at a time: memory stays
 * bounded on either store.
 */
export function* eventRows(
  db: Db,
  pageSize = 5000,
  from = Number.MIN_SAFE_INTEGER,
): Generator<EventRow> {
  const page = db.prepare<[number, number], EventRow>(
    'SELECT * FROM events WHERE position > ? ORDER BY position LIMIT ?',
  );
  for (let after = from; ;) {
    const rows = page.all(after, pageSize);
    if (rows.length === 0) return;
    yield* rows;
    after = rows[rows.length - 1]!.position;
  }
}

/**
 * Walk the whole chain with the key and check every anchor (the table's, the head file's and any
 * given by a witness): the first changed, missing or reordered row, a bad anchor, or a log that
 * ends before an anchor is named by its position.
 */
export function verifyChain(db: Db, chain: Chain, witnessed: readonly Anchor[] = []): ChainVerdict {
  const anchors = [...keptAnchors(db, chain), ...witnessed];
  const byPosition = new Map<number, Anchor[]>();
  for (const a of anchors) {
    const problem = anchorProblem(chain, a);
    if (problem !== null) return { ok: false, position: a.position, reason: problem };
    byPosition.set(a.position, [...(byPosition.get(a.position) ?? []), a]);
  }
  let prevHash = GENESIS_HASH;
  let expected = 1;
  for (const row of eventRows(db)) {
    if (row.position !== expected) {
      return { ok: false, position: expected, reason: `event ${expected} is missing` };
    }
    if (chain.link(prevHash, row) !== row.hash) {
      return { ok: false, position: row.position, reason: 'hash does not match the event' };
    }
    for (const a of byPosition.get(row.position) ?? []) {
      if (a.hash !== row.hash) {
        return {
          ok: false,
          position: row.position,
          reason: `the event does not match its signed anchor of ${a.time}`,
        };
      }
    }
    prevHash = row.hash;
    expected += 1;
  }
  const end = expected - 1;
  const beyond = anchors.filter((a) => a.position > end);
  if (beyond.length > 0) {
    const furthest = beyond.reduce((a, b) => (b.position > a.position ? b : a));
    return {
      ok: false,
      position: end + 1,
      reason: `the log ends at position ${end} but was anchored at position ${furthest.position} (${furthest.time}): events ${end + 1}–${furthest.position} were removed`,
    };
  }
  // The head file usually holds the table's latest anchor again: each counts once.
  const distinct = new Set(anchors.map((a) => a.signature)).size;
  return { ok: true, events: end, anchors: distinct, keyedFrom: chain.keyedFrom };
}
