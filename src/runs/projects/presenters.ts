import { API, toOne, type Resource } from '../jsonapi.js';
import type { ProjectRow } from './projection.js';

/** The project resource; `manage`: the caller may change it (an owner of its organization). */
export function presentProject(p: ProjectRow, workspaceCount: number, manage: boolean): Resource {
  return {
    id: p.id,
    type: 'projects',
    attributes: {
      name: p.name,
      description: p.description,
      'created-at': p.createdAt,
      'workspace-count': workspaceCount,
      permissions: {
        'can-read': true,
        'can-update': manage,
        'can-destroy': manage && !p.isDefault,
        'can-create-workspace': manage,
        'can-move-workspace': manage,
      },
    },
    relationships: {
      organization: toOne('organizations', p.organization),
      workspaces: {
        links: {
          related: `${API}/organizations/${p.organization}/workspaces?filter%5Bproject%5D%5Bid%5D=${p.id}`,
        },
      },
    },
    links: { self: `${API}/projects/${p.id}` },
  };
}
