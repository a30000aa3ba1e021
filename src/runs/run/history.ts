import { canonicalJson } from '../../core/canonical.js';
import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import { statements } from '../../core/sql.js';
import { RUN_EVENT_TYPES } from '../../../machines/run.machine.js';
import type { RunCommented, RunEvent } from '../events.js';

/**
 * A run's history as its `run-events` and `comments` lists show it: one row per event of the run's
 * stream, with the action's description (a comment, an error message) and, for a comment, the
 * comment itself. Nothing sealed is kept: logs, plans and states stay where they are.
 */

export const RUN_HISTORY_TABLE = 'runs_run_history';

export interface RunHistoryEntry {
  version: number;
  type: RunEvent['type'];
  createdAt: string;
  description: string | null;
}

export interface RunComment {
  data: RunCommented['data'];
  createdAt: string;
}

const TYPES = new Set<string>(RUN_EVENT_TYPES);

/** What the list shows as an event's description: the comment or message it carries. */
function describe(e: RunEvent): string | null {
  if (
    e.type === 'RunConfirmed' ||
    e.type === 'RunDiscarded' ||
    e.type === 'RunCancelRequested' ||
    e.type === 'RunForceCanceled' ||
    e.type === 'RunPolicyOverridden'
  )
    return e.data.comment;
  if (e.type === 'RunErrored') return e.data.message;
  if (e.type === 'RunCommented') return e.data.body;
  return null;
}

export const runHistoryProjection: Projection = {
  name: 'runs-run-history',
  version: 1,
  tables: [RUN_HISTORY_TABLE],
  events: [...RUN_EVENT_TYPES, 'WorkspaceDeleted'],
  setup(db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${RUN_HISTORY_TABLE} (run_id TEXT NOT NULL, version INTEGER NOT NULL,
      workspace_id TEXT NOT NULL, type TEXT NOT NULL, created_at TEXT NOT NULL, description TEXT, comment TEXT,
      PRIMARY KEY (run_id, version));
      CREATE INDEX IF NOT EXISTS runs_run_history_ws ON ${RUN_HISTORY_TABLE} (workspace_id);`);
    const workspaceOf = db.prepare<[string], { workspace_id: string }>(
      `SELECT workspace_id FROM ${RUN_HISTORY_TABLE} WHERE run_id = ? AND version = 1`,
    );
    const insert = db.prepare(`INSERT INTO ${RUN_HISTORY_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)`);
    const dropWorkspace = db.prepare(`DELETE FROM ${RUN_HISTORY_TABLE} WHERE workspace_id = ?`);
    return (event: StoredEvent) => {
      if (event.type === 'WorkspaceDeleted') {
        dropWorkspace.run((event.data as { id: string }).id);
        return;
      }
      if (!TYPES.has(event.type)) return;
      const e = event as StoredEvent<RunEvent>;
      const workspaceId =
        e.type === 'RunCreated' ? e.data.workspaceId : workspaceOf.get(e.stream)?.workspace_id;
      // A run of a deleted workspace has no history left to add to.
      if (workspaceId === undefined) return;
      insert.run(
        e.stream,
        e.version,
        workspaceId,
        e.type,
        e.time,
        describe(e),
        e.type === 'RunCommented' ? canonicalJson(e.data) : null,
      );
    };
  },
};

export class RunHistoryQueries {
  private readonly sql: ReturnType<typeof statements>;

  constructor(db: Db) {
    this.sql = statements(db);
  }

  /** Every event of a run, oldest first. */
  events(runId: string): RunHistoryEntry[] {
    return this.sql<[string], Omit<RunHistoryEntry, 'createdAt'> & { created_at: string }>(
      `SELECT version, type, created_at, description FROM ${RUN_HISTORY_TABLE} WHERE run_id = ? ORDER BY version`,
    )
      .all(runId)
      .map((r) => ({
        version: r.version,
        type: r.type,
        createdAt: r.created_at,
        description: r.description,
      }));
  }

  /** A run's comments, oldest first. */
  comments(runId: string): RunComment[] {
    return this.sql<[string], { comment: string; created_at: string }>(
      `SELECT comment, created_at FROM ${RUN_HISTORY_TABLE} WHERE run_id = ? AND comment IS NOT NULL ORDER BY version`,
    )
      .all(runId)
      .map((r) => ({
        data: JSON.parse(r.comment) as RunCommented['data'],
        createdAt: r.created_at,
      }));
  }
}
