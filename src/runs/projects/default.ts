import { createHash } from 'node:crypto';

/** The name the default project of a new organization has (the reference's). */
export const DEFAULT_PROJECT_NAME = 'Default Project';

/**
 * The id of an organization's default project: derived from its name, so organizations made
 * before Keel had projects have theirs too, and no event needs to carry it.
 */
export function defaultProjectId(organization: string): string {
  const digest = createHash('sha256').update(`default-project/${organization}`).digest('hex');
  return `prj-${digest.slice(0, 16)}`;
}
