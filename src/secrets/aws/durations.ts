/**
 * Durations as the reference reads and writes them: input is an integer number of seconds or a Go
 * duration string (`90s`, `1h30m`, `1.5h`; `h` is the largest unit); output of lease settings is
 * Go's `Duration.String()` (`30m0s`, `768h0m0s`).
 */

const UNITS: Record<string, number> = {
  ns: 1e-9,
  us: 1e-6,
  µs: 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
};

/** Parses seconds (number or numeric string) or a Go duration string; throws with Go-like text. */
export function parseDurationSeconds(input: unknown): number {
  if (typeof input === 'number') {
    if (!Number.isFinite(input))
      throw new Error(`time: invalid duration ${JSON.stringify(String(input))}`);
    return Math.floor(input);
  }
  if (typeof input !== 'string') throw new Error(`could not parse duration from input`);
  const s = input.trim();
  if (s === '') return 0;
  if (/^-?\d+$/.test(s)) return Number(s);
  const m = s.match(/^([-+]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+$/);
  if (!m) throw new Error(`time: invalid duration ${JSON.stringify(input)}`);
  let total = 0;
  for (const part of s.replace(/^[-+]/, '').matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g)) {
    total += Number(part[1]) * (UNITS[part[2] as string] as number);
  }
  return Math.floor(m[1] === '-' ? -total : total);
}

/** Go's `time.Duration.String()` for whole seconds: `0s`, `45s`, `30m0s`, `12h0m0s`. */
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
