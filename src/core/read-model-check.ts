import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { eventRows } from './anchors.js';
import { AuditError, GENESIS_HASH, logEnd, type Chain, type EventRow } from './chain.js';
import type { Db, SqliteDb } from './database.js';
import type { AuditMetadata, StoredEvent } from './events.js';
import { eventRouter, type Projection } from './projections.js';

/**
 * The read models authorization and issuance trust (policies, tokens, mounts, roles, issuers,
 * keys, ACME accounts...) are checked against the log before anything reads them (ADR 0094):
 * the projections that own them are rebuilt from the log into a scratch SQLite file, every event
 * read having its keyed link checked, and each guarded table is compared row by row with the
 * store's. Whoever can write the database but lacks the keyring can change neither the log (its
 * links) nor such a row (the rebuild says otherwise) unseen.
 */

/** What the check found: nothing amiss, or the first row (or event) that differs. */
export type ReadModelVerdict =
  { ok: true; events: number; tables: number; rows: number } | { ok: false; reason: string };

/** Events applied per scratch transaction. */
const BATCH = 20_000;

type Value = string | number | bigint | Buffer | null;

/** A verified events row as the projections see it; metadata text runs are parsed once. */
function toStored(row: EventRow, last: { text: string; parsed?: AuditMetadata }): StoredEvent {
  if (row.metadata !== last.text || last.parsed === undefined) {
    last.text = row.metadata;
    last.parsed = Object.freeze(JSON.parse(row.metadata) as AuditMetadata);
  }
  // Parsed only if a projection reads it: most events are of types no guarded projection takes.
  let data: unknown;
  let parsed = false;
  return {
    position: row.position,
    stream: row.stream,
    version: row.version,
    type: row.type,
    time: row.time,
    get data(): unknown {
      if (!parsed) {
        data = JSON.parse(row.data) as unknown;
        parsed = true;
      }
      return data;
    },
    metadata: last.parsed,
    hash: row.hash,
  };
}

/** The guarded projections, and their guarded tables in registration order. */
const guardedOf = (projections: readonly Projection[]) => {
  const chosen = projections.filter((p) => (p.guarded ?? []).length > 0);
  return { chosen, tables: chosen.flatMap((p) => [...(p.guarded ?? [])]) };
};

/**
 * Rebuild the guarded projections of `projections` from the log in `db` (each link checked with
 * `chain`) and compare their guarded tables with the ones in `db`. The comparison is made under
 * the log's write lock, after the events appended meanwhile are applied too, so rows and log are
 * of one moment even while other processes write.
 */
export function checkReadModels(
  db: Db,
  chain: Chain,
  projections: readonly Projection[],
): ReadModelVerdict {
  const { chosen, tables } = guardedOf(projections);
  if (chosen.length === 0) return { ok: true, events: 0, tables: 0, rows: 0 };
  const dir = mkdtempSync(join(tmpdir(), 'keel-read-models-'));
  const scratch = new Database(join(dir, 'scratch.sqlite'));
  try {
    // A throwaway file: nothing in it needs to survive a crash.
    scratch.pragma('journal_mode = OFF');
    scratch.pragma('synchronous = OFF');
    const apply = eventRouter(
      scratch,
      chosen,
      chosen.map((p) => p.setup(scratch)),
    );
    const walk = new ChainWalk(chain);
    const applyAll = scratch.transaction((rows: readonly EventRow[]) => {
      for (const row of rows) apply(walk.next(row));
    });
    const replay = (from: Iterable<EventRow>) => {
      let batch: EventRow[] = [];
      for (const row of from) {
        batch.push(row);
        if (batch.length >= BATCH) {
          applyAll(batch);
          batch = [];
        }
      }
      if (batch.length > 0) applyAll(batch);
    };
    replay(eventRows(db));
    return db
      .transaction(() => {
        replay(eventRows(db, 5000, walk.end));
        let rows = 0;
        for (const table of tables) {
          const found = compareTable(scratch, db, table);
          if (typeof found === 'string') return { ok: false as const, reason: found };
          rows += found;
        }
        return { ok: true as const, events: walk.end, tables: tables.length, rows };
      })
      .immediate();
  } catch (err) {
    if (err instanceof BrokenLink) return { ok: false, reason: err.message };
    throw err;
  } finally {
    scratch.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An event whose keyed link does not hold: the log itself was changed. */
class BrokenLink extends Error {}

/** Walks the chain as rows arrive: each must follow the last and carry its keyed link. */
class ChainWalk {
  end = 0;
  #prevHash = GENESIS_HASH;
  readonly #metadata: { text: string; parsed?: AuditMetadata } = { text: '' };
  constructor(readonly chain: Chain) {}

  next(row: EventRow): StoredEvent {
    if (row.position !== this.end + 1)
      throw new BrokenLink(
        `the event log is broken at position ${this.end + 1} (the event is missing); run keel audit verify`,
      );
    if (this.chain.link(this.#prevHash, row) !== row.hash)
      throw new BrokenLink(
        `the event log is broken at position ${row.position} (its hash does not match the event); run keel audit verify`,
      );
    this.#prevHash = row.hash;
    this.end = row.position;
    return toStored(row, this.#metadata);
  }
}

/**
 * Compare one table of the rebuild with the store's, by primary key: the first differing row (in
 * key order) as a sentence, or how many rows agree. Rows are compared as the text of their
 * values; only the rows that differ are looked at column by column.
 */
function compareTable(scratch: Database.Database, db: Db, table: string): string | number {
  const columns = scratch
    .prepare<[], { name: string; pk: number }>(`PRAGMA table_info("${table}")`)
    .all();
  const names = columns.map((c) => c.name);
  const keyed = columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk);
  const keyAt = (keyed.length > 0 ? keyed : columns).map((c) => names.indexOf(c.name));
  const select = `SELECT ${names.map((n) => `"${n}"`).join(', ')} FROM "${table}"`;
  const keyOf = (row: readonly Value[]) => rowText(keyAt.map((i) => row[i]));
  const expected = new Map<string, readonly Value[]>();
  for (const row of scratch.prepare<[], Value[]>(select).raw(true).iterate())
    expected.set(keyOf(row), row);
  const rows = expected.size;
  const problems: { key: string; row: readonly Value[]; what: string }[] = [];
  for (const row of db.prepare<[], Value[]>(select).raw(true).iterate()) {
    const key = keyOf(row);
    const want = expected.get(key);
    if (want === undefined) problems.push({ key, row, what: 'is not in the log' });
    else {
      expected.delete(key);
      if (rowText(want) !== rowText(row)) {
        const changed = names.filter((_, i) => rowText([want[i]]) !== rowText([row[i]]));
        problems.push({ key, row, what: `differs in ${changed.join(', ')}` });
      }
    }
  }
  for (const [key, row] of expected) problems.push({ key, row, what: 'is missing' });
  if (problems.length === 0) return rows;
  const first = problems.reduce((a, b) => (b.key < a.key ? b : a));
  const key = keyAt.map((i) => `${names[i]} ${rowText([first.row[i]]).slice(1, -1)}`);
  return `the read model table ${table} does not match the event log: the row ${
    key.length === 1 ? key[0] : `(${key.join(', ')})`
  } ${first.what}`;
}

/**
 * Values as comparable text: SQLite's and PostgreSQL's adapters give the same values (numbers,
 * text, null; a Buffer as its JSON form).
 */
const rowText = (values: readonly unknown[]): string => JSON.stringify(values);

/** What to do about a failed check: the log is the truth. */
export const READ_MODEL_REPAIR =
  'keel replay rebuilds the read models from the log (keep a copy of the store first)';

/** A read-model check that failed, as start-up reports it: nothing is served from the store. */
export function refuseTamperedReadModels(
  verdict: ReadModelVerdict,
): asserts verdict is Extract<ReadModelVerdict, { ok: true }> {
  if (!verdict.ok)
    throw new AuditError(`${verdict.reason}; start-up refuses this store. ${READ_MODEL_REPAIR}`);
}

/**
 * The seal of a SQLite store used by one process: the log position its guarded tables were last
 * known to match, and a signature (the anchor subkey) over that position and a digest of the
 * tables. A store whose log still ends there and whose tables still hash to the signed digest is
 * what Keel left, and start-up needs no rebuild; anything else is rebuilt and compared.
 */
const SEAL_TABLE = `CREATE TABLE IF NOT EXISTS read_model_seal (
  id INTEGER PRIMARY KEY CHECK (id = 1), position INTEGER NOT NULL, signature TEXT NOT NULL)`;

const sealText = (position: number, digest: string) => `keel read models\n${position}\n${digest}`;

/**
 * SHA-256 over the guarded tables' rows, each table in rowid order: the order of the file, read
 * straight through. Anything that renumbers rows (a VACUUM) costs one rebuild at the next start.
 */
function tablesDigest(sqlite: SqliteDb, tables: readonly string[]): string {
  const digest = createHash('sha256');
  for (const table of tables) {
    digest.update(`${table}\n`);
    const columns = sqlite
      .prepare<[], string>(`SELECT name FROM pragma_table_info('${table}')`)
      .pluck()
      .all();
    // Each row as JSON text made by SQLite itself: no row object is built.
    const rows = sqlite
      .prepare<[], string>(
        `SELECT json_array(${columns.map((c) => `"${c}"`).join(', ')}) FROM "${table}" ORDER BY rowid`,
      )
      .pluck();
    let text = '';
    for (const row of rows.iterate()) {
      text += `${row}\n`;
      if (text.length > 1 << 16) {
        digest.update(text);
        text = '';
      }
    }
    digest.update(text);
  }
  return digest.digest('hex');
}

/** How start-up found the guarded read models: as sealed, or rebuilt from the log and compared. */
export interface StartUpCheck {
  how: 'sealed' | 'rebuilt';
  events: number;
  rows: number;
  /**
   * At a clean stop: seal the tables as they are, unless another connection committed to the
   * file since the check (someone else's write may be in them).
   */
  seal(): void;
}

/**
 * The start-up check (ADR 0094). A SQLite store used by this process alone may be found as Keel
 * sealed it at its last clean stop; any other store (PostgreSQL, `--workers`, no seal, a log
 * that moved, tables that changed) is rebuilt from the log and compared. Throws an
 * `AuditError` naming the first row or event that differs.
 */
export function checkAtStartUp(
  db: Db,
  sqlite: SqliteDb | null,
  alone: boolean,
  chain: Chain,
  projections: readonly Projection[],
): StartUpCheck {
  const { tables } = guardedOf(projections);
  const sealable = alone && sqlite !== null && !sqlite.memory ? sqlite : null;
  if (sealable === null) {
    const verdict = checkReadModels(db, chain, projections);
    refuseTamperedReadModels(verdict);
    return { how: 'rebuilt', events: verdict.events, rows: verdict.rows, seal: () => undefined };
  }
  sealable.exec(SEAL_TABLE);
  // Commits by other connections from here on show as a new data version: even one made while the
  // check ran, after its comparison, keeps the stop from sealing.
  const dataVersion = sealable.prepare<[], number>('PRAGMA data_version').pluck();
  const seen = dataVersion.get()!;
  const sealedAt = sealable.transaction(() => {
    const seal = sealable
      .prepare<[], { position: number; signature: string }>(
        'SELECT position, signature FROM read_model_seal WHERE id = 1',
      )
      .get();
    const end = logEnd(sealable);
    if (seal === undefined || seal.position !== end) return null;
    const digest = tablesDigest(sealable, tables);
    return chain.key.signed(sealText(end, digest), seal.signature) ? end : null;
  })();
  const found = (() => {
    if (sealedAt !== null) return { how: 'sealed' as const, events: sealedAt, rows: 0 };
    const verdict = checkReadModels(db, chain, projections);
    refuseTamperedReadModels(verdict);
    return { how: 'rebuilt' as const, events: verdict.events, rows: verdict.rows };
  })();
  return {
    ...found,
    seal: () => sealIfUnchanged(sealable, chain, tables, seen === dataVersion.get()),
  };
}

function sealIfUnchanged(
  sqlite: SqliteDb,
  chain: Chain,
  tables: readonly string[],
  unchanged: boolean,
): void {
  // Another connection committed since the check: its rows were never compared, so the last
  // seal (now stale) stays and the next start rebuilds.
  if (!unchanged) return;
  sqlite
    .transaction(() => {
      const end = logEnd(sqlite);
      sqlite
        .prepare(
          'INSERT INTO read_model_seal (id, position, signature) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET position = excluded.position, signature = excluded.signature',
        )
        .run(end, chain.key.sign(sealText(end, tablesDigest(sqlite, tables))));
    })
    .immediate();
}
