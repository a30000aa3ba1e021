import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import { statements } from '../../core/sql.js';
import type { OrganizationCreated, ProjectEvent, RunsContextEvent } from '../events.js';
import { WORKSPACES_TABLE } from '../workspaces/projection.js';
import { DEFAULT_PROJECT_NAME, defaultProjectId } from './default.js';

/** Projects: every organization's default project and the ones its owners made. */

export const PROJECTS_TABLE = 'runs_projects';

export interface ProjectRow {
  id: string;
  organization: string;
  name: string;
  description: string | null;
  /** The organization's default project: it cannot be deleted. */
  isDefault: boolean;
  createdAt: string;
}

interface DbRow {
  id: string;
  organization: string;
  name: string;
  description: string | null;
  is_default: number;
  created_at: string;
}

const toRow = (r: DbRow): ProjectRow => ({
  id: r.id,
  organization: r.organization,
  name: r.name,
  description: r.description,
  isDefault: r.is_default === 1,
  createdAt: r.created_at,
});

export const projectProjection: Projection = {
  name: 'runs-projects',
  version: 1,
  tables: [PROJECTS_TABLE],
  // Every organization has its default project from its creation on.
  events: [
    'OrganizationCreated',
    'ProjectCreated',
    'ProjectUpdated',
    'ProjectDeleted',
  ] satisfies RunsContextEvent['type'][],
  setup(db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${PROJECTS_TABLE} (id TEXT PRIMARY KEY,
      organization TEXT NOT NULL, name TEXT NOT NULL, description TEXT,
      is_default INTEGER NOT NULL, created_at TEXT NOT NULL, UNIQUE (organization, name))`);
    const s = {
      insert: db.prepare(
        `INSERT INTO ${PROJECTS_TABLE} (id, organization, name, description, is_default, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      update: db.prepare(`UPDATE ${PROJECTS_TABLE} SET name = COALESCE(@name, name),
        description = CASE WHEN @set_description = 1 THEN @description ELSE description END WHERE id = @id`),
      remove: db.prepare(`DELETE FROM ${PROJECTS_TABLE} WHERE id = ?`),
    };
    return (event: StoredEvent) => {
      if (event.type === 'OrganizationCreated') {
        const { name } = (event as StoredEvent<OrganizationCreated>).data;
        s.insert.run(defaultProjectId(name), name, DEFAULT_PROJECT_NAME, null, 1, event.time);
        return;
      }
      if (!event.type.startsWith('Project')) return;
      const e = event as StoredEvent<ProjectEvent>;
      switch (e.type) {
        case 'ProjectCreated':
          s.insert.run(e.data.id, e.data.organization, e.data.name, e.data.description, 0, e.time);
          return;
        case 'ProjectUpdated':
          s.update.run({
            id: e.data.id,
            name: e.data.name ?? null,
            set_description: e.data.description === undefined ? 0 : 1,
            description: e.data.description ?? null,
          });
          return;
        case 'ProjectDeleted':
          s.remove.run(e.data.id);
          return;
        default: {
          const _never: never = e;
          return _never;
        }
      }
    };
  },
};

/** Read access to projects. */
export class ProjectQueries {
  /** Statements are prepared on first use and kept (see core/sql.ts). */
  private readonly sql: ReturnType<typeof statements>;

  constructor(db: Db) {
    this.sql = statements(db);
  }

  get(id: string): ProjectRow | null {
    const r = this.sql(`SELECT * FROM ${PROJECTS_TABLE} WHERE id = ?`).get(id) as DbRow | undefined;
    return r === undefined ? null : toRow(r);
  }

  byName(organization: string, name: string): ProjectRow | null {
    const r = this.sql(`SELECT * FROM ${PROJECTS_TABLE} WHERE organization = ? AND name = ?`).get(
      organization,
      name,
    ) as DbRow | undefined;
    return r === undefined ? null : toRow(r);
  }

  /** An organization's projects by name (the default project among them). */
  list(organization: string): ProjectRow[] {
    return (
      this.sql(`SELECT * FROM ${PROJECTS_TABLE} WHERE organization = ? ORDER BY name, id`).all(
        organization,
      ) as DbRow[]
    ).map(toRow);
  }

  /** The ids of the workspaces in a project. */
  workspaceIds(projectId: string): string[] {
    return (
      this.sql(`SELECT id FROM ${WORKSPACES_TABLE} WHERE project_id = ? ORDER BY name`).all(
        projectId,
      ) as { id: string }[]
    ).map((r) => r.id);
  }
}
