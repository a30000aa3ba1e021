/**
 * The two bits of Go's standard library username templates lean on: `fmt.Sprintf` (for `printf`)
 * and `time.Time.Format` with Go's reference-time layouts (for `timestamp`).
 */

/** A template value: Go strings, ints and bools are all a username template ever produces. */
export type Value = string | number | boolean;

const goType = (v: Value): string =>
  typeof v === 'string'
    ? 'string'
    : typeof v === 'boolean'
      ? 'bool'
      : Number.isInteger(v)
        ? 'int'
        : 'float64';

/** `fmt.Print`-style rendering of one value. */
export const show = (v: Value): string => (typeof v === 'string' ? v : String(v));

/** `fmt.Sprint`: operands side by side, with a space between two that are both not strings. */
export const sprint = (args: readonly Value[]): string =>
  args
    .map((v, i) => {
      const prev = args[i - 1];
      const spaced = i > 0 && typeof v !== 'string' && typeof prev !== 'string';
      return `${spaced ? ' ' : ''}${show(v)}`;
    })
    .join('');

/** `fmt.Sprintf` for the verbs %s %v %d %q %x %X %t %%, with Go's `%!verb(type=value)` mistakes. */
export function sprintf(format: string, args: readonly Value[]): string {
  let out = '';
  let next = 0;
  for (let i = 0; i < format.length; i += 1) {
    const c = format[i] as string;
    if (c !== '%') {
      out += c;
      continue;
    }
    const verb = format[i + 1];
    i += 1;
    if (verb === undefined) {
      out += '%!(NOVERB)';
      break;
    }
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (next >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    const arg = args[next] as Value;
    next += 1;
    const bad = () => `%!${verb}(${goType(arg)}=${show(arg)})`;
    switch (verb) {
      case 's':
        out += typeof arg === 'string' ? arg : bad();
        break;
      case 'v':
        out += show(arg);
        break;
      case 'd':
        out += typeof arg === 'number' && Number.isInteger(arg) ? String(arg) : bad();
        break;
      case 'q':
        out += typeof arg === 'string' ? JSON.stringify(arg) : bad();
        break;
      case 't':
        out += typeof arg === 'boolean' ? String(arg) : bad();
        break;
      case 'x':
      case 'X': {
        let hex: string;
        if (typeof arg === 'string') hex = Buffer.from(arg, 'utf8').toString('hex');
        else if (typeof arg === 'number' && Number.isInteger(arg)) hex = arg.toString(16);
        else {
          out += bad();
          break;
        }
        out += verb === 'X' ? hex.toUpperCase() : hex;
        break;
      }
      default:
        out += `%!${verb}(${goType(arg)}=${show(arg)})`;
    }
  }
  if (next < args.length) {
    out += `%!(EXTRA ${args
      .slice(next)
      .map((a) => `${goType(a)}=${show(a)}`)
      .join(', ')})`;
  }
  return out;
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const pad = (n: number, width: number, fill = '0') => String(n).padStart(width, fill);

// Longest layout elements first, so `January` wins over `Jan` and `2006` over `2`.
const ELEMENTS: readonly [string, (d: Date) => string][] = [
  ['January', (d) => MONTHS[d.getUTCMonth()] as string],
  ['Monday', (d) => DAYS[d.getUTCDay()] as string],
  ['Z07:00', () => 'Z'],
  ['-07:00', () => '+00:00'],
  ['Z0700', () => 'Z'],
  ['-0700', () => '+0000'],
  ['2006', (d) => pad(d.getUTCFullYear(), 4)],
  ['.000000000', (d) => `.${pad(d.getUTCMilliseconds(), 3)}000000`],
  ['.000000', (d) => `.${pad(d.getUTCMilliseconds(), 3)}000`],
  ['.000', (d) => `.${pad(d.getUTCMilliseconds(), 3)}`],
  ['.999999999', (d) => fraction(d)],
  ['.999999', (d) => fraction(d)],
  ['.999', (d) => fraction(d)],
  ['Jan', (d) => (MONTHS[d.getUTCMonth()] as string).slice(0, 3)],
  ['Mon', (d) => (DAYS[d.getUTCDay()] as string).slice(0, 3)],
  ['MST', () => 'UTC'],
  ['Z07', () => 'Z'],
  ['-07', () => '+00'],
  ['002', (d) => pad(dayOfYear(d), 3)],
  ['_2', (d) => pad(d.getUTCDate(), 2, ' ')],
  ['01', (d) => pad(d.getUTCMonth() + 1, 2)],
  ['02', (d) => pad(d.getUTCDate(), 2)],
  ['03', (d) => pad(hour12(d), 2)],
  ['04', (d) => pad(d.getUTCMinutes(), 2)],
  ['05', (d) => pad(d.getUTCSeconds(), 2)],
  ['06', (d) => pad(d.getUTCFullYear() % 100, 2)],
  ['15', (d) => pad(d.getUTCHours(), 2)],
  ['PM', (d) => (d.getUTCHours() < 12 ? 'AM' : 'PM')],
  ['pm', (d) => (d.getUTCHours() < 12 ? 'am' : 'pm')],
  ['1', (d) => String(d.getUTCMonth() + 1)],
  ['2', (d) => String(d.getUTCDate())],
  ['3', (d) => String(hour12(d))],
  ['4', (d) => String(d.getUTCMinutes())],
  ['5', (d) => String(d.getUTCSeconds())],
];

function fraction(d: Date): string {
  const ms = d.getUTCMilliseconds();
  return ms === 0 ? '' : `.${pad(ms, 3).replace(/0+$/, '')}`;
}

function hour12(d: Date): number {
  const h = d.getUTCHours() % 12;
  return h === 0 ? 12 : h;
}

function dayOfYear(d: Date): number {
  return Math.floor((d.getTime() - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1;
}

/** Go's `time.Time.Format(layout)` in UTC (the reference time is Mon Jan 2 15:04:05 MST 2006). */
export function goTimeFormat(date: Date, layout: string): string {
  let out = '';
  let i = 0;
  outer: while (i < layout.length) {
    for (const [element, render] of ELEMENTS) {
      if (layout.startsWith(element, i)) {
        out += render(date);
        i += element.length;
        continue outer;
      }
    }
    out += layout[i];
    i += 1;
  }
  return out;
}
