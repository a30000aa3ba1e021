import type { Decider } from '../../core/command-handler.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { ProjectCreated, ProjectEvent, ProjectUpdated } from '../events.js';

/**
 * The project aggregate (its stream is its id). The default project has no `ProjectCreated` (it
 * exists from its organization's creation on), so the decider knows only whether a stream was
 * created and whether it was deleted; the routes check the rest against the read model.
 */
export interface ProjectState {
  created: boolean;
  deleted: boolean;
}

export const projectDecider: Decider<ProjectState, ProjectEvent> = {
  initialState: () => ({ created: false, deleted: false }),
  evolve(state, event) {
    switch (event.type) {
      case 'ProjectCreated':
        return { ...state, created: true };
      case 'ProjectUpdated':
        return state;
      case 'ProjectDeleted':
        return { ...state, deleted: true };
      default: {
        const _never: never = event;
        return _never;
      }
    }
  },
  describe: (s) => (s.deleted ? 'deleted' : 'live'),
};

function live(id: string, s: ProjectState): void {
  if (s.deleted) throw new NotFoundError(`project ${id} not found`);
}

export const createProject =
  (data: ProjectCreated['data']) =>
  (s: ProjectState): ProjectEvent[] => {
    if (s.created) throw new ConflictError(`project ${data.id} already exists`);
    return [{ type: 'ProjectCreated', data }];
  };

export const updateProject =
  (changes: ProjectUpdated['data']) =>
  (s: ProjectState): ProjectEvent[] => {
    live(changes.id, s);
    return Object.keys(changes).length === 1 ? [] : [{ type: 'ProjectUpdated', data: changes }];
  };

export const deleteProject =
  (id: string) =>
  (s: ProjectState): ProjectEvent[] => {
    live(id, s);
    return [{ type: 'ProjectDeleted', data: { id } }];
  };
