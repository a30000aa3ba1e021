import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { machines } from '../machines/index.js';
import type { AppDeps } from './app.js';
import { createApp } from './app.js';
import type { Config } from './config.js';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './core/database.js';
import { verifyChain } from './core/chain.js';
import { createLogger } from './core/logger.js';
import { redactSealed } from './core/seal.js';
import { DataDirLock, startDaemon } from './daemon.js';
import { renderDiagram } from './ui/diagram.js';
import { parseDuration } from './secrets/duration.js';

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

const USAGE = `usage: keel <command> [options]

commands:
  serve        run the daemon            [--data DIR] [--listen HOST:PORT] [--log-level L]
               [--tls auto | --tls-cert FILE --tls-key FILE]  serve HTTPS
  replay       rebuild every read model from the log
               [--until TIME --into FILE]  build the read models as of TIME into a new database file
  events       print events as JSON lines [--stream S] [--type T] [--since TIME] [--limit N]
  audit verify walk the hash chain; exit 1 naming the first bad position
  diagram      draw a machine            <machine> [--format mermaid|dot|svg]
  token        mint a token without HTTP (a lost bootstrap.json)
               token runs [--user admin] | token secrets [--policy P,…] [--ttl 1h]

every command takes --data DIR (default: data/)`;

/** Split argv into positionals and `--flag value` / `--flag=value` / `--flag` options. */
export function parseArgs(argv: readonly string[]): {
  positionals: string[];
  flags: Record<string, string | boolean>;
} {
  const positionals: string[] = [];
  const flags: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    if (eq > 0) {
      flags[arg.slice(2, eq)] = arg.slice(eq + 1);
      continue;
    }
    const next = argv[i + 1];
    if (next !== undefined && !next.startsWith('--')) {
      flags[arg.slice(2)] = next;
      i++;
    } else {
      flags[arg.slice(2)] = true;
    }
  }
  return { positionals, flags };
}

export async function runCli(
  argv: readonly string[],
  io: CliIo,
  deps: AppDeps = {},
): Promise<number> {
  const { positionals, flags } = parseArgs(argv);
  const [command, ...rest] = positionals;
  const say = (text: string) => io.stdout.write(`${text}\n`);
  const fail = (text: string) => {
    io.stderr.write(`keel: ${text}\n`);
    return 2;
  };
  let config: Config;
  try {
    config = loadConfig(flags, io.env);
  } catch (err) {
    if (err instanceof ConfigError) return fail(err.message);
    throw err;
  }
  try {
    switch (command) {
      case 'serve':
        return await serve(config, io, deps);
      case 'replay':
        return replay(config, flags, say, fail, deps);
      case 'events':
        return events(config, flags, say, fail);
      case 'audit':
        if (rest[0] !== 'verify')
          return fail(
            `unknown audit command ${JSON.stringify(rest[0] ?? '')}; try: keel audit verify`,
          );
        return audit(config, say, io);
      case 'token':
        return token(config, rest, flags, say, fail);
      case 'diagram':
        return await diagram(rest[0], flags, say, fail);
      case undefined:
      case 'help':
        say(USAGE);
        return command === undefined ? 2 : 0;
      default:
        return fail(`unknown command ${JSON.stringify(command)}\n${USAGE}`);
    }
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err));
  }
}

async function serve(config: Config, io: CliIo, deps: AppDeps): Promise<number> {
  const logger = createLogger({ level: config.logLevel, destination: io.stdout });
  // Signals that arrive while starting are honoured as soon as the daemon is up.
  let signalled: string | null = null;
  let onSignal = (signal: string) => {
    signalled = signal;
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  const daemon = await startDaemon(config, { ...deps, logger });
  if (daemon.bootstrapPath !== null) {
    logger.info(
      { bootstrap: daemon.bootstrapPath },
      'first start: tokens and endpoints written to bootstrap.json (mode 0600)',
    );
  }
  logger.info(
    { address: daemon.server.url, data: config.dataDir, pid: process.pid },
    'keel is serving',
  );
  await new Promise<void>((done) => {
    onSignal = (signal: string) => {
      logger.info({ signal }, 'stopping: finishing in-flight requests');
      void daemon.stop().then(done);
    };
    if (signalled !== null) onSignal(signalled);
  });
  logger.info('stopped');
  return 0;
}

function dbPath(config: Config): string {
  return join(config.dataDir, 'keel.sqlite');
}

function requireLog(config: Config): void {
  if (!existsSync(dbPath(config))) throw new Error(`no event log at ${dbPath(config)}`);
}

function replay(
  config: Config,
  flags: Record<string, string | boolean>,
  say: (t: string) => void,
  fail: (t: string) => number,
  deps: AppDeps,
): number {
  requireLog(config);
  const until = flags.until;
  if (until !== undefined) {
    if (typeof until !== 'string' || Number.isNaN(Date.parse(until)))
      return fail('--until takes an ISO 8601 time');
    const into = flags.into;
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
    copy.prepare('DELETE FROM projection_versions').run();
    copy.close();
    const app = createApp(config, {
      ...deps,
      databasePath: target,
      logger: createLogger({ level: 'warn' }),
    });
    const last = app.core.store.lastPosition();
    void app.close();
    say(`read models as of ${cutoff} (${last} events) written to ${target}`);
    return 0;
  }
  const lock = new DataDirLock(config.dataDir);
  lock.acquire();
  try {
    const app = createApp(config, { ...deps, logger: createLogger({ level: 'warn' }) });
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

function token(
  config: Config,
  rest: string[],
  flags: Record<string, string | boolean>,
  say: (t: string) => void,
  fail: (t: string) => number,
): number {
  requireLog(config);
  const kind = rest[0];
  if (kind !== 'runs' && kind !== 'secrets') return fail('keel token runs | keel token secrets');
  // No directory lock: appends are safe beside a running daemon (optimistic versions).
  const app = createApp(config, { logger: createLogger({ level: 'warn' }) });
  try {
    if (kind === 'runs') {
      const user = typeof flags.user === 'string' ? flags.user : 'admin';
      say(app.tokens.runsUserToken(user, 'keel token'));
    } else {
      const policies = typeof flags.policy === 'string' ? flags.policy.split(',') : ['root'];
      const ttl = typeof flags.ttl === 'string' ? parseDuration(flags.ttl, 'ttl') : 0;
      say(app.tokens.secretsToken(policies, ttl));
    }
    return 0;
  } finally {
    void app.close();
  }
}

function events(
  config: Config,
  flags: Record<string, string | boolean>,
  say: (t: string) => void,
  fail: (t: string) => number,
): number {
  requireLog(config);
  const since = flags.since;
  if (since !== undefined && (typeof since !== 'string' || Number.isNaN(Date.parse(since)))) {
    return fail('--since takes an ISO 8601 time');
  }
  const limit = flags.limit === undefined ? Infinity : Number(flags.limit);
  if (Number.isNaN(limit) || limit < 0) return fail('--limit takes a number');
  const db = openDatabase(dbPath(config));
  try {
    const where: string[] = [];
    const params: string[] = [];
    if (typeof flags.stream === 'string') {
      where.push('stream = ?');
      params.push(flags.stream);
    }
    if (typeof flags.type === 'string') {
      where.push('type = ?');
      params.push(flags.type);
    }
    if (typeof since === 'string') {
      where.push('time >= ?');
      params.push(new Date(since).toISOString());
    }
    const sql = `SELECT * FROM events ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY position`;
    let n = 0;
    for (const row of db.prepare(sql).iterate(...params) as IterableIterator<
      Record<string, unknown>
    >) {
      if (n++ >= limit) break;
      say(
        JSON.stringify({
          position: row.position,
          stream: row.stream,
          version: row.version,
          type: row.type,
          time: row.time,
          data: redactSealed(JSON.parse(row.data as string)),
          metadata: JSON.parse(row.metadata as string) as unknown,
          hash: row.hash,
        }),
      );
    }
    return 0;
  } finally {
    db.close();
  }
}

function audit(config: Config, say: (t: string) => void, io: CliIo): number {
  requireLog(config);
  const db = openDatabase(dbPath(config));
  try {
    const verdict = verifyChain(db);
    if (verdict.ok) {
      say(`chain verified: ${verdict.events} events`);
      return 0;
    }
    io.stderr.write(`chain broken at position ${verdict.position}: ${verdict.reason}\n`);
    return 1;
  } finally {
    db.close();
  }
}

async function diagram(
  name: string | undefined,
  flags: Record<string, string | boolean>,
  say: (t: string) => void,
  fail: (t: string) => number,
): Promise<number> {
  const names = Object.keys(machines).sort();
  if (name === undefined)
    return fail(`which machine? one of: ${names.join(', ') || '(none registered)'}`);
  const machine = machines[name];
  if (machine === undefined)
    return fail(`unknown machine ${JSON.stringify(name)}; one of: ${names.join(', ')}`);
  const format = flags.format ?? 'mermaid';
  if (format !== 'mermaid' && format !== 'dot' && format !== 'svg')
    return fail('--format is mermaid, dot or svg');
  say(
    await renderDiagram(
      machine,
      format,
      typeof flags.highlight === 'string' ? flags.highlight : undefined,
    ),
  );
  return 0;
}
