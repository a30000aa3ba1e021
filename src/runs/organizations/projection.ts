import { createHash } from 'node:crypto';
import type { Db } from '../../core/database.js';
import { statements } from '../../core/sql.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import type { RunsPrincipal } from '../../http/types.js';
import {
  customOf,
  customText,
  type CustomPermissions,
  type OrganizationEvent,
  type TeamAccessLevel,
} from '../events.js';
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
  memberships: 'runs_org_memberships',
} as const;

/** A membership's id: one per organization and user, whichever way the user joined. */
export function membershipId(organization: string, userId: string): string {
  const digest = createHash('sha256').update(`${organization}\0${userId}`).digest('hex');
  return `ou-${digest.slice(0, 20)}`;
}

export interface MembershipRow {
  id: string;
  organization: string;
  userId: string;
  createdAt: string;
}

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
  /** The permissions of a `custom` grant; null for the fixed levels. */
  custom: CustomPermissions | null;
}

const TYPES = new Set([
  'OrganizationCreated',
  'TeamCreated',
  'TeamMemberAdded',
  'TeamAccessGranted',
  'TeamAccessChanged',
  'TeamAccessRevoked',
  'OrganizationMembershipCreated',
  'OrganizationMembershipDeleted',
  'WorkspaceDeleted',
  'OrganizationUpdated',
  // The executor's `/organizations/:org/execution-settings` resource sets the same flag.
  'ExecutionSettingsUpdated',
]);

export const organizationProjection: Projection = {
  name: 'runs-organizations',
  version: 3,
  tables: [T.orgs, T.teams, T.members, T.access, T.memberships],
  guarded: [T.orgs, T.teams, T.members, T.access, T.memberships],
  events: [...TYPES],
  setup(db: Db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${T.orgs} (name TEXT PRIMARY KEY, email TEXT NOT NULL, owners_team_id TEXT NOT NULL, created_at TEXT NOT NULL,
        cost_estimation INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE IF NOT EXISTS ${T.teams} (id TEXT PRIMARY KEY, organization TEXT NOT NULL, name TEXT NOT NULL,
        owners INTEGER NOT NULL, created_at TEXT NOT NULL, UNIQUE (organization, name));
      CREATE TABLE IF NOT EXISTS ${T.members} (team_id TEXT NOT NULL, user_id TEXT NOT NULL, PRIMARY KEY (team_id, user_id));
      CREATE INDEX IF NOT EXISTS runs_team_members_user ON ${T.members} (user_id);
      CREATE TABLE IF NOT EXISTS ${T.access} (id TEXT PRIMARY KEY, team_id TEXT NOT NULL, workspace_id TEXT NOT NULL,
        access TEXT NOT NULL, custom TEXT, UNIQUE (workspace_id, team_id));
      CREATE TABLE IF NOT EXISTS ${T.memberships} (id TEXT PRIMARY KEY, organization TEXT NOT NULL,
        user_id TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE (organization, user_id));
    `);
    const s = {
      org: db.prepare(
        `INSERT INTO ${T.orgs} (name, email, owners_team_id, created_at) VALUES (?, ?, ?, ?)`,
      ),
      team: db.prepare(
        `INSERT INTO ${T.teams} (id, organization, name, owners, created_at) VALUES (?, ?, ?, ?, ?)`,
      ),
      member: db.prepare(`INSERT OR IGNORE INTO ${T.members} (team_id, user_id) VALUES (?, ?)`),
      teamOrg: db.prepare(`SELECT organization FROM ${T.teams} WHERE id = ?`),
      join: db.prepare(
        `INSERT OR IGNORE INTO ${T.memberships} (id, organization, user_id, created_at) VALUES (?, ?, ?, ?)`,
      ),
      leave: db.prepare(`DELETE FROM ${T.memberships} WHERE id = ?`),
      leaveTeams: db.prepare(
        `DELETE FROM ${T.members} WHERE user_id = ? AND team_id IN (SELECT id FROM ${T.teams} WHERE organization = ?)`,
      ),
      grant: db.prepare(
        `INSERT INTO ${T.access} (id, team_id, workspace_id, access, custom) VALUES (?, ?, ?, ?, ?)`,
      ),
      costEstimation: db.prepare(`UPDATE ${T.orgs} SET cost_estimation = ? WHERE name = ?`),
      change: db.prepare(`UPDATE ${T.access} SET access = ?, custom = ? WHERE id = ?`),
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
        case 'TeamMemberAdded': {
          s.member.run(e.data.teamId, e.data.userId);
          const team = s.teamOrg.get(e.data.teamId) as { organization: string } | undefined;
          if (team !== undefined)
            s.join.run(
              membershipId(team.organization, e.data.userId),
              team.organization,
              e.data.userId,
              e.time,
            );
          return;
        }
        case 'OrganizationMembershipCreated':
          s.join.run(e.data.id, e.data.organization, e.data.userId, e.time);
          for (const teamId of e.data.teamIds) s.member.run(teamId, e.data.userId);
          return;
        case 'OrganizationMembershipDeleted':
          s.leave.run(e.data.id);
          s.leaveTeams.run(e.data.userId, e.data.organization);
          return;
        case 'TeamAccessGranted':
          s.grant.run(
            e.data.id,
            e.data.teamId,
            e.data.workspaceId,
            e.data.access,
            customText(e.data.custom),
          );
          return;
        case 'TeamAccessChanged':
          s.change.run(e.data.access, customText(e.data.custom), e.data.id);
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

/** The permissions a fixed level stands for (the reference's table). */
export function permissionsOfLevel(level: Exclude<TeamAccessLevel, 'custom'>): CustomPermissions {
  switch (level) {
    case 'read':
    case 'plan':
      return {
        runs: level,
        variables: 'read',
        stateVersions: 'read',
        sentinelMocks: 'none',
        workspaceLocking: false,
        runTasks: false,
      };
    case 'write':
    case 'admin':
      return {
        runs: 'apply',
        variables: 'write',
        stateVersions: 'write',
        sentinelMocks: 'read',
        workspaceLocking: true,
        runTasks: level === 'admin',
      };
    default: {
      const _never: never = level;
      return _never;
    }
  }
}

/** The permissions of a `custom` grant that does not name them all: the reference's defaults. */
export const CUSTOM_DEFAULTS: CustomPermissions = {
  runs: 'read',
  variables: 'none',
  stateVersions: 'none',
  sentinelMocks: 'none',
  workspaceLocking: false,
  runTasks: false,
};

/** The workspace permissions a request sends, by their names in the API. */
export interface SentPermissions {
  runs?: CustomPermissions['runs'] | undefined;
  variables?: CustomPermissions['variables'] | undefined;
  'state-versions'?: CustomPermissions['stateVersions'] | undefined;
  'sentinel-mocks'?: CustomPermissions['sentinelMocks'] | undefined;
  'workspace-locking'?: boolean | undefined;
  'run-tasks'?: boolean | undefined;
}

/** A `custom` grant's permissions: those sent, the others as they were (new: the defaults). */
export function customPermissions(
  sent: SentPermissions,
  before: CustomPermissions | null,
): CustomPermissions {
  const base = before ?? CUSTOM_DEFAULTS;
  return {
    runs: sent.runs ?? base.runs,
    variables: sent.variables ?? base.variables,
    stateVersions: sent['state-versions'] ?? base.stateVersions,
    sentinelMocks: sent['sentinel-mocks'] ?? base.sentinelMocks,
    workspaceLocking: sent['workspace-locking'] ?? base.workspaceLocking,
    runTasks: sent['run-tasks'] ?? base.runTasks,
  };
}

/** What each team access level (and a `custom` grant's permissions) allows on a workspace. */
export function accessOfLevel(
  level: TeamAccessLevel,
  custom: CustomPermissions | null = null,
): WorkspaceAccess {
  if (level === 'admin') return FULL_ACCESS;
  const p = level === 'custom' ? (custom ?? CUSTOM_DEFAULTS) : permissionsOfLevel(level);
  return {
    read: true,
    queuePlans: p.runs !== 'read',
    applyRuns: p.runs === 'apply',
    admin: false,
    variables: p.variables,
    stateVersions: p.stateVersions,
    sentinelMocks: p.sentinelMocks === 'read',
    lock: p.workspaceLocking,
    runTasks: p.runTasks,
  };
}

const VARIABLES = ['none', 'read', 'write'] as const;
const STATE = ['none', 'read-outputs', 'read', 'write'] as const;
const most = <T extends string>(order: readonly T[], a: T, b: T): T =>
  order.indexOf(a) >= order.indexOf(b) ? a : b;

const union = (a: WorkspaceAccess, b: WorkspaceAccess): WorkspaceAccess => ({
  read: a.read || b.read,
  queuePlans: a.queuePlans || b.queuePlans,
  applyRuns: a.applyRuns || b.applyRuns,
  admin: a.admin || b.admin,
  variables: most(VARIABLES, a.variables, b.variables),
  stateVersions: most(STATE, a.stateVersions, b.stateVersions),
  sentinelMocks: a.sentinelMocks || b.sentinelMocks,
  lock: a.lock || b.lock,
  runTasks: a.runTasks || b.runTasks,
});

type Grant = { access: TeamAccessLevel; custom: string | null };
type ProjectGrant = { access: ProjectAccessLevel; custom: string | null };

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

  /** Whether the user is a member of the organization (on one of its teams, or invited to it). */
  isMember(organization: string, userId: string): boolean {
    return this.membership(membershipId(organization, userId)) !== null;
  }

  membership(id: string): MembershipRow | null {
    const r = this.sql(`SELECT * FROM ${T.memberships} WHERE id = ?`).get(id) as
      { id: string; organization: string; user_id: string; created_at: string } | undefined;
    return r === undefined
      ? null
      : { id: r.id, organization: r.organization, userId: r.user_id, createdAt: r.created_at };
  }

  /** The memberships of an organization, or (with `userId` alone) of a user, oldest first. */
  memberships(by: { organization: string } | { userId: string }): MembershipRow[] {
    const rows = (
      'organization' in by
        ? this.sql(
            `SELECT id FROM ${T.memberships} WHERE organization = ? ORDER BY created_at, id`,
          ).all(by.organization)
        : this.sql(`SELECT id FROM ${T.memberships} WHERE user_id = ? ORDER BY created_at, id`).all(
            by.userId,
          )
    ) as { id: string }[];
    return rows.map((r) => this.membership(r.id)!);
  }

  /** The teams of the organization the user is on. */
  teamsOf(organization: string, userId: string): string[] {
    return (
      this.sql(
        `SELECT m.team_id FROM ${T.members} m JOIN ${T.teams} t ON t.id = m.team_id
         WHERE t.organization = ? AND m.user_id = ? ORDER BY m.team_id`,
      ).all(organization, userId) as { team_id: string }[]
    ).map((r) => r.team_id);
  }

  members(teamId: string): string[] {
    return (
      this.sql(`SELECT user_id FROM ${T.members} WHERE team_id = ? ORDER BY user_id`).all(
        teamId,
      ) as { user_id: string }[]
    ).map((r) => r.user_id);
  }

  teamAccess(id: string): TeamAccessRow | null {
    const r = this.sql(`SELECT * FROM ${T.access} WHERE id = ?`).get(id) as AccessRow | undefined;
    return r === undefined ? null : accessRow(r);
  }

  teamAccessOn(workspaceId: string): TeamAccessRow[] {
    return (
      this.sql(`SELECT * FROM ${T.access} WHERE workspace_id = ? ORDER BY id`).all(
        workspaceId,
      ) as AccessRow[]
    ).map(accessRow);
  }

  /** Is the principal a member of the organization (a membership, or its own token)? */
  belongs(principal: RunsPrincipal, organization: string): boolean {
    if (principal.admin) return true;
    if (principal.kind !== 'user') return principal.organization === organization;
    return this.isMember(organization, principal.id);
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
      ProjectAccessRow | undefined;
    return r === undefined ? null : projectAccessRow(r);
  }

  /** Every team's access to one project. */
  teamProjectsOn(projectId: string): TeamProjectRow[] {
    return (
      this.sql(`SELECT * FROM ${TEAM_PROJECTS_TABLE} WHERE project_id = ? ORDER BY id`).all(
        projectId,
      ) as ProjectAccessRow[]
    ).map(projectAccessRow);
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
        ? (this.sql(
            `SELECT access, custom FROM ${T.access} WHERE workspace_id = ? AND team_id = ?`,
          ).all(workspace.id, principal.id) as Grant[])
        : principal.kind === 'user'
          ? (this.sql(
              `SELECT a.access, a.custom FROM ${T.access} a JOIN ${T.members} m ON m.team_id = a.team_id WHERE a.workspace_id = ? AND m.user_id = ?`,
            ).all(workspace.id, principal.id) as Grant[])
          : [];
    const viaProject =
      principal.kind === 'team'
        ? (this.sql(
            `SELECT p.access, p.custom FROM ${TEAM_PROJECTS_TABLE} p JOIN ${WORKSPACES_TABLE} w ON w.project_id = p.project_id
             WHERE w.id = ? AND p.team_id = ?`,
          ).all(workspace.id, principal.id) as ProjectGrant[])
        : principal.kind === 'user'
          ? (this.sql(
              `SELECT p.access, p.custom FROM ${TEAM_PROJECTS_TABLE} p JOIN ${T.members} m ON m.team_id = p.team_id
               JOIN ${WORKSPACES_TABLE} w ON w.project_id = p.project_id WHERE w.id = ? AND m.user_id = ?`,
            ).all(workspace.id, principal.id) as ProjectGrant[])
          : [];
    return [
      ...levels.map((l) =>
        accessOfLevel(
          l.access,
          l.custom === null ? null : (JSON.parse(l.custom) as CustomPermissions),
        ),
      ),
      ...viaProject.map((l) =>
        accessOfLevel(
          workspaceLevelOf(l.access),
          l.custom === null ? null : (JSON.parse(l.custom) as CustomPermissions),
        ),
      ),
    ].reduce(union, NO_ACCESS);
  }
}

interface AccessRow {
  id: string;
  team_id: string;
  workspace_id: string;
  access: TeamAccessLevel;
  custom: string | null;
}

const accessRow = (r: AccessRow): TeamAccessRow => ({
  id: r.id,
  teamId: r.team_id,
  workspaceId: r.workspace_id,
  access: r.access,
  custom: customOf(r.custom),
});

interface ProjectAccessRow {
  id: string;
  team_id: string;
  project_id: string;
  access: ProjectAccessLevel;
  custom: string | null;
}

const projectAccessRow = (r: ProjectAccessRow): TeamProjectRow => ({
  id: r.id,
  teamId: r.team_id,
  projectId: r.project_id,
  access: r.access,
  custom: customOf(r.custom),
});
