import { canonicalJson } from '../../core/canonical.js';
import type { Decider } from '../../core/command-handler.js';
import type { Db } from '../../core/database.js';
import { ConflictError } from '../../core/errors.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import type { Sealed } from '../../core/seal.js';
import { countedPage, statements } from '../../core/sql.js';
import type {
  RunsContextEvent,
  StateVersionCreated,
  StateVersionEvent,
  StateVersionUploadRequested,
} from '../events.js';

/**
 * State versions: one row per recorded state, and its document as the event holds it (sealed; in
 * clear only in events older than sealing) in a table of its own, so lists never read documents.
 */

export const STATE_VERSIONS_TABLE = 'runs_state_versions';
/** State versions created but not uploaded yet. */
export const STATE_UPLOADS_TABLE = 'runs_state_uploads';
/** The state documents, sealed as in the log. */
export const STATE_DOCUMENTS_TABLE = 'runs_state_documents';

export type PendingStateVersion = StateVersionUploadRequested['data'] & { createdAt: string };

export interface StateVersionRow {
  id: string;
  seq: number;
  workspaceId: string;
  runId: string | null;
  serial: number;
  lineage: string;
  md5: string;
  size: number;
  resources: number;
  engineVersion: string | null;
  createdAt: string;
}

export const stateVersionProjection: Projection = {
  name: 'runs-state-versions',
  version: 3,
  tables: [STATE_VERSIONS_TABLE, STATE_UPLOADS_TABLE, STATE_DOCUMENTS_TABLE],
  events: [
    'StateVersionUploadRequested',
    'StateVersionCreated',
    'WorkspaceDeleted',
  ] satisfies RunsContextEvent['type'][],
  setup(db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${STATE_VERSIONS_TABLE} (id TEXT PRIMARY KEY, seq INTEGER NOT NULL,
      workspace_id TEXT NOT NULL, run_id TEXT, serial INTEGER NOT NULL, lineage TEXT NOT NULL, md5 TEXT NOT NULL,
      size INTEGER NOT NULL, resources INTEGER NOT NULL, engine_version TEXT, created_at TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS runs_state_versions_ws ON ${STATE_VERSIONS_TABLE} (workspace_id, seq);
      CREATE INDEX IF NOT EXISTS runs_state_versions_run ON ${STATE_VERSIONS_TABLE} (run_id, seq);
      CREATE TABLE IF NOT EXISTS ${STATE_UPLOADS_TABLE} (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL,
        data TEXT NOT NULL, created_at TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ${STATE_DOCUMENTS_TABLE} (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL,
        state TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS runs_state_documents_ws ON ${STATE_DOCUMENTS_TABLE} (workspace_id);`);
    const pending = db.prepare(`INSERT INTO ${STATE_UPLOADS_TABLE} VALUES (?, ?, ?, ?)`);
    const uploaded = db.prepare(`DELETE FROM ${STATE_UPLOADS_TABLE} WHERE id = ?`);
    const dropPending = db.prepare(`DELETE FROM ${STATE_UPLOADS_TABLE} WHERE workspace_id = ?`);
    const insert = db.prepare(
      `INSERT INTO ${STATE_VERSIONS_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const drop = db.prepare(`DELETE FROM ${STATE_VERSIONS_TABLE} WHERE workspace_id = ?`);
    const document = db.prepare(`INSERT INTO ${STATE_DOCUMENTS_TABLE} VALUES (?, ?, ?)`);
    const dropDocuments = db.prepare(`DELETE FROM ${STATE_DOCUMENTS_TABLE} WHERE workspace_id = ?`);
    return (event: StoredEvent) => {
      if (event.type === 'WorkspaceDeleted') {
        drop.run((event.data as { id: string }).id);
        dropPending.run((event.data as { id: string }).id);
        dropDocuments.run((event.data as { id: string }).id);
      }
      if (event.type === 'StateVersionUploadRequested') {
        const d = (event as StoredEvent<StateVersionUploadRequested>).data;
        pending.run(d.id, d.workspaceId, JSON.stringify(d), event.time);
        return;
      }
      if (event.type !== 'StateVersionCreated') return;
      uploaded.run((event.data as { id: string }).id);
      const d = (event as StoredEvent<StateVersionCreated>).data;
      insert.run(
        d.id,
        event.position,
        d.workspaceId,
        d.runId,
        d.serial,
        d.lineage,
        d.md5,
        d.size ?? Buffer.byteLength(d.state as string),
        d.resources,
        d.engineVersion,
        event.time,
      );
      document.run(d.id, d.workspaceId, canonicalJson(d.state));
    };
  },
};

interface DbRow {
  id: string;
  seq: number;
  workspace_id: string;
  run_id: string | null;
  serial: number;
  lineage: string;
  md5: string;
  size: number;
  resources: number;
  engine_version: string | null;
  created_at: string;
}

const toRow = (r: DbRow): StateVersionRow => ({
  id: r.id,
  seq: r.seq,
  workspaceId: r.workspace_id,
  runId: r.run_id,
  serial: r.serial,
  lineage: r.lineage,
  md5: r.md5,
  size: r.size,
  resources: r.resources,
  engineVersion: r.engine_version,
  createdAt: r.created_at,
});

export class StateVersionQueries {
  private readonly sql: ReturnType<typeof statements>;

  constructor(db: Db) {
    this.sql = statements(db);
  }

  get(id: string): StateVersionRow | null {
    const r = this.sql(`SELECT * FROM ${STATE_VERSIONS_TABLE} WHERE id = ?`).get(id) as
      DbRow | undefined;
    return r === undefined ? null : toRow(r);
  }

  /** A state version created and waiting for its upload. */
  pending(id: string): PendingStateVersion | null {
    const r = this.sql(`SELECT data, created_at FROM ${STATE_UPLOADS_TABLE} WHERE id = ?`).get(
      id,
    ) as { data: string; created_at: string } | undefined;
    return r === undefined
      ? null
      : {
          ...(JSON.parse(r.data) as StateVersionUploadRequested['data']),
          createdAt: r.created_at,
        };
  }

  /** A recorded state's document as the log holds it (sealed), if the version exists. */
  document(id: string): string | Sealed | null {
    const r = this.sql(`SELECT state FROM ${STATE_DOCUMENTS_TABLE} WHERE id = ?`).get(id) as
      { state: string } | undefined;
    return r === undefined ? null : (JSON.parse(r.state) as string | Sealed);
  }

  /** The newest state version of a workspace. */
  current(workspaceId: string): StateVersionRow | null {
    const r = this.sql(
      `SELECT * FROM ${STATE_VERSIONS_TABLE} WHERE workspace_id = ? ORDER BY seq DESC LIMIT 1`,
    ).get(workspaceId) as DbRow | undefined;
    return r === undefined ? null : toRow(r);
  }

  /** The state versions a run recorded (its apply's), oldest first. */
  ofRun(runId: string): StateVersionRow[] {
    const rows = this.sql(
      `SELECT * FROM ${STATE_VERSIONS_TABLE} WHERE run_id = ? ORDER BY seq`,
    ).all(runId) as DbRow[];
    return rows.map(toRow);
  }

  list(
    workspaceId: string,
    limit: number,
    offset: number,
  ): { rows: StateVersionRow[]; total: number } {
    const { rows, total } = countedPage<DbRow>(this.sql, {
      table: STATE_VERSIONS_TABLE,
      where: 'workspace_id = ?',
      params: [workspaceId],
      order: 'seq DESC',
      limit,
      offset,
    });
    return { rows: rows.map(toRow), total };
  }
}

/**
 * A state version stream: an optional upload request, then the recorded state. Serial and lineage
 * checks against the workspace are the caller's.
 */
export interface StateVersionState {
  pending: boolean;
  exists: boolean;
}

export const stateVersionDecider: Decider<StateVersionState, StateVersionEvent> = {
  initialState: () => ({ pending: false, exists: false }),
  evolve: (s, e) =>
    e.type === 'StateVersionUploadRequested'
      ? { ...s, pending: true }
      : { pending: false, exists: true },
};

export const createStateVersion =
  (data: StateVersionCreated['data']) =>
  (s: StateVersionState): StateVersionCreated[] => {
    if (s.exists) throw new ConflictError(`state version ${data.id} already exists`);
    return [{ type: 'StateVersionCreated', data }];
  };

export const requestStateUpload =
  (data: StateVersionUploadRequested['data']) =>
  (s: StateVersionState): StateVersionUploadRequested[] => {
    if (s.exists || s.pending) throw new ConflictError(`state version ${data.id} already exists`);
    return [{ type: 'StateVersionUploadRequested', data }];
  };
