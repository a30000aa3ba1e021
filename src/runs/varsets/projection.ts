import { canonicalJson } from '../../core/canonical.js';
import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import type { Sealed } from '../../core/seal.js';
import { statements } from '../../core/sql.js';
import { variableFields, type VariableColumns } from '../executor/projection.js';
import type { ProjectDeleted, WorkspaceDeleted } from '../events.js';
import type { AppliedVarset, VarsetTier } from './assemble.js';
import { VARSET_EVENT_TYPES, type VarsetEvent, type VarsetVariableData } from './events.js';

/** Variable sets, where they apply, and their variables (sealed values stay sealed here). */

const T = {
  sets: 'runs_varsets',
  workspaces: 'runs_varset_workspaces',
  projects: 'runs_varset_projects',
  vars: 'runs_varset_vars',
} as const;

export interface VarsetRow {
  id: string;
  organization: string;
  name: string;
  description: string;
  global: boolean;
  priority: boolean;
  updatedAt: string;
  workspaceIds: string[];
  projectIds: string[];
}

export interface VarsetVariableRow extends VarsetVariableData {
  varsetId: string;
  createdAt: string;
}

interface SetDb {
  id: string;
  organization: string;
  name: string;
  description: string;
  global: number;
  priority: number;
  updated_at: string;
}
type VarDb = VariableColumns & { varset_id: string; created_at: string };

const toVariable = (r: VarDb): VarsetVariableRow => ({
  ...variableFields(r),
  varsetId: r.varset_id,
  createdAt: r.created_at,
});

export const varsetProjection: Projection = {
  name: 'runs-varsets',
  version: 1,
  tables: [T.sets, T.workspaces, T.projects, T.vars],
  events: [
    ...VARSET_EVENT_TYPES,
    ...(['WorkspaceDeleted', 'ProjectDeleted'] satisfies (
      WorkspaceDeleted | ProjectDeleted
    )['type'][]),
  ],
  setup(db: Db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${T.sets} (id TEXT PRIMARY KEY, organization TEXT NOT NULL, name TEXT NOT NULL,
        description TEXT NOT NULL, global INTEGER NOT NULL, priority INTEGER NOT NULL, updated_at TEXT NOT NULL,
        UNIQUE (organization, name));
      CREATE TABLE IF NOT EXISTS ${T.workspaces} (varset_id TEXT NOT NULL, workspace_id TEXT NOT NULL,
        PRIMARY KEY (varset_id, workspace_id));
      CREATE TABLE IF NOT EXISTS ${T.projects} (varset_id TEXT NOT NULL, project_id TEXT NOT NULL,
        PRIMARY KEY (varset_id, project_id));
      CREATE TABLE IF NOT EXISTS ${T.vars} (id TEXT PRIMARY KEY, varset_id TEXT NOT NULL, key TEXT NOT NULL,
        value TEXT NOT NULL, description TEXT, category TEXT NOT NULL, hcl INTEGER NOT NULL,
        sensitive INTEGER NOT NULL, created_at TEXT NOT NULL);
    `);
    const s = {
      insert: db.prepare(
        `INSERT INTO ${T.sets} (id, organization, name, description, global, priority, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      update: db.prepare(`UPDATE ${T.sets} SET name = COALESCE(@name, name),
        description = COALESCE(@description, description), global = COALESCE(@global, global),
        priority = COALESCE(@priority, priority), updated_at = @at WHERE id = @id`),
      touch: db.prepare(`UPDATE ${T.sets} SET updated_at = ? WHERE id = ?`),
      remove: [T.sets, T.workspaces, T.projects, T.vars].map((t) =>
        db.prepare(`DELETE FROM ${t} WHERE ${t === T.sets ? 'id' : 'varset_id'} = ?`),
      ),
      addWorkspace: db.prepare(`INSERT OR IGNORE INTO ${T.workspaces} VALUES (?, ?)`),
      dropWorkspace: db.prepare(
        `DELETE FROM ${T.workspaces} WHERE varset_id = ? AND workspace_id = ?`,
      ),
      addProject: db.prepare(`INSERT OR IGNORE INTO ${T.projects} VALUES (?, ?)`),
      dropProject: db.prepare(`DELETE FROM ${T.projects} WHERE varset_id = ? AND project_id = ?`),
      workspaceGone: db.prepare(`DELETE FROM ${T.workspaces} WHERE workspace_id = ?`),
      projectGone: db.prepare(`DELETE FROM ${T.projects} WHERE project_id = ?`),
      writeVar:
        db.prepare(`INSERT OR REPLACE INTO ${T.vars} (id, varset_id, key, value, description, category, hcl, sensitive, created_at)
        VALUES (@id, @varset_id, @key, @value, @description, @category, @hcl, @sensitive, @created_at)`),
      getVar: db.prepare<[string], VarDb>(`SELECT * FROM ${T.vars} WHERE id = ?`),
      dropVar: db.prepare(`DELETE FROM ${T.vars} WHERE id = ?`),
    };
    const writeVar = (v: VarsetVariableRow) =>
      s.writeVar.run({
        id: v.id,
        varset_id: v.varsetId,
        key: v.key,
        // Canonical, as the log holds it: a replay writes the same bytes.
        value: canonicalJson(v.value),
        description: v.description,
        category: v.category,
        hcl: v.hcl ? 1 : 0,
        sensitive: v.sensitive ? 1 : 0,
        created_at: v.createdAt,
      });
    const flag = (b: boolean | undefined) => (b === undefined ? null : b ? 1 : 0);
    return (event: StoredEvent) => {
      if (event.type === 'WorkspaceDeleted') {
        s.workspaceGone.run((event as StoredEvent<WorkspaceDeleted>).data.id);
        return;
      }
      if (event.type === 'ProjectDeleted') {
        s.projectGone.run((event as StoredEvent<ProjectDeleted>).data.id);
        return;
      }
      if (!VARSET_EVENT_TYPES.has(event.type)) return;
      const e = event as StoredEvent<VarsetEvent>;
      switch (e.type) {
        case 'VarsetCreated': {
          const d = e.data;
          s.insert.run(
            d.id,
            d.organization,
            d.name,
            d.description,
            flag(d.global),
            flag(d.priority),
            e.time,
          );
          return;
        }
        case 'VarsetUpdated':
          s.update.run({
            id: e.data.id,
            name: e.data.name ?? null,
            description: e.data.description ?? null,
            global: flag(e.data.global),
            priority: flag(e.data.priority),
            at: e.time,
          });
          return;
        case 'VarsetDeleted':
          for (const r of s.remove) r.run(e.data.id);
          return;
        case 'VarsetAppliedToWorkspaces':
          for (const w of e.data.workspaceIds) s.addWorkspace.run(e.data.id, w);
          return;
        case 'VarsetRemovedFromWorkspaces':
          for (const w of e.data.workspaceIds) s.dropWorkspace.run(e.data.id, w);
          return;
        case 'VarsetAppliedToProjects':
          for (const p of e.data.projectIds) s.addProject.run(e.data.id, p);
          return;
        case 'VarsetRemovedFromProjects':
          for (const p of e.data.projectIds) s.dropProject.run(e.data.id, p);
          return;
        case 'VarsetVariableCreated':
          writeVar({ ...e.data, createdAt: e.time });
          s.touch.run(e.time, e.data.varsetId);
          return;
        case 'VarsetVariableUpdated': {
          const row = s.getVar.get(e.data.id);
          if (row !== undefined) writeVar({ ...toVariable(row), ...e.data });
          s.touch.run(e.time, e.data.varsetId);
          return;
        }
        case 'VarsetVariableDeleted':
          s.dropVar.run(e.data.id);
          s.touch.run(e.time, e.data.varsetId);
          return;
        default: {
          const _never: never = e;
          return _never;
        }
      }
    };
  },
};

/** Read access to variable sets. */
export class VarsetQueries {
  /** Statements are prepared on first use and kept (see core/sql.ts). */
  private readonly sql: ReturnType<typeof statements>;

  constructor(db: Db) {
    this.sql = statements(db);
  }

  get(id: string): VarsetRow | null {
    const r = this.sql(`SELECT * FROM ${T.sets} WHERE id = ?`).get(id) as SetDb | undefined;
    if (r === undefined) return null;
    const ids = (table: string, column: string) =>
      (
        this.sql(`SELECT ${column} AS id FROM ${table} WHERE varset_id = ? ORDER BY ${column}`).all(
          id,
        ) as { id: string }[]
      ).map((x) => x.id);
    return {
      id: r.id,
      organization: r.organization,
      name: r.name,
      description: r.description,
      global: r.global === 1,
      priority: r.priority === 1,
      updatedAt: r.updated_at,
      workspaceIds: ids(T.workspaces, 'workspace_id'),
      projectIds: ids(T.projects, 'project_id'),
    };
  }

  byName(organization: string, name: string): VarsetRow | null {
    const r = this.sql(`SELECT id FROM ${T.sets} WHERE organization = ? AND name = ?`).get(
      organization,
      name,
    ) as { id: string } | undefined;
    return r === undefined ? null : this.get(r.id);
  }

  list(organization: string): VarsetRow[] {
    return (
      this.sql(`SELECT id FROM ${T.sets} WHERE organization = ? ORDER BY name`).all(
        organization,
      ) as { id: string }[]
    ).map((r) => this.get(r.id)!);
  }

  variables(varsetId: string): VarsetVariableRow[] {
    return (
      this.sql(`SELECT * FROM ${T.vars} WHERE varset_id = ? ORDER BY key, id`).all(
        varsetId,
      ) as VarDb[]
    ).map(toVariable);
  }

  variable(id: string): VarsetVariableRow | null {
    const r = this.sql(`SELECT * FROM ${T.vars} WHERE id = ?`).get(id) as VarDb | undefined;
    return r === undefined ? null : toVariable(r);
  }

  /**
   * The sets that reach a workspace, each with its tier there: global; else workspace-scoped when
   * applied to the workspace itself; else project-scoped through the workspace's project.
   */
  forWorkspace(ws: {
    id: string;
    organization: string;
    projectId: string;
  }): { set: VarsetRow; tier: VarsetTier }[] {
    return this.list(ws.organization).flatMap((set) => {
      const tier: VarsetTier | null = set.global
        ? 'global'
        : set.workspaceIds.includes(ws.id)
          ? 'workspace'
          : set.projectIds.includes(ws.projectId)
            ? 'project'
            : null;
      return tier === null ? [] : [{ set, tier }];
    });
  }

  /** The sets applied to one project (`GET /projects/:id/varsets`). */
  forProject(organization: string, projectId: string): VarsetRow[] {
    return this.list(organization).filter((s) => s.projectIds.includes(projectId));
  }

  /** The sets that reach a workspace with their values opened, for a run's variables. */
  applied(
    ws: { id: string; organization: string; projectId: string },
    open: (value: string | Sealed) => string,
  ): AppliedVarset[] {
    return this.forWorkspace(ws).map(({ set, tier }) => ({
      id: set.id,
      name: set.name,
      priority: set.priority,
      tier,
      variables: this.variables(set.id).map((v) => ({
        key: v.key,
        value: open(v.value),
        category: v.category,
        hcl: v.hcl,
        sensitive: v.sensitive,
      })),
    }));
  }
}
