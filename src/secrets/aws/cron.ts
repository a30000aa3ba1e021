/**
 * Five-field cron schedules (minute, hour, day of month, month, day of week) for scheduled root
 * rotation, evaluated in UTC. Supports `*`, numbers, ranges `a-b`, steps `*\/n` and `a-b/n`, lists,
 * and month/day names. Day of month and day of week combine with OR when both are restricted, as
 * in standard cron.
 */

export interface CronSchedule {
  readonly source: string;
  /** The first matching minute strictly after `after`. */
  next(after: Date): Date;
}

const FIELDS = [
  { name: 'minute', min: 0, max: 59, names: [] as string[] },
  { name: 'hour', min: 0, max: 23, names: [] as string[] },
  { name: 'day of month', min: 1, max: 31, names: [] as string[] },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
  },
  { name: 'day of week', min: 0, max: 6, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
] as const;

function parseField(text: string, index: number): { set: Set<number>; star: boolean } {
  const spec = FIELDS[index] as (typeof FIELDS)[number];
  const set = new Set<number>();
  const value = (v: string): number => {
    const named = (spec.names as readonly string[]).indexOf(v.toLowerCase());
    if (named >= 0) return named + spec.min;
    if (!/^\d+$/.test(v)) throw new Error(`failed to parse int from ${v}`);
    let n = Number(v);
    if (index === 4 && n === 7) n = 0; // Sunday may be written 7.
    if (n < spec.min || n > spec.max)
      throw new Error(`${spec.name} value ${v} out of range [${spec.min}, ${spec.max}]`);
    return n;
  };
  for (const part of text.split(',')) {
    const [range, stepText] = part.split('/') as [string, string | undefined];
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`invalid step ${stepText ?? ''}`);
    let lo: number;
    let hi: number;
    if (range === '*' || range === '?') {
      lo = spec.min;
      hi = spec.max;
    } else if (range.includes('-')) {
      const [a, b] = range.split('-') as [string, string];
      lo = value(a);
      hi = value(b);
      if (lo > hi)
        throw new Error(`beginning of range (${lo}) beyond end of range (${hi}): ${range}`);
    } else {
      lo = value(range);
      hi = stepText === undefined ? lo : spec.max;
    }
    for (let n = lo; n <= hi; n += step) set.add(n);
  }
  return { set, star: text === '*' || text === '?' };
}

/** Parses a five-field schedule; throws with a message naming the problem. */
export function parseCron(source: string): CronSchedule {
  const parts = source.trim().split(/\s+/);
  if (parts.length !== 5)
    throw new Error(`expected exactly 5 fields, found ${parts.length}: ${source}`);
  const [minute, hour, dom, month, dow] = parts.map((p, i) => parseField(p, i)) as [
    ReturnType<typeof parseField>,
    ReturnType<typeof parseField>,
    ReturnType<typeof parseField>,
    ReturnType<typeof parseField>,
    ReturnType<typeof parseField>,
  ];
  const dayMatches = (d: Date) => {
    const byDom = dom.set.has(d.getUTCDate());
    const byDow = dow.set.has(d.getUTCDay());
    if (dom.star || dow.star) return byDom && byDow;
    return byDom || byDow;
  };
  return {
    source,
    next(after) {
      const t = new Date(after.getTime());
      t.setUTCSeconds(0, 0);
      t.setUTCMinutes(t.getUTCMinutes() + 1);
      // Five years of minutes bounds the search; impossible dates (Feb 30) end it with an error.
      const limit = t.getTime() + 5 * 366 * 86_400_000;
      while (t.getTime() < limit) {
        if (!month.set.has(t.getUTCMonth() + 1)) {
          t.setUTCMonth(t.getUTCMonth() + 1, 1);
          t.setUTCHours(0, 0);
          continue;
        }
        if (!dayMatches(t)) {
          t.setUTCDate(t.getUTCDate() + 1);
          t.setUTCHours(0, 0);
          continue;
        }
        if (!hour.set.has(t.getUTCHours())) {
          t.setUTCHours(t.getUTCHours() + 1, 0);
          continue;
        }
        if (!minute.set.has(t.getUTCMinutes())) {
          t.setUTCMinutes(t.getUTCMinutes() + 1);
          continue;
        }
        return new Date(t.getTime());
      }
      throw new Error(`schedule ${source} never matches`);
    },
  };
}
