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

/** Flags, width and precision of one `fmt` verb (`%-05.2d`). */
interface Spec {
  minus: boolean;
  plus: boolean;
  zero: boolean;
  width: number | null;
  precision: number | null;
}

const SPEC = /^([-+ #0]*)(\d*)(?:\.(\d*))?/;

/** Pads `text` to the width: spaces on the left, on the right with `-`, zeros after a sign with `0`. */
function padded(text: string, spec: Spec, numeric: boolean): string {
  const width = spec.width ?? 0;
  const chars = [...text].length;
  if (chars >= width) return text;
  const fill = width - chars;
  if (spec.minus) return text + ' '.repeat(fill);
  if (!spec.zero) return ' '.repeat(fill) + text;
  const sign = numeric && (text.startsWith('-') || text.startsWith('+')) ? text[0]! : '';
  return sign + '0'.repeat(fill) + text.slice(sign.length);
}

/** An integer as `%d` writes it: precision is the least number of digits, `+` always signs it. */
function decimal(n: number, spec: Spec): string {
  let digits = String(Math.abs(n));
  if (spec.precision !== null) digits = digits.padStart(spec.precision, '0');
  const sign = n < 0 ? '-' : spec.plus ? '+' : '';
  return sign + digits;
}

/**
 * `fmt.Sprintf` for the verbs %s %v %d %q %x %X %t %%, with the flags `-` `+` `0`, a width and a
 * precision (%s: the most characters; %d: the fewest digits), and Go's `%!verb(type=value)`
 * mistakes.
 */
export function sprintf(format: string, args: readonly Value[]): string {
  let out = '';
  let next = 0;
  for (let i = 0; i < format.length; i += 1) {
    const c = format[i] as string;
    if (c !== '%') {
      out += c;
      continue;
    }
    const m = SPEC.exec(format.slice(i + 1)) as RegExpExecArray;
    const flags = m[1] ?? '';
    const spec: Spec = {
      minus: flags.includes('-'),
      plus: flags.includes('+'),
      zero: flags.includes('0'),
      width: m[2] ? Number(m[2]) : null,
      precision: m[3] === undefined ? null : Number(m[3] || '0'),
    };
    i += m[0].length + 1;
    const verb = format[i];
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
    const bad = `%!${verb}(${goType(arg)}=${show(arg)})`;
    const isInt = typeof arg === 'number' && Number.isInteger(arg);
    switch (verb) {
      case 's': {
        if (typeof arg !== 'string') {
          out += bad;
          break;
        }
        const text = spec.precision === null ? arg : [...arg].slice(0, spec.precision).join('');
        out += padded(text, spec, false);
        break;
      }
      case 'v':
        out += padded(isInt ? decimal(arg, spec) : show(arg), spec, isInt);
        break;
      case 'd':
        out += isInt ? padded(decimal(arg, spec), spec, true) : bad;
        break;
      case 'q':
        out += typeof arg === 'string' ? padded(JSON.stringify(arg), spec, false) : bad;
        break;
      case 't':
        out += typeof arg === 'boolean' ? padded(String(arg), spec, false) : bad;
        break;
      case 'x':
      case 'X': {
        let hex: string;
        if (typeof arg === 'string') hex = Buffer.from(arg, 'utf8').toString('hex');
        else if (isInt) hex = (arg < 0 ? '-' : '') + Math.abs(arg).toString(16);
        else {
          out += bad;
          break;
        }
        out += padded(verb === 'X' ? hex.toUpperCase() : hex, spec, isInt);
        break;
      }
      default:
        out += bad;
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
