import type { Sealed } from '../../core/seal.js';

/**
 * Variable sets: their events, on the set's stream (its id, `varset-…`). A sensitive value is
 * sealed in the event that records it, as a workspace variable's is.
 */

export type VarsetCreated = {
  type: 'VarsetCreated';
  data: {
    id: string;
    organization: string;
    name: string;
    description: string;
    /** Applied to every workspace of the organization. */
    global: boolean;
    /** Its values override workspace and run variables (see `assemble.ts`). */
    priority: boolean;
  };
};
export type VarsetUpdated = {
  type: 'VarsetUpdated';
  data: { id: string; name?: string; description?: string; global?: boolean; priority?: boolean };
};
export type VarsetDeleted = { type: 'VarsetDeleted'; data: { id: string } };
export type VarsetAppliedToWorkspaces = {
  type: 'VarsetAppliedToWorkspaces';
  data: { id: string; workspaceIds: string[] };
};
export type VarsetRemovedFromWorkspaces = {
  type: 'VarsetRemovedFromWorkspaces';
  data: { id: string; workspaceIds: string[] };
};
export type VarsetAppliedToProjects = {
  type: 'VarsetAppliedToProjects';
  data: { id: string; projectIds: string[] };
};
export type VarsetRemovedFromProjects = {
  type: 'VarsetRemovedFromProjects';
  data: { id: string; projectIds: string[] };
};

export interface VarsetVariableData {
  id: string;
  key: string;
  value: string | Sealed;
  description: string | null;
  category: 'terraform' | 'env';
  hcl: boolean;
  sensitive: boolean;
}
export type VarsetVariableCreated = {
  type: 'VarsetVariableCreated';
  data: VarsetVariableData & { varsetId: string };
};
export type VarsetVariableUpdated = {
  type: 'VarsetVariableUpdated';
  data: Partial<Omit<VarsetVariableData, 'id'>> & { varsetId: string; id: string };
};
export type VarsetVariableDeleted = {
  type: 'VarsetVariableDeleted';
  data: { varsetId: string; id: string };
};

export type VarsetEvent =
  | VarsetCreated
  | VarsetUpdated
  | VarsetDeleted
  | VarsetAppliedToWorkspaces
  | VarsetRemovedFromWorkspaces
  | VarsetAppliedToProjects
  | VarsetRemovedFromProjects
  | VarsetVariableCreated
  | VarsetVariableUpdated
  | VarsetVariableDeleted;

export const VARSET_EVENT_TYPES: ReadonlySet<string> = new Set<VarsetEvent['type']>([
  'VarsetCreated',
  'VarsetUpdated',
  'VarsetDeleted',
  'VarsetAppliedToWorkspaces',
  'VarsetRemovedFromWorkspaces',
  'VarsetAppliedToProjects',
  'VarsetRemovedFromProjects',
  'VarsetVariableCreated',
  'VarsetVariableUpdated',
  'VarsetVariableDeleted',
]);
