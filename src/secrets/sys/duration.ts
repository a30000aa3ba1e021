import { ValidationError } from '../../core/errors.js';

const UNITS: Record<string, number> = {
  ns: 1e-9,
  us: 1e-6,
  µs: 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
  d: 86400,
};

/**
 * A duration as the reference accepts it: an integer number of seconds (number or string), or a
 * Go duration string like `1h30m`, `90s`, `0.5h`; `d` for days is accepted too. Returns seconds.
 */
export function parseDuration(value: unknown, field: string): number {
  const fail = (): never => {
    throw new ValidationError(
      `Field validation failed: error converting input for field "${field}": time: invalid duration "${String(value)}"`,
    );
  };
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) return fail();
    return Math.floor(value);
  }
  if (typeof value !== 'string') return fail();
  const text = value.trim();
  if (text === '') return 0;
  if (/^\d+$/.test(text)) return Number(text);
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)/g;
  let total = 0;
  let consumed = 0;
  for (const m of text.matchAll(re)) {
    if (m.index !== consumed) return fail();
    total += Number(m[1]) * UNITS[m[2]!]!;
    consumed += m[0].length;
  }
  if (consumed !== text.length || consumed === 0) return fail();
  return Math.floor(total);
}

/** Seconds as Go's `Duration.String()` prints them: `30m0s`, `12h0m0s`, `1m30s`, `45s`. */
export function formatGoDuration(seconds: number): string {
  if (seconds === 0) return '0s';
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
