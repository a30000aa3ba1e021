import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import type { Sealed } from '../../core/seal.js';
import type { ExecutorEvent } from './events.js';
import type { StateV4 } from './types.js';

/**
 * Read models of the executor: plan artifacts by run, state versions by workspace, and workspace
 * variables. Sealed values stay sealed here; they are unsealed only to run a phase.
 */

const ARTIFACTS = 'exec_plan_artifacts';
const STATES = 'exec_state_versions';
const VARIABLES = 'exec_workspace_variables';

export interface StateVersionRow {
  id: string;
  workspaceId: string;
  runId: string | null;
  serial: number;
  lineage: string;
  md5: string;
  createdAt: string;
  state: StateV4;
}

export interface VariableRow {
  id: string;
  workspaceId: string;
  key: string;
  value: string | Sealed;
  description: string | null;
  category: 'terraform' | 'env';
  hcl: boolean;
  sensitive: boolean;
}

export const executorProjection: Projection = {
  name: 'executor',
  version: 1,
  tables: [ARTIFACTS, STATES, VARIABLES],
  setup(db: Db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${ARTIFACTS} (run_id TEXT PRIMARY KEY, driver TEXT NOT NULL, artifact TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ${STATES} (
        id TEXT PRIMARY KEY, seq INTEGER NOT NULL, workspace_id TEXT NOT NULL, run_id TEXT,
        serial INTEGER NOT NULL, lineage TEXT NOT NULL, md5 TEXT NOT NULL, created_at TEXT NOT NULL, state TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS ${STATES}_ws ON ${STATES} (workspace_id, seq);
      CREATE TABLE IF NOT EXISTS ${VARIABLES} (
        id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
        description TEXT, category TEXT NOT NULL, hcl INTEGER NOT NULL, sensitive INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS ${VARIABLES}_ws ON ${VARIABLES} (workspace_id, key);
    `);
    const putArtifact = db.prepare(
      `INSERT OR REPLACE INTO ${ARTIFACTS} (run_id, driver, artifact) VALUES (?, ?, ?)`,
    );
    const putState = db.prepare(
      `INSERT OR REPLACE INTO ${STATES} (id, seq, workspace_id, run_id, serial, lineage, md5, created_at, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const putVariable = db.prepare(
      `INSERT OR REPLACE INTO ${VARIABLES} (id, workspace_id, key, value, description, category, hcl, sensitive) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const getVariable = db.prepare<[string], VariableDbRow>(
      `SELECT * FROM ${VARIABLES} WHERE id = ?`,
    );
    const deleteVariable = db.prepare(`DELETE FROM ${VARIABLES} WHERE id = ?`);
    const writeVariable = (v: VariableRow) =>
      putVariable.run(
        v.id,
        v.workspaceId,
        v.key,
        JSON.stringify(v.value),
        v.description,
        v.category,
        v.hcl ? 1 : 0,
        v.sensitive ? 1 : 0,
      );
    return (stored: StoredEvent) => {
      const event = stored as StoredEvent<ExecutorEvent>;
      switch (event.type) {
        case 'PlanArtifactRecorded':
          putArtifact.run(event.data.runId, event.data.driver, event.data.artifact);
          return;
        case 'StateVersionCreated': {
          const d = event.data;
          putState.run(
            d.id,
            stored.position,
            d.workspaceId,
            d.runId,
            d.serial,
            d.lineage,
            d.md5,
            stored.time,
            JSON.stringify(d.state),
          );
          return;
        }
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

interface VariableDbRow {
  id: string;
  workspace_id: string;
  key: string;
  value: string;
  description: string | null;
  category: string;
  hcl: number;
  sensitive: number;
}

const toVariable = (r: VariableDbRow): VariableRow => ({
  id: r.id,
  workspaceId: r.workspace_id,
  key: r.key,
  value: JSON.parse(r.value) as string | Sealed,
  description: r.description,
  category: r.category === 'env' ? 'env' : 'terraform',
  hcl: r.hcl === 1,
  sensitive: r.sensitive === 1,
});

interface StateDbRow {
  id: string;
  workspace_id: string;
  run_id: string | null;
  serial: number;
  lineage: string;
  md5: string;
  created_at: string;
  state: string;
}

const toState = (r: StateDbRow): StateVersionRow => ({
  id: r.id,
  workspaceId: r.workspace_id,
  runId: r.run_id,
  serial: r.serial,
  lineage: r.lineage,
  md5: r.md5,
  createdAt: r.created_at,
  state: JSON.parse(r.state) as StateV4,
});

/** Queries over the executor's read models. */
export class ExecutorQueries {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
    executorProjection.setup(db);
  }

  artifact(runId: string): { driver: string; artifact: Buffer } | null {
    const row = this.#db
      .prepare<[string], { driver: string; artifact: string }>(
        `SELECT driver, artifact FROM ${ARTIFACTS} WHERE run_id = ?`,
      )
      .get(runId);
    return row ? { driver: row.driver, artifact: Buffer.from(row.artifact, 'base64') } : null;
  }

  currentState(workspaceId: string): StateVersionRow | null {
    const row = this.#db
      .prepare<[string], StateDbRow>(
        `SELECT * FROM ${STATES} WHERE workspace_id = ? ORDER BY seq DESC LIMIT 1`,
      )
      .get(workspaceId);
    return row ? toState(row) : null;
  }

  stateVersion(id: string): StateVersionRow | null {
    const row = this.#db
      .prepare<[string], StateDbRow>(`SELECT * FROM ${STATES} WHERE id = ?`)
      .get(id);
    return row ? toState(row) : null;
  }

  stateVersions(
    workspaceId: string,
    limit: number,
    offset: number,
  ): { rows: StateVersionRow[]; total: number } {
    const rows = this.#db
      .prepare<[string, number, number], StateDbRow>(
        `SELECT * FROM ${STATES} WHERE workspace_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?`,
      )
      .all(workspaceId, limit, offset);
    const total =
      this.#db
        .prepare<[string], { n: number }>(
          `SELECT COUNT(*) AS n FROM ${STATES} WHERE workspace_id = ?`,
        )
        .get(workspaceId)?.n ?? 0;
    return { rows: rows.map(toState), total };
  }

  variables(workspaceId: string): VariableRow[] {
    return this.#db
      .prepare<[string], VariableDbRow>(
        `SELECT * FROM ${VARIABLES} WHERE workspace_id = ? ORDER BY key, id`,
      )
      .all(workspaceId)
      .map(toVariable);
  }

  variable(id: string): VariableRow | null {
    const row = this.#db
      .prepare<[string], VariableDbRow>(`SELECT * FROM ${VARIABLES} WHERE id = ?`)
      .get(id);
    return row ? toVariable(row) : null;
  }
}
