import type { Sealed } from '../../../core/seal.js';
import type { TaskEnforcement, TaskResultStatus, TaskStage } from '../tasks.js';

/** An organization's run task: where Keel sends the payload, and the key that signs it. */
export type RunTaskCreated = {
  type: 'RunTaskCreated';
  data: {
    id: string;
    organization: string;
    name: string;
    url: string;
    description: string | null;
    hmacKey: Sealed | null;
  };
};

/** A task attached to a workspace at a stage. */
export type WorkspaceTaskAttached = {
  type: 'WorkspaceTaskAttached';
  data: {
    id: string;
    workspaceId: string;
    taskId: string;
    stage: TaskStage;
    enforcement: TaskEnforcement;
  };
};

/** One task result of a stage; the access token is kept only as a hash. */
export interface StageResult {
  id: string;
  taskId: string;
  taskName: string;
  url: string;
  enforcement: TaskEnforcement;
  tokenHash: string;
  dueAt: string;
}

/** A run reached a stage with tasks: one pending result per attached task. */
export type TaskStageStarted = {
  type: 'TaskStageStarted';
  data: { id: string; runId: string; stage: TaskStage; results: StageResult[] };
};

/** A result changed: the task called back, its request failed, or it timed out. */
export type TaskResultUpdated = {
  type: 'TaskResultUpdated';
  data: {
    stageId: string;
    runId: string;
    resultId: string;
    status: TaskResultStatus;
    message: string | null;
    url: string | null;
  };
};

/** Every result is final; the stage passed or failed. */
export type TaskStageFinished = {
  type: 'TaskStageFinished';
  data: { id: string; runId: string; status: 'passed' | 'failed' };
};

export type RunTaskEvent =
  RunTaskCreated | WorkspaceTaskAttached | TaskStageStarted | TaskResultUpdated | TaskStageFinished;
