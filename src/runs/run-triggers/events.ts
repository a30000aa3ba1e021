/**
 * Run triggers: a workspace (the follower) follows another (the source); each successful apply in
 * the source queues a run in the follower. A trigger's stream is its id (`rt-…`).
 */
export type RunTriggerCreated = {
  type: 'RunTriggerCreated';
  data: { id: string; organization: string; workspaceId: string; sourceableId: string };
};
export type RunTriggerDeleted = { type: 'RunTriggerDeleted'; data: { id: string } };
export type RunTriggerEvent = RunTriggerCreated | RunTriggerDeleted;
