import type { Db } from '../../core/database.js';
import { statements } from '../../core/sql.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import type { RunsPrincipal } from '../../http/types.js';
import type { OrganizationEvent, TeamAccessLevel } from '../events.js';
import { FULL_ACCESS, NO_ACCESS, type WorkspaceAccess } from '../lifecycle.js';
import {
  TEAM_PROJECTS_TABLE,
  workspaceLevelOf,
  type ProjectAccessLevel,
  type TeamProjectRow,
} from '../team-projects/projection.js';
import { WORKSPACES_TABLE } from '../workspaces/projection.js';

/** Organizations, teams, team membership and team access on workspaces. */

const T = {
  orgs: 'runs_organizations',
  teams: 'runs_teams',
  members: 'runs_team_members',
  access: 'runs_team_access',
} as const;

export interface OrganizationRow {
  name: string;
  email: string;
  ownersTeamId: string;
  createdAt: string;
  /** Whether runs in the organization get a cost estimate after their plan. */
  costEstimationEnabled: boolean;
}

export interface TeamRow {
  id: string;
  organization: string;
  name: string;
  owners: boolean;
  createdAt: string;
}

export interface TeamAccessRow {
  id: string;
  teamId: string;
  workspaceId: string;
  access: TeamAccessLevel;
}

const TYPES = new Set([
  'OrganizationCreated',
  'TeamCreated',
  'TeamMemberAdded',
  'TeamAccessGranted',
  'TeamAccessChanged',
  'TeamAccessRevoked',
  'WorkspaceDeleted',
  'OrganizationUpdated',
  // The executor's `/organizations/:org/execution-settings` resource sets the same flag.
  'ExecutionSettingsUpdated',
]);

export const organizationProjection: Projection = {
  name: 'runs-organizations',
  version: 2,
  tables: [T.orgs, T.teams, T.members, T.access],
  guarded: [T.orgs, T.teams, T.members, T.access],
  setup(db: Db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${T.orgs} (name TEXT PRIMARY KEY, email TEXT NOT NULL, owners_team_id TEXT NOT NULL, created_at TEXT NOT NULL,
        cost_estimation INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE IF NOT EXISTS ${T.teams} (id TEXT PRIMARY KEY, organization TEXT NOT NULL, name TEXT NOT NULL,
        owners INTEGER NOT NULL, created_at TEXT NOT NULL, UNIQUE (organization, name));
      CREATE TABLE IF NOT EXISTS ${T.members} (team_id TEXT NOT NULL, user_id TEXT NOT NULL, PRIMARY KEY (team_id, user_id));
      CREATE INDEX IF NOT EXISTS runs_team_members_user ON ${T.members} (user_id);
      CREATE TABLE IF NOT EXISTS ${T.access} (id TEXT PRIMARY KEY, team_id TEXT NOT NULL, workspace_id TEXT NOT NULL,
        access TEXT NOT NULL, UNIQUE (workspace_id, team_id));
    `);
    const s = {
      org: db.prepare(
        `INSERT INTO ${T.orgs} (name, email, owners_team_id, created_at) VALUES (?, ?, ?, ?)`,
      ),
      team: db.prepare(
        `INSERT INTO ${T.teams} (id, organization, name, owners, created_at) VALUES (?, ?, ?, ?, ?)`,
      ),
      member: db.prepare(`INSERT OR IGNORE INTO ${T.members} (team_id, user_id) VALUES (?, ?)`),
      grant: db.prepare(
        `INSERT INTO ${T.access} (id, team_id, workspace_id, access) VALUES (?, ?, ?, ?)`,
      ),
      costEstimation: db.prepare(`UPDATE ${T.orgs} SET cost_estimation = ? WHERE name = ?`),
      change: db.prepare(`UPDATE ${T.access} SET access = ? WHERE id = ?`),
      revoke: db.prepare(`DELETE FROM ${T.access} WHERE id = ?`),
      dropWorkspace: db.prepare(`DELETE FROM ${T.access} WHERE workspace_id = ?`),
    };
    return (event: StoredEvent) => {
      if (!TYPES.has(event.type)) return;
      if (event.type === 'WorkspaceDeleted') {
        s.dropWorkspace.run((event.data as { id: string }).id);
        return;
      }
      if (event.type === 'ExecutionSettingsUpdated') {
        const d = event.data as { organization: string; costEstimationEnabled: boolean };
        s.costEstimation.run(d.costEstimationEnabled ? 1 : 0, d.organization);
        return;
      }
      const e = event as StoredEvent<OrganizationEvent>;
      switch (e.type) {
        case 'OrganizationCreated':
          s.org.run(e.data.name, e.data.email, e.data.ownersTeamId, e.time);
          return;
        case 'TeamCreated':
          s.team.run(e.data.id, e.data.organization, e.data.name, e.data.owners ? 1 : 0, e.time);
          return;
        case 'TeamMemberAdded':
          s.member.run(e.data.teamId, e.data.userId);
          return;
        case 'TeamAccessGranted':
          s.grant.run(e.data.id, e.data.teamId, e.data.workspaceId, e.data.access);
          return;
        case 'TeamAccessChanged':
          s.change.run(e.data.access, e.data.id);
          return;
        case 'TeamAccessRevoked':
          s.revoke.run(e.data.id);
          return;
        case 'OrganizationUpdated':
          s.costEstimation.run(e.data.costEstimationEnabled ? 1 : 0, e.data.name);
          return;
        default: {
          const _never: never = e;
          return _never;
        }
      }
    };
  },
};

/** What each team access level allows on a workspace. */
export function accessOfLevel(level: TeamAccessLevel): WorkspaceAccess {
  switch (level) {
    case 'read':
      return { read: true, queuePlans: false, applyRuns: false, admin: false };
    case 'plan':
      return { read: true, queuePlans: true, applyRuns: false, admin: false };
    case 'write':
      return { read: true, queuePlans: true, applyRuns: true, admin: false };
    case 'admin':
      return FULL_ACCESS;
    default: {
      const _never: never = level;
      return _never;
    }
  }
}

const union = (a: WorkspaceAccess, b: WorkspaceAccess): WorkspaceAccess => ({
  read: a.read || b.read,
  queuePlans: a.queuePlans || b.queuePlans,
  applyRuns: a.applyRuns || b.applyRuns,
  admin: a.admin || b.admin,
});

/** Queries over organizations and teams, and the access rule. */
export class OrganizationQueries {
  /** Statements are prepared on first use and kept (see core/sql.ts). */
  private readonly sql: ReturnType<typeof statements>;

  constructor(db: Db) {
    this.sql = statements(db);
  }

  organization(name: string): OrganizationRow | null {
    const r = this.sql(`SELECT * FROM ${T.orgs} WHERE name = ?`).get(name) as
      | {
          name: string;
          email: string;
          owners_team_id: string;
          created_at: string;
          cost_estimation: number;
        }
      | undefined;
    return r === undefined
      ? null
      : {
          name: r.name,
          email: r.email,
          ownersTeamId: r.owners_team_id,
          createdAt: r.created_at,
          costEstimationEnabled: r.cost_estimation === 1,
        };
  }

  organizations(): OrganizationRow[] {
    return (this.sql(`SELECT name FROM ${T.orgs} ORDER BY name`).all() as { name: string }[]).map(
      (r) => this.organization(r.name)!,
    );
  }

  team(id: string): TeamRow | null {
    const r = this.sql(`SELECT * FROM ${T.teams} WHERE id = ?`).get(id) as
      | { id: string; organization: string; name: string; owners: number; created_at: string }
      | undefined;
    return r === undefined
      ? null
      : {
          id: r.id,
          organization: r.organization,
          name: r.name,
          owners: r.owners === 1,
          createdAt: r.created_at,
        };
  }

  teams(organization: string): TeamRow[] {
    return (
      this.sql(`SELECT id FROM ${T.teams} WHERE organization = ? ORDER BY name`).all(
        organization,
      ) as { id: string }[]
    ).map((r) => this.team(r.id)!);
  }

  teamByName(organization: string, name: string): TeamRow | null {
    const r = this.sql(`SELECT id FROM ${T.teams} WHERE organization = ? AND name = ?`).get(
      organization,
      name,
    ) as { id: string } | undefined;
    return r === undefined ? null : this.team(r.id);
  }

  /** Whether the user is on a team of the organization. */
  isMember(organization: string, userId: string): boolean {
    return (
      this.sql(
        `SELECT 1 FROM ${T.members} m JOIN ${T.teams} t ON t.id = m.team_id
         WHERE t.organization = ? AND m.user_id = ? LIMIT 1`,
      ).get(organization, userId) !== undefined
    );
  }

  members(teamId: string): string[] {
    return (
      this.sql(`SELECT user_id FROM ${T.members} WHERE team_id = ? ORDER BY user_id`).all(
        teamId,
      ) as { user_id: string }[]
    ).map((r) => r.user_id);
  }

  teamAccess(id: string): TeamAccessRow | null {
    const r = this.sql(`SELECT * FROM ${T.access} WHERE id = ?`).get(id) as
      { id: string; team_id: string; workspace_id: string; access: TeamAccessLevel } | undefined;
    return r === undefined
      ? null
      : { id: r.id, teamId: r.team_id, workspaceId: r.workspace_id, access: r.access };
  }

  teamAccessOn(workspaceId: string): TeamAccessRow[] {
    return (
      this.sql(`SELECT id FROM ${T.access} WHERE workspace_id = ? ORDER BY id`).all(
        workspaceId,
      ) as { id: string }[]
    ).map((r) => this.teamAccess(r.id)!);
  }

  /** Is the principal a member of the organization (owners team, any team, or its own token)? */
  belongs(principal: RunsPrincipal, organization: string): boolean {
    if (principal.admin) return true;
    if (principal.kind !== 'user') return principal.organization === organization;
    return (
      this.sql(
        `SELECT 1 FROM ${T.members} m JOIN ${T.teams} t ON t.id = m.team_id WHERE m.user_id = ? AND t.organization = ? LIMIT 1`,
      ).get(principal.id, organization) !== undefined
    );
  }

  /** Is the principal an owner of the organization (site admin, owners team member or owners team token)? */
  owns(principal: RunsPrincipal, organization: string): boolean {
    if (principal.admin) return true;
    switch (principal.kind) {
      case 'organization':
        return principal.organization === organization;
      case 'team':
        return (
          this.team(principal.id)?.owners === true &&
          this.team(principal.id)?.organization === organization
        );
      case 'user':
        return (
          this.sql(
            `SELECT 1 FROM ${T.members} m JOIN ${T.teams} t ON t.id = m.team_id WHERE m.user_id = ? AND t.organization = ? AND t.owners = 1`,
          ).get(principal.id, organization) !== undefined
        );
      default: {
        const _never: never = principal.kind;
        return _never;
      }
    }
  }

  /** A team's access to a project (`/team-projects/:id`). */
  teamProject(id: string): TeamProjectRow | null {
    const r = this.sql(`SELECT * FROM ${TEAM_PROJECTS_TABLE} WHERE id = ?`).get(id) as
      { id: string; team_id: string; project_id: string; access: ProjectAccessLevel } | undefined;
    return r === undefined
      ? null
      : { id: r.id, teamId: r.team_id, projectId: r.project_id, access: r.access };
  }

  /** Every team's access to one project. */
  teamProjectsOn(projectId: string): TeamProjectRow[] {
    return (
      this.sql(`SELECT id FROM ${TEAM_PROJECTS_TABLE} WHERE project_id = ? ORDER BY id`).all(
        projectId,
      ) as { id: string }[]
    ).map((r) => this.teamProject(r.id)!);
  }

  /** Whether one of the principal's teams has access to the project. */
  hasProjectGrant(principal: RunsPrincipal, projectId: string): boolean {
    if (principal.kind === 'team')
      return (
        this.sql(
          `SELECT 1 FROM ${TEAM_PROJECTS_TABLE} WHERE project_id = ? AND team_id = ? LIMIT 1`,
        ).get(projectId, principal.id) !== undefined
      );
    if (principal.kind !== 'user') return false;
    return (
      this.sql(
        `SELECT 1 FROM ${TEAM_PROJECTS_TABLE} p JOIN ${T.members} m ON m.team_id = p.team_id
         WHERE p.project_id = ? AND m.user_id = ? LIMIT 1`,
      ).get(projectId, principal.id) !== undefined
    );
  }

  /**
   * The principal's access to one workspace: owners get everything, others the union of their
   * teams' grants on the workspace and on its project.
   */
  accessTo(
    principal: RunsPrincipal,
    workspace: { id: string; organization: string },
  ): WorkspaceAccess {
    if (this.owns(principal, workspace.organization)) return FULL_ACCESS;
    const levels =
      principal.kind === 'team'
        ? (this.sql(`SELECT access FROM ${T.access} WHERE workspace_id = ? AND team_id = ?`).all(
            workspace.id,
            principal.id,
          ) as { access: TeamAccessLevel }[])
        : principal.kind === 'user'
          ? (this.sql(
              `SELECT a.access FROM ${T.access} a JOIN ${T.members} m ON m.team_id = a.team_id WHERE a.workspace_id = ? AND m.user_id = ?`,
            ).all(workspace.id, principal.id) as { access: TeamAccessLevel }[])
          : [];
    const viaProject =
      principal.kind === 'team'
        ? (this.sql(
            `SELECT p.access FROM ${TEAM_PROJECTS_TABLE} p JOIN ${WORKSPACES_TABLE} w ON w.project_id = p.project_id
             WHERE w.id = ? AND p.team_id = ?`,
          ).all(workspace.id, principal.id) as { access: ProjectAccessLevel }[])
        : principal.kind === 'user'
          ? (this.sql(
              `SELECT p.access FROM ${TEAM_PROJECTS_TABLE} p JOIN ${T.members} m ON m.team_id = p.team_id
               JOIN ${WORKSPACES_TABLE} w ON w.project_id = p.project_id WHERE w.id = ? AND m.user_id = ?`,
            ).all(workspace.id, principal.id) as { access: ProjectAccessLevel }[])
          : [];
    return [...levels.map((l) => l.access), ...viaProject.map((l) => workspaceLevelOf(l.access))]
      .map(accessOfLevel)
      .reduce(union, NO_ACCESS);
  }
}
