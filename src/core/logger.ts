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

/** A logger that drops everything (tests). */
export const silentLogger = (): Logger => pino({ level: 'silent' });
