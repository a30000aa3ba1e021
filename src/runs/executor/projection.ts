import { canonicalJson } from '../../core/canonical.js';
import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import type { Sealed } from '../../core/seal.js';
import type { ExecutorEvent, WorkspaceVariableCreated } from './events.js';

/**
 * Read models of the executor: plan artifacts by run and workspace variables. Sealed values stay sealed here; they are unsealed only to run a phase.
 */

const ARTIFACTS = 'exec_plan_artifacts';
const VARIABLES = 'exec_workspace_variables';

export type VariableRow = WorkspaceVariableCreated['data'];

export const executorProjection: Projection = {
  name: 'executor',
  version: 4,
  tables: [ARTIFACTS, VARIABLES],
  events: [
    'PlanArtifactRecorded',
    'WorkspaceVariableCreated',
    'WorkspaceVariableUpdated',
    'WorkspaceVariableDeleted',
  ] satisfies ExecutorEvent['type'][],
  setup(db: Db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${ARTIFACTS} (run_id TEXT PRIMARY KEY, driver TEXT NOT NULL,
        engine TEXT, artifact TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ${VARIABLES} (
        id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
        description TEXT, category TEXT NOT NULL, hcl INTEGER NOT NULL, sensitive INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS ${VARIABLES}_ws ON ${VARIABLES} (workspace_id, key);
    `);
    const putArtifact = db.prepare(
      `INSERT OR REPLACE INTO ${ARTIFACTS} (run_id, driver, engine, artifact) VALUES (?, ?, ?, ?)`,
    );
    const putVariable = db.prepare(
      `INSERT OR REPLACE INTO ${VARIABLES} (id, workspace_id, key, value, description, category, hcl, sensitive) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const getVariable = db.prepare<[string], VariableColumns & { workspace_id: string }>(
      `SELECT * FROM ${VARIABLES} WHERE id = ?`,
    );
    const deleteVariable = db.prepare(`DELETE FROM ${VARIABLES} WHERE id = ?`);
    const writeVariable = (v: VariableRow) =>
      putVariable.run(
        v.id,
        v.workspaceId,
        v.key,
        canonicalJson(v.value),
        v.description,
        v.category,
        v.hcl ? 1 : 0,
        v.sensitive ? 1 : 0,
      );
    return (stored: StoredEvent) => {
      const event = stored as StoredEvent<ExecutorEvent>;
      switch (event.type) {
        case 'PlanArtifactRecorded':
          putArtifact.run(
            event.data.runId,
            event.data.driver,
            event.data.engine ?? null,
            canonicalJson(event.data.artifact),
          );
          return;
        case 'WorkspaceVariableCreated':
          writeVariable(event.data);
          return;
        case 'WorkspaceVariableUpdated': {
          const row = getVariable.get(stored.stream);
          if (row) writeVariable({ ...toVariable(row), ...event.data });
          return;
        }
        case 'WorkspaceVariableDeleted':
          deleteVariable.run(stored.stream);
          return;
        default:
          return;
      }
    };
  },
};

/** The columns every variable row has, a workspace's or a variable set's. */
export interface VariableColumns {
  id: string;
  key: string;
  value: string;
  description: string | null;
  category: string;
  hcl: number;
  sensitive: number;
}

/** A variable's columns as the API's values (the value sealed where it is sensitive). */
export const variableFields = (r: VariableColumns) => ({
  id: r.id,
  key: r.key,
  value: JSON.parse(r.value) as string | Sealed,
  description: r.description,
  category: r.category === 'env' ? ('env' as const) : ('terraform' as const),
  hcl: r.hcl === 1,
  sensitive: r.sensitive === 1,
});

const toVariable = (r: VariableColumns & { workspace_id: string }): VariableRow => ({
  ...variableFields(r),
  workspaceId: r.workspace_id,
});

/** Queries over the executor's read models. */
export class ExecutorQueries {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
    executorProjection.setup(db);
  }

  /** A run's plan artifact: base64, sealed as it rests. */
  artifact(
    runId: string,
  ): { driver: string; engine: string | null; artifact: string | Sealed } | null {
    const row = this.#db
      .prepare<[string], { driver: string; engine: string | null; artifact: string }>(
        `SELECT driver, engine, artifact FROM ${ARTIFACTS} WHERE run_id = ?`,
      )
      .get(runId);
    return row
      ? {
          driver: row.driver,
          engine: row.engine,
          artifact: JSON.parse(row.artifact) as string | Sealed,
        }
      : null;
  }

  variables(workspaceId: string): VariableRow[] {
    return this.#db
      .prepare<[string], VariableColumns & { workspace_id: string }>(
        `SELECT * FROM ${VARIABLES} WHERE workspace_id = ? ORDER BY key, id`,
      )
      .all(workspaceId)
      .map(toVariable);
  }

  variable(id: string): VariableRow | null {
    const row = this.#db
      .prepare<[string], VariableColumns & { workspace_id: string }>(
        `SELECT * FROM ${VARIABLES} WHERE id = ?`,
      )
      .get(id);
    return row ? toVariable(row) : null;
  }
}
