import { variableWireAttributes } from '../executor/variables.js';
import { API, toOne, type Resource } from '../jsonapi.js';
import type { VarsetRow, VarsetVariableRow } from './projection.js';

/** The variable set resource. */
export function presentVarset(v: VarsetRow, variables: VarsetVariableRow[]): Resource {
  return {
    id: v.id,
    type: 'varsets',
    attributes: {
      name: v.name,
      description: v.description,
      global: v.global,
      priority: v.priority,
      'updated-at': v.updatedAt,
      'var-count': variables.length,
      'workspace-count': v.workspaceIds.length,
      'project-count': v.projectIds.length,
    },
    relationships: {
      organization: toOne('organizations', v.organization),
      vars: { data: variables.map((x) => ({ type: 'vars', id: x.id })) },
      workspaces: { data: v.workspaceIds.map((id) => ({ type: 'workspaces', id })) },
      projects: { data: v.projectIds.map((id) => ({ type: 'projects', id })) },
    },
    links: { self: `${API}/varsets/${v.id}` },
  };
}

/** A set's variable; a sensitive value is never shown (`value: null`), as a workspace's is not. */
export function presentVarsetVariable(v: VarsetVariableRow): Resource {
  return {
    id: v.id,
    type: 'vars',
    attributes: { ...variableWireAttributes(v), 'created-at': v.createdAt },
    relationships: { varset: toOne('varsets', v.varsetId) },
    links: { self: `${API}/varsets/${v.varsetId}/relationships/vars/${v.id}` },
  };
}
