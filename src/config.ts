import { isAbsolute, resolve } from 'node:path';

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
   * Processes serving one data directory (`--workers`, ADR 0060): above 1, a primary forks that
   * many workers sharing the listener and the log, one of them leading the reactors and timers.
   */
  readonly workers: number;
  /** `KEEL_CHECK_FOLDS=1`: every flat machine fold is also checked against xstate (ADR 0007). */
  readonly checkFolds: boolean;
}

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
  'poll-interval-ms',
  'engine-bin',
  'engines',
  'workers',
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
  poll: 1000,
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
  const shownHost =
    host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;

  const config: Config = {
    dataDir: resolve(text('data', 'KEEL_DATA', defaults.data)),
    listen: { host, port },
    publicAddress: text(
      'public-address',
      'KEEL_PUBLIC_ADDRESS',
      `http://${shownHost}:${port}`,
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
    pollIntervalMs: int('poll-interval-ms', 'KEEL_POLL_INTERVAL_MS', defaults.poll, 10),
    engineBin: text('engine-bin', 'KEEL_ENGINE_BIN', '') || null,
    engines: Object.freeze(parseEngines(text('engines', 'KEEL_ENGINES', ''), problems)),
    sealKey: env.KEEL_SEAL_KEY === undefined || env.KEEL_SEAL_KEY === '' ? null : env.KEEL_SEAL_KEY,
    checkFolds: env.KEEL_CHECK_FOLDS === '1',
    workers: int('workers', 'KEEL_WORKERS', 1, 1),
  };
  if (config.engineBin !== null && 'default' in config.engines)
    problems.push('KEEL_ENGINES (--engines) cannot name "default" when KEEL_ENGINE_BIN is set');
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

function parseListen(value: string): { host: string; port: number } | null {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value);
  if (m === null) return null;
  const port = Number(m[2]);
  if (port > 65535) return null;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

/** A configuration for tests and embedding: defaults, rate limits off, the given data dir. */
export function testConfig(dataDir: string, overrides: Partial<Config> = {}): Config {
  // The suite's fold checking (vitest sets KEEL_CHECK_FOLDS) carries over to in-process apps.
  const env = { KEEL_CHECK_FOLDS: process.env.KEEL_CHECK_FOLDS };
  return Object.freeze({
    ...loadConfig({ data: dataDir, 'rate-limit': false }, env),
    ...overrides,
  });
}
