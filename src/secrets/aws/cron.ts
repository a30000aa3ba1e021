import { Cron } from 'croner';
import { durationSeconds } from '../duration.js';

/**
 * Root rotation schedules in the reference's syntax (its cron library's standard parser): five
 * fields (minute, hour, day of month, month, day of week) with `*`, ranges, steps, lists and
 * month/day names; the descriptors `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
 * `@midnight`, `@hourly` and `@every <duration>`; and a `CRON_TZ=Zone ` (or `TZ=Zone `) prefix,
 * without which a schedule is read in UTC. Day of month and day of week combine with OR when
 * both are restricted, as in standard cron. The field grammar is croner's.
 */
export interface CronSchedule {
  readonly source: string;
  /** The first activation strictly after `after`. */
  next(after: Date): Date;
}

const DESCRIPTORS = new Set([
  '@yearly',
  '@annually',
  '@monthly',
  '@weekly',
  '@daily',
  '@midnight',
  '@hourly',
]);

/** Parses a schedule; throws with a message naming the problem. */
export function parseCron(source: string): CronSchedule {
  let spec = source.trim();
  let timezone = 'UTC';
  const tz = /^(?:CRON_TZ|TZ)=(\S+)\s+(.*)$/.exec(spec);
  if (tz !== null) {
    timezone = tz[1]!;
    spec = tz[2]!.trim();
    try {
      new Intl.DateTimeFormat('en', { timeZone: timezone });
    } catch {
      throw new Error(`provided bad location ${timezone}: unknown time zone ${timezone}`);
    }
  }
  const every = /^@every\s+(\S+)$/.exec(spec);
  if (every !== null) {
    const seconds = durationSeconds(every[1]);
    if (seconds === null) throw new Error(`failed to parse duration ${spec}`);
    // Like the reference: at least a second, and the instant rounded down to whole seconds.
    const delay = Math.max(1, Math.ceil(seconds)) * 1000;
    return {
      source,
      next: (after) => new Date(Math.floor(after.getTime() / 1000) * 1000 + delay),
    };
  }
  if (spec.startsWith('@') && !DESCRIPTORS.has(spec.toLowerCase()))
    throw new Error(`unrecognized descriptor: ${spec}`);
  if (!spec.startsWith('@')) {
    const fields = spec.split(/\s+/).length;
    if (fields !== 5) throw new Error(`expected exactly 5 fields, found ${fields}: ${spec}`);
  }
  let cron: Cron;
  try {
    cron = new Cron(spec.toLowerCase() === '@midnight' ? '@daily' : spec, {
      paused: true,
      timezone,
      legacyMode: true,
    });
  } catch (e) {
    throw new Error((e as Error).message);
  }
  return {
    source,
    next(after) {
      const at = cron.nextRun(after);
      if (at === null) throw new Error(`schedule ${source} never matches`);
      return at;
    },
  };
}
