import { pino } from 'pino';
import type { Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;

/** Paths that never reach a log line, whatever logs them. */
const REDACT = [
  'secret',
  'token',
  'password',
  'secret_key',
  'secretKey',
  'private_key',
  'privateKey',
  'authorization',
  '*.secret',
  '*.token',
  '*.secret_key',
  '*.secretKey',
  '*.private_key',
  '*.privateKey',
  'req.headers.authorization',
  'req.headers["x-vault-token"]',
  'req.headers["x-secrets-token"]',
];

export function createLogger(
  options: { level?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
  const opts = { level: options.level ?? 'info', redact: { paths: REDACT, censor: '[redacted]' } };
  return options.destination === undefined ? pino(opts) : pino(opts, options.destination);
}

/**
 * Process warnings (a library's deprecation or Node-version notice) as one JSON log line each,
 * instead of Node's multi-line text on stderr beside the JSON log: replaces the process's
 * `warning` listeners (Node's printer among them) with one that logs. Returns the undo.
 */
export function logProcessWarnings(logger: Logger, proc: NodeJS.Process = process): () => void {
  const previous = proc.listeners('warning');
  const log = (warning: Error & { code?: string }) =>
    logger.warn(
      { warning: { name: warning.name, code: warning.code, message: warning.message } },
      'process warning',
    );
  proc.removeAllListeners('warning');
  proc.on('warning', log);
  return () => {
    proc.off('warning', log);
    for (const listener of previous) proc.on('warning', listener);
  };
}

/** A logger that drops everything (tests). */
export const silentLogger = (): Logger => pino({ level: 'silent' });
