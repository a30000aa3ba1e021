import type { Decider } from '../../core/command-handler.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { WorkspaceEvent, WorkspaceLocked } from '../events.js';

/** Who holds a workspace lock. */
export type LockHolder = WorkspaceLocked['data']['by'];

/** The workspace aggregate: existence, auto-apply and the lock. */
export interface WorkspaceState {
  exists: boolean;
  deleted: boolean;
  lock: LockHolder | null;
}

export const workspaceDecider: Decider<WorkspaceState, WorkspaceEvent> = {
  initialState: () => ({ exists: false, deleted: false, lock: null }),
  evolve(state, event) {
    switch (event.type) {
      case 'WorkspaceCreated':
        return { ...state, exists: true };
      case 'WorkspaceUpdated':
        return state;
      case 'WorkspaceDeleted':
        return { ...state, deleted: true };
      case 'WorkspaceLocked':
        return { ...state, lock: event.data.by };
      case 'WorkspaceUnlocked':
        return { ...state, lock: null };
      default: {
        const _never: never = event;
        return _never;
      }
    }
  },
  describe: (s) => (s.lock === null ? 'unlocked' : `locked by ${s.lock.kind} ${s.lock.id}`),
};

const LOCK_WORD = { user: 'User', team: 'Team', run: 'Run' } as const;

/** The 409 text for a lock held by someone else; clients match on "is locked by Run/User/Team". */
export const lockedBy = (id: string, lock: LockHolder) =>
  new ConflictError(`workspace ${id} is locked by ${LOCK_WORD[lock.kind]} ${lock.id}`, {
    title: 'conflict',
  });

function live(id: string, s: WorkspaceState): void {
  if (!s.exists || s.deleted) throw new NotFoundError(`workspace ${id} not found`);
}

/** A user or team takes the lock (`actions/lock`). */
export const lockWorkspace =
  (id: string, by: LockHolder, reason: string | null) =>
  (s: WorkspaceState): WorkspaceEvent[] => {
    live(id, s);
    if (s.lock !== null)
      throw new ConflictError(`workspace ${id} already locked`, { title: 'conflict' });
    return [{ type: 'WorkspaceLocked', data: { by, reason } }];
  };

/** The holder releases the lock (`actions/unlock`); a run's lock is released only by the queue. */
export const unlockWorkspace =
  (id: string, by: LockHolder) =>
  (s: WorkspaceState): WorkspaceEvent[] => {
    live(id, s);
    if (s.lock === null)
      throw new ConflictError(`workspace ${id} already unlocked`, { title: 'conflict' });
    if (s.lock.kind !== by.kind || s.lock.id !== by.id) throw lockedBy(id, s.lock);
    return [{ type: 'WorkspaceUnlocked', data: { by, force: false } }];
  };

/** An admin breaks any user or team lock (`actions/force-unlock`). */
export const forceUnlockWorkspace =
  (id: string, by: LockHolder) =>
  (s: WorkspaceState): WorkspaceEvent[] => {
    live(id, s);
    if (s.lock === null)
      throw new ConflictError(`workspace ${id} already unlocked`, { title: 'conflict' });
    return [{ type: 'WorkspaceUnlocked', data: { by, force: true } }];
  };

/** The queue gives the lock to a run; nothing happens if someone holds it. */
export const lockForRun =
  (runId: string) =>
  (s: WorkspaceState): WorkspaceEvent[] =>
    s.exists && !s.deleted && s.lock === null
      ? [{ type: 'WorkspaceLocked', data: { by: { kind: 'run', id: runId }, reason: null } }]
      : [];

/** The queue takes the lock back from a run that completed. */
export const unlockForRun =
  (runId: string) =>
  (s: WorkspaceState): WorkspaceEvent[] =>
    s.lock?.kind === 'run' && s.lock.id === runId
      ? [{ type: 'WorkspaceUnlocked', data: { by: { kind: 'run', id: runId }, force: false } }]
      : [];

/** Create a workspace (its name is checked for uniqueness against the read model by the caller). */
export const createWorkspace =
  (data: Extract<WorkspaceEvent, { type: 'WorkspaceCreated' }>['data']) =>
  (s: WorkspaceState): WorkspaceEvent[] => {
    if (s.exists) throw new ConflictError(`workspace ${data.id} already exists`);
    return [{ type: 'WorkspaceCreated', data }];
  };

export const updateWorkspace =
  (id: string, changes: Extract<WorkspaceEvent, { type: 'WorkspaceUpdated' }>['data']) =>
  (s: WorkspaceState): WorkspaceEvent[] => {
    live(id, s);
    return Object.keys(changes).length === 0 ? [] : [{ type: 'WorkspaceUpdated', data: changes }];
  };

/** Delete a workspace; not while a run or anyone holds its lock. */
export const deleteWorkspace =
  (id: string) =>
  (s: WorkspaceState): WorkspaceEvent[] => {
    live(id, s);
    if (s.lock !== null) throw lockedBy(id, s.lock);
    return [{ type: 'WorkspaceDeleted', data: { id } }];
  };
