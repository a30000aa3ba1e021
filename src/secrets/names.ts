import { ValidationError } from '../core/errors.js';

/** A control character (C0 or DEL): never part of a path, a name or a metadata string. */
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/** Why a piece of a name or path is not acceptable, or undefined when it is. */
function segmentProblem(segment: string): string | undefined {
  if (segment === '') return 'must not be empty';
  if (segment === '.' || segment === '..') return `must not be "${segment}"`;
  if (CONTROL_CHARACTER.test(segment)) return 'must not hold control characters';
  if (/^\s|\s$/.test(segment)) return 'must not start or end with white space';
  return undefined;
}

/**
 * An ACL policy name (docs/security.md, "Request ids and names"): one path segment, not empty,
 * not `.` or `..`, no control characters or surrounding white space (which the reference trims).
 */
export function checkPolicyName(name: string): void {
  const problem = name.includes('/') ? 'must not hold "/"' : segmentProblem(name);
  if (problem !== undefined)
    throw new ValidationError(`invalid policy name ${JSON.stringify(name)}: it ${problem}`);
}

/**
 * A mount path (with its trailing slash): every segment as a policy name, and no `*` or `+`,
 * which policies read as globs, so that a policy can always name a mount exactly.
 */
export function checkMountPath(path: string): void {
  for (const segment of path.replace(/\/$/, '').split('/')) {
    const problem = /[*+]/.test(segment)
      ? 'must not hold "*" or "+" (policy globs)'
      : segmentProblem(segment);
    if (problem !== undefined)
      throw new ValidationError(`invalid mount path ${JSON.stringify(path)}: a segment ${problem}`);
  }
}
