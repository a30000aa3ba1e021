import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { CommandCall } from '../cli.js';
import type { Config } from '../config.js';
import { openDatabase } from '../core/database.js';
import { openStore } from '../core/store/open.js';
import { redactSealed } from '../core/seal.js';

export function dbPath(config: Config): string {
  return join(config.dataDir, 'keel.sqlite');
}

export function requireLog(config: Config): void {
  // A PostgreSQL store is checked by connecting to it.
  if (config.store.kind === 'sqlite' && !existsSync(dbPath(config)))
    throw new Error(`no event log at ${dbPath(config)}`);
}

/** The log's store, as the daemon opens it (SQLite file or PostgreSQL). */
const openLog = (config: Config) => openStore(config.store, dbPath(config)).db;

/** `keel replay`: rebuild the read models, or build them as of a time into a new file. */
export async function replay({ config, options, deps, say, fail }: CommandCall): Promise<number> {
  requireLog(config);
  const [{ createApp }, { createLogger }, { DataDirLock }] = await Promise.all([
    import('../app.js'),
    import('../core/logger.js'),
    import('../daemon.js'),
  ]);
  const until = options.until;
  if (until !== undefined) {
    if (typeof until !== 'string' || Number.isNaN(Date.parse(until)))
      return fail('--until takes an ISO 8601 time');
    if (config.store.kind !== 'sqlite')
      return fail(
        '--until --into copies the SQLite log; it is not available on a PostgreSQL store',
      );
    const into = options.into;
    if (typeof into !== 'string')
      return fail('--until needs --into FILE (the live read models are not rolled back)');
    const target = resolve(into);
    if (existsSync(target)) return fail(`${target} exists; choose a new file`);
    mkdirSync(dirname(target), { recursive: true });
    const cutoff = new Date(until).toISOString();
    // Copy the log up to the cutoff into the new file, then build its read models there.
    const source = openDatabase(dbPath(config));
    source.pragma('wal_checkpoint(TRUNCATE)');
    source.close();
    copyFileSync(dbPath(config), target);
    const copy = openDatabase(target);
    copy.prepare('DELETE FROM events WHERE time > ?').run(cutoff);
    copy.prepare('DELETE FROM checkpoints').run();
    copy
      .prepare('DELETE FROM audit_anchors WHERE position > (SELECT max(position) FROM events)')
      .run();
    copy.prepare('DELETE FROM projection_versions').run();
    copy.close();
    const app = createApp(config, {
      ...deps,
      databasePath: target,
      logger: createLogger({ level: 'warn' }),
      checkReadModels: false,
    });
    const last = app.core.store.lastPosition();
    void app.close();
    say(`read models as of ${cutoff} (${last} events) written to ${target}`);
    return 0;
  }
  if (options.into !== undefined) return fail('--into needs --until TIME');
  const lock = new DataDirLock(config.dataDir);
  lock.acquire();
  try {
    const app = createApp(config, {
      ...deps,
      logger: createLogger({ level: 'warn' }),
      checkReadModels: false,
    });
    const started = Date.now();
    app.projections.rebuildAll((after, limit) => app.core.store.readAll(after, limit));
    const count = app.core.store.lastPosition();
    void app.close();
    say(
      `rebuilt ${app.projections.list.length} read models from ${count} events in ${Date.now() - started} ms`,
    );
    return 0;
  } finally {
    lock.release();
  }
}

/** Longest string value `keel events` prints whole unless asked for `--full`. */
export const SUMMARY_CHARS = 160;

/** Long string values shortened to their start and length: archives and documents stay readable. */
export function summarise(value: unknown): unknown {
  if (typeof value === 'string') {
    return value.length <= SUMMARY_CHARS
      ? value
      : `${value.slice(0, 48)}… (${value.length} chars; --full prints all)`;
  }
  if (Array.isArray(value)) return value.map(summarise);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, summarise(v)]));
  }
  return value;
}

const count = (raw: string | boolean | string[] | undefined, name: string): number | string => {
  if (raw === undefined) return Infinity;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  return Number.isSafeInteger(n) ? n : `--${name} takes a whole number`;
};

/** `keel events`: the log as JSON lines, filtered, oldest or newest first, and followed. */
export async function events({ config, options, say, fail }: CommandCall): Promise<number> {
  requireLog(config);
  const since = options.since;
  if (typeof since === 'string' && Number.isNaN(Date.parse(since)))
    return fail('--since takes an ISO 8601 time');
  const limit = count(options.limit, 'limit');
  if (typeof limit === 'string') return fail(limit);
  const newest = count(options.newest, 'newest');
  if (typeof newest === 'string') return fail(newest);
  if (options.limit !== undefined && options.newest !== undefined)
    return fail('--limit (the oldest N) and --newest (the newest N) cannot be combined');
  const where: string[] = [];
  const params: string[] = [];
  if (typeof options.stream === 'string') {
    where.push('stream = ?');
    params.push(options.stream);
  }
  if (typeof options.type === 'string') {
    where.push('type = ?');
    params.push(options.type);
  }
  if (typeof since === 'string') {
    where.push('time >= ?');
    params.push(new Date(since).toISOString());
  }
  const full = options.full === true;
  const db = openLog(config);
  let last = 0;
  const print = (rows: Iterable<Record<string, unknown>>) => {
    for (const row of rows) {
      last = row.position as number;
      const data = redactSealed(JSON.parse(row.data as string));
      say(
        JSON.stringify({
          position: row.position,
          stream: row.stream,
          version: row.version,
          type: row.type,
          time: row.time,
          data: full ? data : summarise(data),
          metadata: JSON.parse(row.metadata as string) as unknown,
          hash: row.hash,
        }),
      );
    }
  };
  const query = (after: number, take: number, fromEnd: boolean) => {
    const clause = ['position > ?', ...where].join(' AND ');
    const order = fromEnd ? 'DESC' : 'ASC';
    const sql = `SELECT * FROM events WHERE ${clause} ORDER BY position ${order} LIMIT ?`;
    const rows = db.prepare(sql).all(after, ...params, take) as Record<string, unknown>[];
    return fromEnd ? rows.reverse() : rows;
  };
  try {
    // No limit is a limit past any log (SQLite's -1 is no limit to PostgreSQL).
    const take = (n: number) => (Number.isFinite(n) ? n : Number.MAX_SAFE_INTEGER);
    if (Number.isFinite(newest)) print(query(0, take(newest), true));
    else print(query(0, take(limit), false));
    if (options.follow === true)
      await follow(() => print(query(last, Number.MAX_SAFE_INTEGER, false)));
    return 0;
  } finally {
    db.close();
  }
}

/** Print what is appended from now on, until SIGINT or SIGTERM. */
function follow(more: () => void): Promise<void> {
  return new Promise((done) => {
    const timer = setInterval(more, 250);
    const stop = () => {
      clearInterval(timer);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      done();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/** `keel audit verify|head`: walk the keyed chain and its anchors; sign the head for a witness. */
export async function audit(call: CommandCall): Promise<number> {
  const { config, options, positionals, io, say, fail } = call;
  const command = positionals[0];
  if (command !== 'verify' && command !== 'head')
    return fail(
      `unknown audit command ${JSON.stringify(command ?? '')}; try: keel audit verify | keel audit head`,
    );
  requireLog(config);
  if (config.sealKey === null && !existsSync(join(config.dataDir, 'keyring')))
    throw new Error(`no keyring at ${join(config.dataDir, 'keyring')} and no KEEL_SEAL_KEY`);
  const witness = options.witness;
  if (witness !== undefined && typeof witness !== 'string')
    throw new Error('--witness takes a file holding a head printed by keel audit head');
  const [{ AuditError, ChainKey, openChain }, { parseAnchor, verifyChain, writeAnchor }, seal] =
    await Promise.all([
      import('../core/chain.js'),
      import('../core/anchors.js'),
      import('../core/seal.js'),
    ]);
  const db = openLog(config);
  const broken = (position: number | null, reason: string) => {
    io.stderr.write(
      position === null
        ? `chain broken: ${reason}\n`
        : `chain broken at position ${position}: ${reason}\n`,
    );
    return 1;
  };
  try {
    let chain;
    try {
      chain = openChain(
        db,
        new ChainKey(seal.loadSealKey(config.dataDir, config.sealKey ?? undefined)),
        join(config.dataDir, 'audit', 'head.json'),
      );
    } catch (err) {
      if (err instanceof AuditError) return broken(null, err.message);
      throw err;
    }
    const witnessed =
      typeof witness === 'string' ? [parseAnchor(readFileSync(witness, 'utf8'), witness)] : [];
    const verdict = verifyChain(db, chain, witnessed);
    if (!verdict.ok) return broken(verdict.position, verdict.reason);
    if (command === 'head') {
      const head = writeAnchor(db, chain, new Date());
      if (head === null) throw new Error('the event log is empty: there is no head to sign');
      say(JSON.stringify(head));
      return 0;
    }
    say(
      `chain verified: ${verdict.events} events (keyed from position ${verdict.keyedFrom}), ${verdict.anchors} anchors`,
    );
  } finally {
    db.close();
  }
  return verifyReadModels(call);
}

/**
 * The second half of `keel audit verify`: the read models authorization and issuance trust,
 * rebuilt from the (verified) log and compared row by row (ADR 0094).
 */
async function verifyReadModels({ config, deps, io, say }: CommandCall): Promise<number> {
  const [{ createApp }, { createLogger }, { READ_MODEL_REPAIR, checkReadModels }] =
    await Promise.all([
      import('../app.js'),
      import('../core/logger.js'),
      import('../core/read-model-check.js'),
    ]);
  const app = createApp(config, {
    ...deps,
    logger: createLogger({ level: 'warn' }),
    checkReadModels: false,
  });
  try {
    const models = checkReadModels(app.core.db, app.core.store.chain, app.projections.list);
    if (!models.ok) {
      io.stderr.write(`${models.reason}. ${READ_MODEL_REPAIR}\n`);
      return 1;
    }
    say(`read models verified: ${models.rows} rows in ${models.tables} guarded tables`);
    return 0;
  } finally {
    await app.close();
  }
}
