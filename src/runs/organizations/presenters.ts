import { API, linkOnly, toOne, type Resource } from '../jsonapi.js';
import type { UserRow } from '../identity/projection.js';
import { defaultProjectId } from '../projects/default.js';
import {
  CUSTOM_DEFAULTS,
  permissionsOfLevel,
  type OrganizationRow,
  type TeamAccessRow,
  type TeamRow,
} from './projection.js';

/** The user resource (as `created_by` includes it). */
export function presentUser(u: UserRow): Resource {
  return {
    id: u.id,
    type: 'users',
    attributes: {
      username: u.username,
      email: u.email,
      'is-service-account': false,
      'is-site-admin': u.admin,
      'avatar-url': '',
    },
    links: { self: `${API}/users/${u.id}` },
  };
}

export function presentOrganization(o: OrganizationRow, owner: boolean): Resource {
  return {
    id: o.name,
    type: 'organizations',
    attributes: {
      name: o.name,
      email: o.email,
      'created-at': o.createdAt,
      'external-id': o.name,
      'cost-estimation-enabled': o.costEstimationEnabled,
      permissions: {
        'can-create-workspace': owner,
        'can-update': owner,
        'can-destroy': owner,
        'can-create-team': owner,
      },
    },
    relationships: {
      'owners-team': toOne('teams', o.ownersTeamId),
      'default-project': toOne('projects', defaultProjectId(o.name)),
    },
    links: { self: `${API}/organizations/${o.name}` },
  };
}

export function presentTeam(t: TeamRow, members: string[]): Resource {
  return {
    id: t.id,
    type: 'teams',
    attributes: {
      name: t.name,
      'users-count': members.length,
      'created-at': t.createdAt,
      'is-unified': false,
    },
    relationships: {
      organization: toOne('organizations', t.organization),
      users: { data: members.map((id) => ({ type: 'users', id })) },
      'authentication-token': linkOnly(`${API}/teams/${t.id}/authentication-token`),
    },
    links: { self: `${API}/teams/${t.id}` },
  };
}

export function presentTeamAccess(a: TeamAccessRow): Resource {
  const p = a.access === 'custom' ? (a.custom ?? CUSTOM_DEFAULTS) : permissionsOfLevel(a.access);
  return {
    id: a.id,
    type: 'team-workspaces',
    attributes: {
      access: a.access,
      runs: p.runs,
      variables: p.variables,
      'state-versions': p.stateVersions,
      'sentinel-mocks': p.sentinelMocks,
      'workspace-locking': p.workspaceLocking,
      'run-tasks': p.runTasks,
    },
    relationships: {
      team: toOne('teams', a.teamId),
      workspace: toOne('workspaces', a.workspaceId),
    },
    links: { self: `${API}/team-workspaces/${a.id}` },
  };
}

/** A freshly made token: the only response that shows its secret. */
export function presentToken(
  t: { id: string; description: string | null; expiredAt: string | null },
  token: string,
  createdAt: string,
): Resource {
  return {
    id: t.id,
    type: 'authentication-tokens',
    attributes: {
      'created-at': createdAt,
      'last-used-at': null,
      description: t.description,
      token,
      'expired-at': t.expiredAt,
    },
  };
}

/**
 * An organization's entitlement set: what Keel serves of the reference's features, the same for
 * every organization (answered to users and to a run's own token alike).
 */
export function presentEntitlements(organization: string): Resource {
  return {
    id: organization,
    type: 'entitlement-sets',
    attributes: {
      operations: true,
      'private-module-registry': false,
      'state-storage': true,
      teams: true,
      'vcs-integrations': false,
      sentinel: false,
      'cost-estimation': true,
      'run-tasks': false,
    },
  };
}
