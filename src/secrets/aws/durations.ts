/**
 * Durations as the reference reads and writes them: input is an integer number of seconds or a Go
 * duration string (`90s`, `1h30m`, `1.5h`; `h` is the largest unit); output of lease settings is
 * Go's `Duration.String()` (`30m0s`, `768h0m0s`).
 */

import { durationSeconds } from '../duration.js';

export { formatGoDuration } from '../duration.js';

/** Parses seconds (number or numeric string) or a Go duration string; throws with Go-like text. */
export function parseDurationSeconds(input: unknown): number {
  if (typeof input !== 'number' && typeof input !== 'string') {
    throw new Error('could not parse duration from input');
  }
  const seconds = durationSeconds(input, { negative: true });
  if (seconds === null) throw new Error(`time: invalid duration ${JSON.stringify(String(input))}`);
  return seconds;
}
