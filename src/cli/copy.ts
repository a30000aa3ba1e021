import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CommandCall } from '../cli.js';
import type { Config } from '../config.js';
import { AuditError, ChainKey, openChain } from '../core/chain.js';
import type { Db } from '../core/database.js';
import { loadSealKey } from '../core/seal.js';
import { openStore } from '../core/store/open.js';
import { isPostgresUrl, redactUrl } from '../core/store/url.js';
import { eventRows, parseAnchor, verifyChain, writeAnchor, type Anchor } from '../core/anchors.js';

/**
 * `keel copy --from A --to B`: the whole log — events with their hashes, the audit chain record
 * and anchors, the reactor checkpoints — from one store to an empty one, the chain verified on
 * the source before and on the target inside the copy's own transaction. Read models, schedule
 * rows and the leadership lease are not copied: the target builds them from the log when a
 * daemon first starts on it. The keyring stays with a data directory: a directory end keeps its
 * own; a PostgreSQL end's is the one in `--data`, beside its audit head file.
 */

/** The tables that make up the log itself, in the order they are copied. */
const LOG_TABLES = ['events', 'audit_chain', 'audit_anchors', 'checkpoints'] as const;

const COLUMNS: Readonly<Record<(typeof LOG_TABLES)[number], readonly string[]>> = {
  events: ['position', 'stream', 'version', 'type', 'time', 'data', 'metadata', 'hash'],
  audit_chain: ['id', 'keyed_from', 'mac'],
  audit_anchors: ['position', 'hash', 'time', 'keyed_from', 'signature'],
  checkpoints: ['name', 'position'],
};

/** One end of a copy as given on the command line. */
type Place = { kind: 'dir'; dir: string } | { kind: 'store'; url: string };

/** An opened end: its database, and the directory that holds its keyring and audit head. */
interface End {
  readonly place: Place;
  readonly db: Db;
  readonly home: string;
  readonly headFile: string;
}

function placeOf(text: string): Place {
  return isPostgresUrl(text) ? { kind: 'store', url: text } : { kind: 'dir', dir: resolve(text) };
}

/** The directory holding an end's keyring and `audit/head.json`. */
const homeOf = (place: Place, config: Config): string =>
  place.kind === 'dir' ? place.dir : config.dataDir;

const sameEnd = (a: Place, b: Place): boolean =>
  a.kind === 'dir' && b.kind === 'dir'
    ? a.dir === b.dir
    : a.kind === 'store' && b.kind === 'store' && a.url === b.url;

function openEnd(place: Place, config: Config, create: boolean): End {
  const home = homeOf(place, config);
  const headFile = join(home, 'audit', 'head.json');
  switch (place.kind) {
    case 'dir': {
      const path = join(place.dir, 'keel.sqlite');
      if (!create && !existsSync(path)) throw new Error(`no event log at ${path}`);
      return { place, db: openStore({ kind: 'sqlite' }, path, config.sync).db, home, headFile };
    }
    case 'store':
      return { place, db: openStore({ kind: 'postgres', url: place.url }, '').db, home, headFile };
  }
}

/** The seal key the source's chain is keyed with: KEEL_SEAL_KEY, or the source's keyring file. */
function sourceKey(home: string, config: Config): Buffer {
  if (config.sealKey !== null) return loadSealKey(home, config.sealKey);
  const file = join(home, 'keyring');
  if (!existsSync(file)) {
    throw new Error(
      `no keyring at ${file} and no KEEL_SEAL_KEY: the source's chain cannot be verified without its key`,
    );
  }
  return loadSealKey(home, undefined);
}

/**
 * Whether the target needs the source's keyring written beside it (false with KEEL_SEAL_KEY, or
 * when its home already holds the same key); a different key there is refused.
 */
function targetNeedsKeyring(home: string, key: Buffer, config: Config): boolean {
  if (config.sealKey !== null) return false;
  const file = join(home, 'keyring');
  if (!existsSync(file)) return true;
  if (!loadSealKey(home, undefined).equals(key)) {
    throw new Error(
      `${file} holds another key than the source's: the copied chain and sealed secrets need the source's keyring`,
    );
  }
  return false;
}

/** Rows in the log's own tables: a target must have none. */
function rowsOf(db: Db): Record<string, number> {
  return Object.fromEntries(
    LOG_TABLES.map((t) => [
      t,
      db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${t}`).get()?.n ?? 0,
    ]),
  );
}

/** A target already holding any of the log's rows is refused (checked again inside the copy). */
function refuseHeld(label: string, db: Db): void {
  const held = Object.entries(rowsOf(db)).filter(([, n]) => n > 0);
  if (held.length > 0) {
    throw new Error(
      `${label} is not empty (${held.map(([t, n]) => `${n} ${t} rows`).join(', ')}): keel copy writes only into an empty store`,
    );
  }
}

/**
 * Copy every row of the log's tables from `from` to `to` (inside the caller's transactions); the
 * events a page at a time, so memory stays bounded however long the log.
 */
function copyRows(from: Db, to: Db): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const table of LOG_TABLES) {
    const columns = COLUMNS[table];
    const list = columns.join(', ');
    const insert = to.prepare(
      `INSERT INTO ${table} (${list}) VALUES (${columns.map(() => '?').join(', ')})`,
    );
    const rows: Iterable<object> =
      table === 'events'
        ? eventRows(from)
        : from.prepare<[], Record<string, unknown>>(`SELECT ${list} FROM ${table}`).all();
    let n = 0;
    for (const row of rows) {
      insert.run(...columns.map((c) => (row as Record<string, unknown>)[c]));
      n += 1;
    }
    counts[table] = n;
  }
  return counts;
}

/** A chain that does not verify: exit 1, as `keel audit verify` does. */
class BrokenChain extends Error {}

export async function copy({ config, options, io, say, fail }: CommandCall): Promise<number> {
  const { from, to } = options;
  if (typeof from !== 'string' || from === '' || typeof to !== 'string' || to === '')
    return fail('keel copy needs --from and --to (each a data directory or a postgres:// URL)');
  if (options.store !== undefined)
    return fail('keel copy names its stores with --from and --to; --store is not used');
  const source = placeOf(from);
  const target = placeOf(to);
  if (sameEnd(source, target)) return fail('--from and --to name the same store');
  const { DataDirLock, makePrivate } = await import('../daemon.js');
  process.umask(0o077);
  // A directory end is locked like a daemon's: nothing writes the source while it is read, and
  // no daemon starts on the target while it is written.
  const locks: InstanceType<typeof DataDirLock>[] = [];
  const ends: End[] = [];
  try {
    for (const place of [source, target]) {
      if (place.kind !== 'dir') continue;
      if (place === target) makePrivate(place.dir);
      else if (!existsSync(join(place.dir, 'keel.sqlite')))
        throw new Error(`no event log at ${join(place.dir, 'keel.sqlite')}`);
      const lock = new DataDirLock(place.dir);
      lock.acquire();
      locks.push(lock);
    }
    const src = openEnd(source, config, false);
    ends.push(src);
    const key = sourceKey(src.home, config);
    const dst = openEnd(target, config, true);
    ends.push(dst);
    refuseHeld(redactUrl(to), dst.db);
    const writeKeyring = targetNeedsKeyring(dst.home, key, config);
    const chainKey = new ChainKey(key);
    const sourceChain = openChain(src.db, chainKey, src.headFile);
    // A head file already where the target's goes (a PostgreSQL target's --data may be the
    // source's directory) must be a head of this very log: it is checked as a witness.
    const witnessed: Anchor[] =
      dst.headFile !== src.headFile && existsSync(dst.headFile)
        ? [parseAnchor(readFileSync(dst.headFile, 'utf8'), dst.headFile)]
        : [];
    const copied = src.db.transaction(() => {
      const verdict = verifyChain(src.db, sourceChain, witnessed);
      if (!verdict.ok) {
        throw new BrokenChain(
          `the source's chain is broken at position ${verdict.position}: ${verdict.reason}; nothing was copied`,
        );
      }
      return dst.db
        .transaction(() => {
          refuseHeld(redactUrl(to), dst.db);
          const counts = copyRows(src.db, dst.db);
          // The copy is checked before it commits: a target that does not verify is rolled back.
          const after = verifyChain(dst.db, openChain(dst.db, chainKey, null));
          if (!after.ok || after.events !== verdict.events) {
            throw new BrokenChain(
              after.ok
                ? `the target holds ${after.events} events after the copy, the source ${verdict.events}; nothing was copied`
                : `the target's chain is broken at position ${after.position} after the copy: ${after.reason}; nothing was copied`,
            );
          }
          return { counts, verdict };
        })
        .immediate();
    })();
    if (writeKeyring) {
      mkdirSync(dst.home, { recursive: true, mode: 0o700 });
      writeFileSync(join(dst.home, 'keyring'), `${key.toString('hex')}\n`, {
        mode: 0o600,
        flag: 'wx',
      });
    }
    // The target's head, signed and kept in its own head file as a daemon would on start.
    writeAnchor(dst.db, openChain(dst.db, chainKey, dst.headFile), new Date());
    if (target.kind === 'dir') makePrivate(target.dir);
    const { counts, verdict } = copied;
    say(
      `copied ${counts.events} events (keyed from position ${verdict.keyedFrom}), ${counts.audit_anchors} anchors and ${counts.checkpoints} reactor checkpoints from ${redactUrl(from)} to ${redactUrl(to)}; the chain verifies on both` +
        `${writeKeyring ? `; the keyring was copied to ${join(dst.home, 'keyring')}` : ''}; read models are built from the log when keel serve first starts on it`,
    );
    return 0;
  } catch (err) {
    if (err instanceof BrokenChain || err instanceof AuditError) {
      io.stderr.write(`keel: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    for (const end of ends) end.db.close();
    for (const lock of locks) lock.release();
  }
}
