import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import {
  customText,
  type CustomPermissions,
  type ProjectDeleted,
  type TeamAccessLevel,
} from '../events.js';

/**
 * Team access to projects (`/team-projects`): a grant gives a team access to every workspace of
 * the project, now and later. Authorization reads it (see `OrganizationQueries.accessTo`).
 */

export const TEAM_PROJECTS_TABLE = 'runs_team_project_access';

/** The reference's project access levels. */
export const PROJECT_LEVELS = ['read', 'write', 'maintain', 'admin', 'custom'] as const;
export type ProjectAccessLevel = (typeof PROJECT_LEVELS)[number];

/** The workspace access a project level gives on each of its workspaces. */
export function workspaceLevelOf(level: ProjectAccessLevel): TeamAccessLevel {
  switch (level) {
    case 'read':
      return 'read';
    case 'write':
      return 'write';
    case 'maintain':
    case 'admin':
      return 'admin';
    case 'custom':
      return 'custom';
    default: {
      const _never: never = level;
      return _never;
    }
  }
}

export type TeamProjectAccessGranted = {
  type: 'TeamProjectAccessGranted';
  data: {
    id: string;
    teamId: string;
    projectId: string;
    access: ProjectAccessLevel;
    /** With `custom` only: what the grant allows on each workspace of the project. */
    custom?: CustomPermissions;
  };
};
export type TeamProjectAccessChanged = {
  type: 'TeamProjectAccessChanged';
  data: { id: string; access: ProjectAccessLevel; custom?: CustomPermissions };
};
export type TeamProjectAccessRevoked = { type: 'TeamProjectAccessRevoked'; data: { id: string } };
export type TeamProjectEvent =
  TeamProjectAccessGranted | TeamProjectAccessChanged | TeamProjectAccessRevoked;

export const teamProjectProjection: Projection = {
  name: 'runs-team-projects',
  version: 2,
  tables: [TEAM_PROJECTS_TABLE],
  guarded: [TEAM_PROJECTS_TABLE],
  events: [
    'TeamProjectAccessGranted',
    'TeamProjectAccessChanged',
    'TeamProjectAccessRevoked',
    'ProjectDeleted',
  ] satisfies (TeamProjectEvent | ProjectDeleted)['type'][],
  setup(db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${TEAM_PROJECTS_TABLE} (id TEXT PRIMARY KEY, team_id TEXT NOT NULL,
      project_id TEXT NOT NULL, access TEXT NOT NULL, custom TEXT, UNIQUE (project_id, team_id))`);
    const s = {
      grant: db.prepare(
        `INSERT INTO ${TEAM_PROJECTS_TABLE} (id, team_id, project_id, access, custom) VALUES (?, ?, ?, ?, ?)`,
      ),
      change: db.prepare(`UPDATE ${TEAM_PROJECTS_TABLE} SET access = ?, custom = ? WHERE id = ?`),
      revoke: db.prepare(`DELETE FROM ${TEAM_PROJECTS_TABLE} WHERE id = ?`),
      projectGone: db.prepare(`DELETE FROM ${TEAM_PROJECTS_TABLE} WHERE project_id = ?`),
    };
    return (event: StoredEvent) => {
      if (event.type === 'ProjectDeleted') {
        s.projectGone.run((event as StoredEvent<ProjectDeleted>).data.id);
        return;
      }
      if (!event.type.startsWith('TeamProjectAccess')) return;
      const e = event as StoredEvent<TeamProjectEvent>;
      switch (e.type) {
        case 'TeamProjectAccessGranted':
          s.grant.run(
            e.data.id,
            e.data.teamId,
            e.data.projectId,
            e.data.access,
            customText(e.data.custom),
          );
          return;
        case 'TeamProjectAccessChanged':
          s.change.run(e.data.access, customText(e.data.custom), e.data.id);
          return;
        case 'TeamProjectAccessRevoked':
          s.revoke.run(e.data.id);
          return;
        default: {
          const _never: never = e;
          return _never;
        }
      }
    };
  },
};

export interface TeamProjectRow {
  id: string;
  teamId: string;
  projectId: string;
  access: ProjectAccessLevel;
  /** The workspace permissions of a `custom` grant; null for the fixed levels. */
  custom: CustomPermissions | null;
}
