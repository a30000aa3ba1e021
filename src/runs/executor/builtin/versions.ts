/**
 * `required_version` constraints, as terraform reads them (hashicorp/go-version): a comma-separated
 * list of `[operator] version`, every one of which the running version must satisfy. Versions
 * compare segment by segment, missing segments being zero (`1.11` is `1.11.0`); build metadata
 * (`+…`) is ignored; `~>` allows the last segment it names to grow (`~> 1.2` is `>= 1.2, < 2.0`,
 * `~> 1.2.3` is `>= 1.2.3, < 1.3.0`, and `~> 1` is `>= 1`). Terraform refuses prerelease
 * constraints in `required_version`; so does this.
 */

type Operator = '=' | '!=' | '>' | '<' | '>=' | '<=' | '~>';

/** One constraint: the operator, the segments as written and padded to three. */
export interface VersionConstraint {
  operator: Operator;
  /** How many segments the constraint names (`~>` reads it). */
  named: number;
  segments: number[];
  text: string;
}

/** Why a constraint cannot be used: terraform's two diagnostics. */
export class ConstraintError extends Error {
  constructor(
    readonly kind: 'syntax' | 'prerelease',
    readonly text: string,
  ) {
    super(
      kind === 'syntax'
        ? `"${text}" does not use correct version constraint syntax`
        : `prerelease version constraints are not supported: ${text}`,
    );
  }
}

const CONSTRAINT =
  /^\s*(=|!=|>=|<=|>|<|~>)?\s*v?([0-9]+(?:\.[0-9]+)*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?\s*$/;

/** A version's segments, padded with zeros to at least three. */
function segmentsOf(core: string): number[] {
  const parts = core.split('.').map(Number);
  while (parts.length < 3) parts.push(0);
  return parts;
}

/** The constraints of a `required_version` string, or the reason terraform refuses them. */
export function parseConstraints(text: string): VersionConstraint[] {
  return text.split(',').map((part) => {
    const m = CONSTRAINT.exec(part);
    if (m === null) throw new ConstraintError('syntax', text);
    const [, operator = '=', core = '', prerelease] = m;
    // A number segment too large to compare exactly is not one this reads as terraform does.
    if (core.split('.').some((s) => !Number.isSafeInteger(Number(s))))
      throw new ConstraintError('syntax', text);
    if (prerelease !== undefined) throw new ConstraintError('prerelease', part.trim());
    return {
      operator: operator as Operator,
      named: core.split('.').length,
      segments: segmentsOf(core),
      text: part.trim(),
    };
  });
}

/** -1, 0 or 1 as `a` is lower than, equal to or higher than `b`, missing segments being 0. */
function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

function satisfiesOne(version: readonly number[], c: VersionConstraint): boolean {
  const order = compare(version, c.segments);
  switch (c.operator) {
    case '=':
      return order === 0;
    case '!=':
      return order !== 0;
    case '>':
      return order > 0;
    case '<':
      return order < 0;
    case '>=':
      return order >= 0;
    case '<=':
      return order <= 0;
    case '~>': {
      if (order < 0 || c.segments.length > version.length) return false;
      for (let i = 0; i < c.named - 1; i++) if (version[i] !== c.segments[i]) return false;
      const last = c.segments.length - 1;
      return (c.segments[last] ?? 0) <= (version[last] ?? 0);
    }
    default: {
      const never: never = c.operator;
      return never;
    }
  }
}

/** Whether `version` (a release, `1.9.8`) satisfies every constraint. */
export function satisfies(version: string, constraints: readonly VersionConstraint[]): boolean {
  const v = segmentsOf(version);
  return constraints.every((c) => satisfiesOne(v, c));
}
