import { ValidationError } from '../core/errors.js';

const UNIT_SECONDS: Readonly<Record<string, number>> = {
  ns: 1e-9,
  us: 1e-6,
  µs: 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
  d: 86400,
};

export interface DurationOptions {
  /** Accept `d` for days (the reference's `ParseDurationSecond` does; Go's `time` does not). */
  days?: boolean;
  /** Accept a leading minus. */
  negative?: boolean;
}

/**
 * Whole seconds from what the secrets API accepts as a duration: an integer number of seconds
 * (number or digits) or a Go duration string (`90s`, `1h30m`, `1.5h`, `.5h`). Null when the
 * input is not a duration.
 */
export function durationSeconds(input: unknown, options: DurationOptions = {}): number | null {
  if (typeof input === 'number') {
    if (!Number.isFinite(input) || (input < 0 && options.negative !== true)) return null;
    return Math.floor(input);
  }
  if (typeof input !== 'string') return null;
  let text = input.trim();
  if (text === '') return 0;
  let sign = 1;
  if (/^[-+]/.test(text)) {
    if (text.startsWith('-')) {
      if (options.negative !== true) return null;
      sign = -1;
    }
    text = text.slice(1);
  }
  if (/^\d+$/.test(text)) return sign * Number(text);
  const units = options.days === true ? 'ns|us|µs|ms|s|m|h|d' : 'ns|us|µs|ms|s|m|h';
  const part = new RegExp(`(\\d+(?:\\.\\d*)?|\\.\\d+)(${units})`, 'y');
  let total = 0;
  let at = 0;
  while (at < text.length) {
    part.lastIndex = at;
    const m = part.exec(text);
    if (m === null) return null;
    total += Number(m[1]) * UNIT_SECONDS[m[2]!]!;
    at = part.lastIndex;
  }
  return at === 0 ? null : sign * Math.floor(total);
}

/**
 * A duration field, as the reference reports a bad one:
 * `Field validation failed: error converting input for field "ttl": time: invalid duration "x"`.
 */
export function parseDuration(
  value: unknown,
  field: string,
  options: DurationOptions = { days: true },
): number {
  const seconds = durationSeconds(value, options);
  if (seconds === null) {
    throw new ValidationError(
      `Field validation failed: error converting input for field "${field}": time: invalid duration ${JSON.stringify(String(value))}`,
    );
  }
  return seconds;
}

/** Seconds as Go's `Duration.String()` prints them: `30m0s`, `12h0m0s`, `1m30s`, `45s`, `-5s`. */
export function formatGoDuration(seconds: number): string {
  if (seconds === 0) return '0s';
  const sign = seconds < 0 ? '-' : '';
  let rest = Math.abs(seconds);
  const h = Math.floor(rest / 3600);
  rest -= h * 3600;
  const m = Math.floor(rest / 60);
  const s = rest - m * 60;
  if (h > 0) return `${sign}${h}h${m}m${s}s`;
  if (m > 0) return `${sign}${m}m${s}s`;
  return `${sign}${s}s`;
}
