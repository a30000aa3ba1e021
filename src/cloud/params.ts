import { validationError } from './errors.js';

/**
 * The parameters of one Query-protocol request (form body or query string), with AWS's list
 * convention `Name.member.N` (1-based) and the validation wording AWS uses for bad values.
 */
export class Params {
  constructor(private readonly values: ReadonlyMap<string, string>) {}

  /** Parses `a=1&b=2` form text; later duplicates win, as in AWS. */
  static parse(...sources: string[]): Params {
    const values = new Map<string, string>();
    for (const source of sources) {
      for (const [k, v] of new URLSearchParams(source)) values.set(k, v);
    }
    return new Params(values);
  }

  get(name: string): string | undefined {
    return this.values.get(name);
  }

  /** A required string; `field` is the camelCase name AWS shows in its message. */
  required(name: string, field = lowerFirst(name)): string {
    const v = this.values.get(name);
    if (v === undefined || v === '') throw validationError(field, null, 'Member must not be null');
    return v;
  }

  /** An optional integer within [min, max]. */
  int(name: string, min: number, max: number, field = lowerFirst(name)): number | undefined {
    const raw = this.values.get(name);
    if (raw === undefined || raw === '') return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n)) throw validationError(field, raw, 'Member must be an integer');
    if (n < min) {
      throw validationError(field, raw, `Member must have value greater than or equal to ${min}`);
    }
    if (n > max) {
      throw validationError(field, raw, `Member must have value less than or equal to ${max}`);
    }
    return n;
  }

  /** `Name.member.1`, `Name.member.2`, … in order (an empty `Name=` is an empty list). */
  list(name: string, suffix = ''): string[] {
    const out: string[] = [];
    for (let i = 1; ; i++) {
      const v = this.values.get(`${name}.member.${i}${suffix}`);
      if (v === undefined) return out;
      out.push(v);
    }
  }

  /** `Name.member.N.Key` / `.Value` pairs. */
  tags(name = 'Tags'): { Key: string; Value: string }[] {
    const keys = this.list(name, '.Key');
    return keys.map((Key, i) => ({
      Key,
      Value: this.values.get(`${name}.member.${i + 1}.Value`) ?? '',
    }));
  }
}

const lowerFirst = (s: string): string => s.charAt(0).toLowerCase() + s.slice(1);

/** Checks a name's length and characters the way IAM does for user, group, role and policy names. */
export function checkName(value: string, field: string, max: number, min = 1): string {
  if (value.length < min) {
    throw validationError(field, value, `Member must have length greater than or equal to ${min}`);
  }
  if (value.length > max) {
    throw validationError(field, value, `Member must have length less than or equal to ${max}`);
  }
  if (!/^[\w+=,.@-]+$/.test(value)) {
    throw validationError(
      field,
      value,
      'Member must satisfy regular expression pattern: [\\w+=,.@-]+',
    );
  }
  return value;
}

/** IAM paths: `/` or `/a/b/`. */
export function checkPath(value: string | undefined, field = 'path'): string {
  const path = value === undefined || value === '' ? '/' : value;
  if (!/^(?:\/|\/[\x21-\x7E]+\/)$/.test(path) || path.length > 512) {
    throw validationError(
      field,
      path,
      'Member must satisfy regular expression pattern: (\\u002F)|(\\u002F[\\u0021-\\u007E]+\\u002F)',
    );
  }
  return path;
}
