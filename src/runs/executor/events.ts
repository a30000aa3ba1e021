import { streamName } from '../../core/streams.js';
import type { Sealed } from '../../core/seal.js';

/**
 * The executor context's events. Plan artifacts live on `<run id>:plan-artifact`, workspace
 * variables on their own id. Each is recorded in the same transaction as the
 * run event it belongs to.
 */

/** The stream of a run's plan artifact. */
export const planArtifactStream = streamName`${'runId'}:plan-artifact`;

/**
 * The plan artifact an apply consumes: the builtin plan or the command driver's plan file, and the
 * execution engine that made it (absent in logs written before it was recorded).
 */
export type PlanArtifactRecorded = {
  type: 'PlanArtifactRecorded';
  data: {
    runId: string;
    driver: 'builtin' | 'command';
    engine?: string;
    /** The artifact in base64, sealed (it holds the variables); in clear in older events. */
    artifact: string | Sealed;
  };
};

/** A workspace variable; a sensitive value is sealed and never leaves the daemon again. */
export type WorkspaceVariableCreated = {
  type: 'WorkspaceVariableCreated';
  data: {
    id: string;
    workspaceId: string;
    key: string;
    value: string | Sealed;
    description: string | null;
    category: 'terraform' | 'env';
    hcl: boolean;
    sensitive: boolean;
  };
};

export type WorkspaceVariableUpdated = {
  type: 'WorkspaceVariableUpdated';
  data: {
    key?: string;
    value?: string | Sealed;
    description?: string | null;
    category?: 'terraform' | 'env';
    hcl?: boolean;
    sensitive?: boolean;
  };
};

export type WorkspaceVariableDeleted = { type: 'WorkspaceVariableDeleted'; data: { id: string } };

export type ExecutorEvent =
  | PlanArtifactRecorded
  | WorkspaceVariableCreated
  | WorkspaceVariableUpdated
  | WorkspaceVariableDeleted;
