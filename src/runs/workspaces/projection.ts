import type { Db } from '../../core/database.js';
import { countedPage, statements } from '../../core/sql.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import type { ExecutionMode, RunsContextEvent, TagBinding, WorkspaceSettings } from '../events.js';
import { defaultProjectId } from '../projects/default.js';
import type { LockHolder } from './decider.js';

/**
 * The workspaces read model: settings, the lock, and the pointers clients follow (current and
 * latest run, latest and current configuration version, current state version).
 */

export const WORKSPACES_TABLE = 'runs_workspaces';

export interface WorkspaceRow {
  id: string;
  organization: string;
  name: string;
  autoApply: boolean;
  description: string | null;
  /** The engine the workspace chose (`builtin` or a configured name); null: the daemon's default. */
  executionEngine: string | null;
  terraformVersion: string;
  executionMode: ExecutionMode;
  /** Tag names, sorted. */
  tags: string[];
  /** Tag bindings, sorted by key. */
  tagBindings: TagBinding[];
  /** The project it belongs to. */
  projectId: string;
  /** Whether runs a run trigger queues apply on their own. */
  autoApplyRunTrigger: boolean;
  /** The other stored settings, defaults filled in. */
  settings: WorkspaceSettings;
  lock: LockHolder | null;
  lockReason: string | null;
  currentRunId: string | null;
  latestRunId: string | null;
  latestConfigurationVersionId: string | null;
  currentConfigurationVersionId: string | null;
  currentStateVersionId: string | null;
  createdAt: string;
  updatedAt: string;
}

interface DbRow {
  id: string;
  organization: string;
  name: string;
  auto_apply: number;
  description: string | null;
  execution_engine: string | null;
  terraform_version: string | null;
  execution_mode: ExecutionMode | null;
  tags: string;
  tag_bindings: string;
  project_id: string;
  auto_apply_run_trigger: number;
  settings: string;
  locked_by_kind: LockHolder['kind'] | null;
  locked_by_id: string | null;
  lock_reason: string | null;
  current_run_id: string | null;
  latest_run_id: string | null;
  latest_cv_id: string | null;
  current_cv_id: string | null;
  current_sv_id: string | null;
  created_at: string;
  updated_at: string;
}

/** The reference's defaults for a workspace created without a setting. */
export const DEFAULT_SETTINGS: WorkspaceSettings = {
  allowDestroyPlan: true,
  globalRemoteState: false,
  speculativeEnabled: true,
  queueAllRuns: false,
  fileTriggersEnabled: true,
  triggerPrefixes: [],
  triggerPatterns: [],
  structuredRunOutputEnabled: true,
  sourceName: null,
  sourceUrl: null,
  workingDirectory: '',
};

const toRow = (r: DbRow): WorkspaceRow => ({
  id: r.id,
  organization: r.organization,
  name: r.name,
  autoApply: r.auto_apply === 1,
  description: r.description,
  executionEngine: r.execution_engine,
  lock:
    r.locked_by_kind === null || r.locked_by_id === null
      ? null
      : { kind: r.locked_by_kind, id: r.locked_by_id },
  lockReason: r.lock_reason,
  terraformVersion: r.terraform_version ?? 'latest',
  executionMode: r.execution_mode ?? 'remote',
  tags: JSON.parse(r.tags) as string[],
  tagBindings: JSON.parse(r.tag_bindings) as TagBinding[],
  projectId: r.project_id,
  autoApplyRunTrigger: r.auto_apply_run_trigger === 1,
  settings: {
    ...DEFAULT_SETTINGS,
    ...(JSON.parse(r.settings) as Partial<WorkspaceSettings>),
  },
  currentRunId: r.current_run_id,
  latestRunId: r.latest_run_id,
  latestConfigurationVersionId: r.latest_cv_id,
  currentConfigurationVersionId: r.current_cv_id,
  currentStateVersionId: r.current_sv_id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** Bindings by key, sorted; a later binding of a key replaces an earlier one. */
function sortedBindings(bindings: TagBinding[]): TagBinding[] {
  const byKey = new Map(bindings.map((b) => [b.key, b.value]));
  return [...byKey.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => ({ key, value }));
}

export const workspaceProjection: Projection = {
  name: 'runs-workspaces',
  version: 6,
  tables: [WORKSPACES_TABLE],
  // The keys of `on` below: a workspace's latest and current run, configuration and state.
  events: [
    'WorkspaceCreated',
    'WorkspaceUpdated',
    'WorkspaceDeleted',
    'WorkspaceLocked',
    'WorkspaceUnlocked',
    'ConfigurationVersionCreated',
    'ConfigurationVersionUploaded',
    'StateVersionCreated',
    'RunCreated',
    'RunApplyFinished',
  ] satisfies RunsContextEvent['type'][],
  setup(db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${WORKSPACES_TABLE} (
      id TEXT PRIMARY KEY, organization TEXT NOT NULL, name TEXT NOT NULL, auto_apply INTEGER NOT NULL,
      description TEXT, locked_by_kind TEXT, locked_by_id TEXT, lock_reason TEXT, current_run_id TEXT,
      latest_run_id TEXT, latest_cv_id TEXT, current_cv_id TEXT, current_sv_id TEXT,
      created_at TEXT NOT NULL, updated_at TEXT NOT NULL, execution_engine TEXT,
      terraform_version TEXT, execution_mode TEXT, tags TEXT NOT NULL DEFAULT '[]',
      tag_bindings TEXT NOT NULL DEFAULT '[]', project_id TEXT NOT NULL,
      auto_apply_run_trigger INTEGER NOT NULL DEFAULT 0, settings TEXT NOT NULL DEFAULT '{}',
      UNIQUE (organization, name))`);
    const set = (sql: string) => db.prepare(`UPDATE ${WORKSPACES_TABLE} SET ${sql} WHERE id = @id`);
    const s = {
      insert:
        db.prepare(`INSERT INTO ${WORKSPACES_TABLE} (id, organization, name, auto_apply, description, execution_engine,
        terraform_version, execution_mode, tags, tag_bindings, project_id, auto_apply_run_trigger, settings, created_at, updated_at)
        VALUES (@id, @organization, @name, @auto_apply, @description, @engine, @version, @mode, @tags, @bindings, @project, @aart, @settings, @at, @at)`),
      update: set(`auto_apply = COALESCE(@auto_apply, auto_apply), name = COALESCE(@name, name),
        description = CASE WHEN @set_description = 1 THEN @description ELSE description END,
        execution_engine = COALESCE(@engine, execution_engine),
        terraform_version = COALESCE(@version, terraform_version),
        execution_mode = COALESCE(@mode, execution_mode),
        project_id = COALESCE(@project, project_id),
        auto_apply_run_trigger = COALESCE(@aart, auto_apply_run_trigger),
        settings = COALESCE(@settings, settings),
        updated_at = @at`),
      settingsOf: db.prepare<[string], { settings: string }>(
        `SELECT settings FROM ${WORKSPACES_TABLE} WHERE id = ?`,
      ),
      tagsOf: db.prepare<[string], { tags: string; tag_bindings: string }>(
        `SELECT tags, tag_bindings FROM ${WORKSPACES_TABLE} WHERE id = ?`,
      ),
      setTags: set('tags = @tags, tag_bindings = @bindings'),
      remove: db.prepare(`DELETE FROM ${WORKSPACES_TABLE} WHERE id = ?`),
      lock: set(`locked_by_kind = @kind, locked_by_id = @holder, lock_reason = @reason,
        current_run_id = CASE WHEN @kind = 'run' THEN @holder ELSE current_run_id END`),
      unlock: set('locked_by_kind = NULL, locked_by_id = NULL, lock_reason = NULL'),
      latestRun: set('latest_run_id = @run, latest_cv_id = @cv'),
      latestCv: set('latest_cv_id = @cv'),
      currentCv: set('current_cv_id = @cv'),
      currentSv: set('current_sv_id = @sv'),
      runCv: db.prepare<[string], { cv: string; ws: string }>(
        `SELECT json_extract(attrs, '$.configurationVersionId') AS cv, workspace_id AS ws FROM runs_runs WHERE id = ?`,
      ),
      cvOf: db.prepare<
        [string],
        { provisional: number; speculative: number; workspace_id: string }
      >(
        'SELECT provisional, speculative, workspace_id FROM runs_configuration_versions WHERE id = ?',
      ),
    };
    type On = {
      [K in RunsContextEvent['type']]?: (
        e: StoredEvent<Extract<RunsContextEvent, { type: K }>>,
      ) => void;
    };
    const on: On = {
      WorkspaceCreated: (e) =>
        s.insert.run({
          id: e.data.id,
          organization: e.data.organization,
          name: e.data.name,
          auto_apply: e.data.autoApply ? 1 : 0,
          description: e.data.description,
          engine: e.data.executionEngine ?? null,
          version: e.data.terraformVersion ?? null,
          mode: e.data.executionMode ?? null,
          tags: JSON.stringify([...new Set(e.data.tags ?? [])].sort()),
          bindings: JSON.stringify(sortedBindings(e.data.tagBindings ?? [])),
          project: e.data.projectId ?? defaultProjectId(e.data.organization),
          aart: e.data.autoApplyRunTrigger === true ? 1 : 0,
          settings: JSON.stringify(e.data.settings ?? {}),
          at: e.time,
        }),
      WorkspaceUpdated: (e) => {
        s.update.run({
          id: e.stream,
          auto_apply: e.data.autoApply === undefined ? null : e.data.autoApply ? 1 : 0,
          name: e.data.name ?? null,
          set_description: e.data.description === undefined ? 0 : 1,
          description: e.data.description ?? null,
          engine: e.data.executionEngine ?? null,
          version: e.data.terraformVersion ?? null,
          mode: e.data.executionMode ?? null,
          project: e.data.projectId ?? null,
          aart:
            e.data.autoApplyRunTrigger === undefined ? null : e.data.autoApplyRunTrigger ? 1 : 0,
          // Merged here, not with SQLite's json_patch: the same statement runs on PostgreSQL.
          settings:
            e.data.settings === undefined
              ? null
              : JSON.stringify({
                  ...(JSON.parse(s.settingsOf.get(e.stream)?.settings ?? '{}') as object),
                  ...e.data.settings,
                }),
          at: e.time,
        });
        const { tagsAdded, tagsRemoved, tagBindings } = e.data;
        if (tagsAdded === undefined && tagsRemoved === undefined && tagBindings === undefined)
          return;
        const row = s.tagsOf.get(e.stream);
        if (row === undefined) return;
        const removed = new Set(tagsRemoved ?? []);
        const tags = [...new Set([...(JSON.parse(row.tags) as string[]), ...(tagsAdded ?? [])])]
          .filter((t) => !removed.has(t))
          .sort();
        s.setTags.run({
          id: e.stream,
          tags: JSON.stringify(tags),
          bindings: JSON.stringify(
            sortedBindings([
              ...(JSON.parse(row.tag_bindings) as TagBinding[]),
              ...(tagBindings ?? []),
            ]),
          ),
        });
      },
      WorkspaceDeleted: (e) => s.remove.run(e.data.id),
      WorkspaceLocked: (e) =>
        s.lock.run({
          id: e.stream,
          kind: e.data.by.kind,
          holder: e.data.by.id,
          reason: e.data.reason,
        }),
      WorkspaceUnlocked: (e) => s.unlock.run({ id: e.stream }),
      ConfigurationVersionCreated: (e) => s.latestCv.run({ id: e.data.workspaceId, cv: e.data.id }),
      ConfigurationVersionUploaded: (e) => {
        // A provisional or speculative version becomes current only through an applied run.
        const cv = s.cvOf.get(e.stream);
        if (cv !== undefined && cv.provisional === 0 && cv.speculative === 0)
          s.currentCv.run({ id: cv.workspace_id, cv: e.stream });
      },
      StateVersionCreated: (e) => s.currentSv.run({ id: e.data.workspaceId, sv: e.data.id }),
      RunCreated: (e) =>
        s.latestRun.run({
          id: e.data.workspaceId,
          run: e.data.id,
          cv: e.data.configurationVersionId,
        }),
      RunApplyFinished: (e) => {
        const run = s.runCv.get(e.stream);
        if (run !== undefined) s.currentCv.run({ id: run.ws, cv: run.cv });
      },
    };
    return (event: StoredEvent) => {
      const apply = on[event.type as RunsContextEvent['type']] as
        ((e: StoredEvent) => void) | undefined;
      apply?.(event);
    };
  },
};

/** Read access to workspaces. */
export class WorkspaceQueries {
  /** Statements are prepared on first use and kept (see core/sql.ts). */
  private readonly sql: ReturnType<typeof statements>;

  constructor(db: Db) {
    this.sql = statements(db);
  }

  get(id: string): WorkspaceRow | null {
    const r = this.sql(`SELECT * FROM ${WORKSPACES_TABLE} WHERE id = ?`).get(id) as
      DbRow | undefined;
    return r === undefined ? null : toRow(r);
  }

  byName(organization: string, name: string): WorkspaceRow | null {
    const r = this.sql(`SELECT * FROM ${WORKSPACES_TABLE} WHERE organization = ? AND name = ?`).get(
      organization,
      name,
    ) as DbRow | undefined;
    return r === undefined ? null : toRow(r);
  }

  /** Ids of the named workspaces of an organization (for `filter[workspace_names]`). */
  idsByNames(organization: string, names: string[]): string[] {
    return names
      .map((n) => this.byName(organization, n)?.id)
      .filter((id): id is string => id !== undefined);
  }

  /**
   * An organization's workspaces, by name: `search` within the name, `tags` all carried (as tags
   * or as binding keys), `bindings` all carried (a key, with this value when one is given), in
   * one project when `projectId` is given.
   */
  list(
    organization: string,
    search: string | null,
    limit: number,
    offset: number,
    tags: string[] = [],
    bindings: { key: string; value: string | null }[] = [],
    projectId: string | null = null,
  ): { rows: WorkspaceRow[]; total: number } {
    const clauses = ['organization = ?'];
    const params: (string | number | null)[] = [organization];
    if (projectId !== null) {
      clauses.push('project_id = ?');
      params.push(projectId);
    }
    if (search !== null) {
      clauses.push('instr(name, ?) > 0');
      params.push(search);
    }
    for (const tag of tags) {
      clauses.push(
        `(EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?) OR EXISTS (SELECT 1 FROM json_each(tag_bindings) WHERE json_extract(value, '$.key') = ?))`,
      );
      params.push(tag, tag);
    }
    for (const b of bindings) {
      clauses.push(
        `EXISTS (SELECT 1 FROM json_each(tag_bindings) WHERE json_extract(value, '$.key') = ? AND (? IS NULL OR json_extract(value, '$.value') = ?))`,
      );
      params.push(b.key, b.value, b.value);
    }
    const { rows, total } = countedPage<DbRow>(this.sql, {
      table: WORKSPACES_TABLE,
      where: clauses.join(' AND '),
      params,
      order: 'name',
      limit,
      offset,
    });
    return { rows: rows.map(toRow), total };
  }

  /** Every workspace id (the queue's start-up sweep). */
  allIds(): string[] {
    return (
      this.sql(`SELECT id FROM ${WORKSPACES_TABLE} ORDER BY id`).all() as { id: string }[]
    ).map((r) => r.id);
  }
}
