import { isAbsolute, join, resolve } from 'node:path';
import type { SyncMode } from './core/database.js';
import { isPostgresUrl, redactUrl, type StoreSpec } from './core/store/url.js';

/** Everything Keel can be told, frozen at start. Each key is documented in docs/operations.md. */
export interface Config {
  /** Directory holding the event log, the keyring, bootstrap.json and the cloud's store. */
  readonly dataDir: string;
  readonly listen: { readonly host: string; readonly port: number };
  /** The address clients reach the daemon at (upload URLs, bootstrap.json). */
  readonly publicAddress: string;
  readonly logLevel: string;
  /** Largest accepted API request body. */
  readonly bodyLimitBytes: number;
  /** Largest accepted configuration upload. */
  readonly uploadLimitBytes: number;
  readonly rateLimit: {
    readonly enabled: boolean;
    readonly perSecond: number;
    readonly runListsPerMinute: number;
  };
  /** How long after a cancel force-cancel becomes available. */
  readonly forceCancelCooloffMs: number;
  /** How long after a failed webhook delivery it is tried again (the third attempt waits 4×). */
  readonly notificationRetryMs: number;
  /** How often reactors and the schedule are polled besides being woken by appends. */
  readonly pollIntervalMs: number;
  /** A terraform-compatible binary for the `command` executor driver, if any. */
  readonly engineBin: string | null;
  /**
   * Named terraform-compatible binaries (`KEEL_ENGINES`) a workspace may choose by name (its
   * `execution-engine`); `engineBin` is the engine `default` (see `enginesOf`). Only the
   * operator names binaries, never an API caller.
   */
  readonly engines: Readonly<Record<string, string>>;
  /**
   * The 32-byte seal key as given in `KEEL_SEAL_KEY` (64 hex characters or base64), or null for
   * `<data>/keyring`. Environment only: a key on the command line would show in `ps`.
   */
  readonly sealKey: string | null;
  /**
   * Processes serving one data directory (`--workers`, ADR 0080): above 1, a primary forks that
   * many workers sharing the listener and the log, one of them leading the reactors and timers.
   */
  readonly workers: number;
  /**
   * Where the log, read models and schedules live (`--store`, ADR 0081): the embedded SQLite
   * file `<data>/keel.sqlite` (the default), or a PostgreSQL database several daemons may share.
   */
  readonly store: StoreSpec;
  /** SQLite's sync at each commit: `full` survives power loss, `normal` only a process crash. */
  readonly sync: SyncMode;
  /** How often, while serving, the audit chain's head is anchored (also on start and stop). */
  readonly anchorIntervalMs: number;
  /** The listener's limits: a request's headers, and the whole request, must arrive in time. */
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  /** The ports ACME validations reach a client's server on: http-01 (80) and tls-alpn-01 (443). */
  readonly acmeHttpPort: number;
  readonly acmeTlsPort: number;
  /** How the listener speaks: plain HTTP, the operator's certificate, or Keel's own CA. */
  readonly tls: ListenerTls;
}

/**
 * Whether other processes may append to this process's log: `--workers` on one file, or any
 * node on a PostgreSQL store. Leadership, the log watch and run-phase claims follow from it.
 */
export const sharesLog = (config: Pick<Config, 'workers' | 'store'>): boolean =>
  config.workers > 1 || config.store.kind === 'postgres';

export type { StoreSpec };

export type ListenerTls =
  | { readonly mode: 'off' }
  | { readonly mode: 'files'; readonly certFile: string; readonly keyFile: string }
  | { readonly mode: 'auto' };

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Every flag `keel serve` takes; each is also a `KEEL_*` environment variable. */
export const CONFIG_FLAGS = [
  'data',
  'listen',
  'public-address',
  'log-level',
  'body-limit',
  'upload-limit',
  'rate-limit',
  'rate-limit-per-second',
  'rate-limit-run-lists-per-minute',
  'force-cancel-cooloff-ms',
  'notification-retry-ms',
  'poll-interval-ms',
  'engine-bin',
  'engines',
  'sync',
  'anchor-interval-ms',
  'headers-timeout-ms',
  'request-timeout-ms',
  'tls',
  'tls-cert',
  'tls-key',
  'acme-http-port',
  'acme-tls-port',
  'workers',
  'store',
] as const;
export type ConfigFlag = (typeof CONFIG_FLAGS)[number];

export type Flags = Readonly<Partial<Record<ConfigFlag, string | boolean>>>;

const defaults = {
  data: 'data',
  listen: '127.0.0.1:8420',
  logLevel: 'info',
  bodyLimit: 4 * 1024 * 1024,
  uploadLimit: 100 * 1024 * 1024,
  perSecond: 30,
  runListsPerMinute: 30,
  cooloff: 10_000,
  notificationRetry: 30_000,
  poll: 1000,
  anchorInterval: 10_000,
  headersTimeout: 20_000,
  requestTimeout: 300_000,
};

/**
 * Build the configuration from flags (which win) and `KEEL_*` environment variables. Every
 * problem is collected and reported at once.
 */
export function loadConfig(flags: Flags, env: NodeJS.ProcessEnv): Config {
  const problems: string[] = [];
  const text = (flag: ConfigFlag, envName: string, fallback: string): string => {
    const v = flags[flag];
    if (typeof v === 'string') return v;
    return env[envName] ?? fallback;
  };
  const int = (flag: ConfigFlag, envName: string, fallback: number, min = 0): number => {
    const raw = text(flag, envName, String(fallback));
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) {
      problems.push(
        `${envName} (--${flag}) must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`,
      );
      return fallback;
    }
    return n;
  };
  const portNumber = (flag: ConfigFlag, envName: string, fallback: number): number => {
    const n = int(flag, envName, fallback, 1);
    if (n <= 65535) return n;
    problems.push(`${envName} (--${flag}) must be a port (1–65535), got ${n}`);
    return fallback;
  };
  const bool = (flag: ConfigFlag, envName: string, fallback: boolean): boolean => {
    const v = flags[flag];
    if (typeof v === 'boolean') return v;
    const raw = typeof v === 'string' ? v : env[envName];
    if (raw === undefined || raw === '') return fallback;
    if (['1', 'true', 'on', 'yes'].includes(raw.toLowerCase())) return true;
    if (['0', 'false', 'off', 'no'].includes(raw.toLowerCase())) return false;
    problems.push(`${envName} (--${flag}) must be true or false, got ${JSON.stringify(raw)}`);
    return fallback;
  };

  const listenText = text('listen', 'KEEL_LISTEN', defaults.listen);
  const listen = parseListen(listenText);
  if (listen === null)
    problems.push(`KEEL_LISTEN (--listen) must be HOST:PORT, got ${JSON.stringify(listenText)}`);
  const host = listen?.host ?? '127.0.0.1';
  const port = listen?.port ?? 8420;
  if (flags.tls === true) problems.push('--tls needs a value: auto or off');
  const tls = parseTls(
    text('tls', 'KEEL_TLS', ''),
    text('tls-cert', 'KEEL_TLS_CERT', ''),
    text('tls-key', 'KEEL_TLS_KEY', ''),
    problems,
  );
  const shownHost =
    host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;

  const config: Config = {
    dataDir: resolve(text('data', 'KEEL_DATA', defaults.data)),
    listen: { host, port },
    publicAddress: text(
      'public-address',
      'KEEL_PUBLIC_ADDRESS',
      `${tls.mode === 'off' ? 'http' : 'https'}://${shownHost}:${port}`,
    ).replace(/\/$/, ''),
    logLevel: text('log-level', 'KEEL_LOG_LEVEL', defaults.logLevel),
    bodyLimitBytes: int('body-limit', 'KEEL_BODY_LIMIT', defaults.bodyLimit, 1),
    uploadLimitBytes: int('upload-limit', 'KEEL_UPLOAD_LIMIT', defaults.uploadLimit, 1),
    rateLimit: {
      enabled: bool('rate-limit', 'KEEL_RATE_LIMIT', true),
      perSecond: int('rate-limit-per-second', 'KEEL_RATE_LIMIT_PER_SECOND', defaults.perSecond, 1),
      runListsPerMinute: int(
        'rate-limit-run-lists-per-minute',
        'KEEL_RATE_LIMIT_RUN_LISTS_PER_MINUTE',
        defaults.runListsPerMinute,
        1,
      ),
    },
    forceCancelCooloffMs: int(
      'force-cancel-cooloff-ms',
      'KEEL_FORCE_CANCEL_COOLOFF_MS',
      defaults.cooloff,
    ),
    notificationRetryMs: int(
      'notification-retry-ms',
      'KEEL_NOTIFICATION_RETRY_MS',
      defaults.notificationRetry,
      1,
    ),
    pollIntervalMs: int('poll-interval-ms', 'KEEL_POLL_INTERVAL_MS', defaults.poll, 10),
    engineBin: text('engine-bin', 'KEEL_ENGINE_BIN', '') || null,
    engines: Object.freeze(parseEngines(text('engines', 'KEEL_ENGINES', ''), problems)),
    sealKey: env.KEEL_SEAL_KEY === undefined || env.KEEL_SEAL_KEY === '' ? null : env.KEEL_SEAL_KEY,
    sync: syncMode(text('sync', 'KEEL_SYNC', 'full'), problems),
    anchorIntervalMs: int(
      'anchor-interval-ms',
      'KEEL_ANCHOR_INTERVAL_MS',
      defaults.anchorInterval,
      100,
    ),
    headersTimeoutMs: int(
      'headers-timeout-ms',
      'KEEL_HEADERS_TIMEOUT_MS',
      defaults.headersTimeout,
      100,
    ),
    requestTimeoutMs: int(
      'request-timeout-ms',
      'KEEL_REQUEST_TIMEOUT_MS',
      defaults.requestTimeout,
      100,
    ),
    acmeHttpPort: portNumber('acme-http-port', 'KEEL_ACME_HTTP_PORT', 80),
    acmeTlsPort: portNumber('acme-tls-port', 'KEEL_ACME_TLS_PORT', 443),
    tls,
    workers: int('workers', 'KEEL_WORKERS', 1, 1),
    store: storeSpec(text('store', 'KEEL_STORE', 'sqlite'), problems),
  };
  if (tls.mode !== 'off' && !config.publicAddress.startsWith('https://'))
    problems.push(
      `KEEL_PUBLIC_ADDRESS (--public-address) must be https://… when TLS is on, got ${JSON.stringify(config.publicAddress)}`,
    );
  if (config.engineBin !== null && 'default' in config.engines)
    problems.push('KEEL_ENGINES (--engines) cannot name "default" when KEEL_ENGINE_BIN is set');
  if (config.headersTimeoutMs > config.requestTimeoutMs)
    problems.push(
      'KEEL_HEADERS_TIMEOUT_MS (--headers-timeout-ms) cannot be longer than KEEL_REQUEST_TIMEOUT_MS (--request-timeout-ms)',
    );
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  if (!levels.includes(config.logLevel)) {
    problems.push(`KEEL_LOG_LEVEL (--log-level) must be one of ${levels.join(', ')}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** Every engine a workspace may name: `KEEL_ENGINES`, and `KEEL_ENGINE_BIN` as `default`. */
export function enginesOf(config: Config): Readonly<Record<string, string>> {
  return config.engineBin === null
    ? config.engines
    : { ...config.engines, default: config.engineBin };
}

const ENGINE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** `name=/abs/path,other=/abs/path`: every bad entry is reported, the good ones are kept. */
function parseEngines(value: string, problems: string[]): Record<string, string> {
  const engines: Record<string, string> = {};
  for (const entry of value.split(',').map((e) => e.trim())) {
    if (entry === '') continue;
    const at = entry.indexOf('=');
    const name = at < 0 ? entry : entry.slice(0, at);
    const path = at < 0 ? '' : entry.slice(at + 1);
    const bad = (why: string) =>
      problems.push(`KEEL_ENGINES (--engines) entry ${JSON.stringify(entry)}: ${why}`);
    if (!ENGINE_NAME.test(name)) bad('the name must be lowercase letters, digits, - and _');
    else if (name === 'builtin') bad('"builtin" is the built-in driver and cannot name a binary');
    else if (name in engines) bad(`${name} is named twice`);
    else if (!isAbsolute(path)) bad('the binary must be an absolute path (name=/path/to/bin)');
    else engines[name] = path;
  }
  return engines;
}

function storeSpec(value: string, problems: string[]): StoreSpec {
  if (value === 'sqlite') return { kind: 'sqlite' };
  if (isPostgresUrl(value)) return { kind: 'postgres', url: value };
  problems.push(
    `KEEL_STORE (--store) must be sqlite or a postgres://… URL, got ${JSON.stringify(redactUrl(value))}`,
  );
  return { kind: 'sqlite' };
}

function syncMode(value: string, problems: string[]): SyncMode {
  if (value === 'full' || value === 'normal') return value;
  problems.push(`KEEL_SYNC (--sync) must be full or normal, got ${JSON.stringify(value)}`);
  return 'full';
}

/** `--tls auto`, or `--tls-cert` with `--tls-key` (absolute or relative to the working directory). */
function parseTls(mode: string, cert: string, key: string, problems: string[]): ListenerTls {
  if (mode !== '' && mode !== 'auto' && mode !== 'off') {
    problems.push(`KEEL_TLS (--tls) must be auto or off, got ${JSON.stringify(mode)}`);
    return { mode: 'off' };
  }
  if (cert === '' && key === '') return mode === 'auto' ? { mode: 'auto' } : { mode: 'off' };
  if (mode === 'auto') {
    problems.push('KEEL_TLS=auto (--tls auto) cannot be combined with --tls-cert/--tls-key');
    return { mode: 'off' };
  }
  if (cert === '' || key === '') {
    problems.push('KEEL_TLS_CERT (--tls-cert) and KEEL_TLS_KEY (--tls-key) go together');
    return { mode: 'off' };
  }
  return { mode: 'files', certFile: resolve(cert), keyFile: resolve(key) };
}

function parseListen(value: string): { host: string; port: number } | null {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value);
  if (m === null) return null;
  const port = Number(m[2]);
  if (port > 65535) return null;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

/**
 * Where a command engine's phases get their scratch directories: `<data>/scratch`, one directory
 * in it per process (`processScratch`). They hold a workspace's variables and state in clear for
 * terraform: each phase's is removed as the phase ends; a worker's, by the primary when the
 * worker dies (`--workers`); and the whole root by the next daemon that takes the data
 * directory's lock, for phases a killed daemon could not clean up. Both are removed whole, so
 * neither is ever anything but a path inside the data directory.
 */
export function scratchRoot(dataDir: string): string {
  return join(dataDir, 'scratch');
}

/** The scratch directory of process `pid` (see `scratchRoot`). */
export function processScratch(dataDir: string, pid: number = process.pid): string {
  return join(scratchRoot(dataDir), String(pid));
}

/**
 * A configuration for tests and embedding: defaults, rate limits off, the given data dir, and
 * `sync: normal` (a test's log need not survive a power loss; each commit's disk sync would slow
 * every test by milliseconds).
 */
export function testConfig(dataDir: string, overrides: Partial<Config> = {}): Config {
  return Object.freeze({
    ...loadConfig({ data: dataDir, 'rate-limit': false, sync: 'normal' }, {}),
    ...overrides,
  });
}
