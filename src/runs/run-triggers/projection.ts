import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import { statements } from '../../core/sql.js';
import type { WorkspaceDeleted } from '../events.js';
import type { RunTriggerEvent } from './events.js';

/** Run triggers: which workspace follows which. */

const TABLE = 'runs_run_triggers';

export interface RunTriggerRow {
  id: string;
  organization: string;
  /** The follower: the workspace whose runs the trigger queues. */
  workspaceId: string;
  /** The source: the workspace whose applies trigger them. */
  sourceableId: string;
  createdAt: string;
}

interface DbRow {
  id: string;
  organization: string;
  workspace_id: string;
  sourceable_id: string;
  created_at: string;
}
const toRow = (r: DbRow): RunTriggerRow => ({
  id: r.id,
  organization: r.organization,
  workspaceId: r.workspace_id,
  sourceableId: r.sourceable_id,
  createdAt: r.created_at,
});

export const runTriggerProjection: Projection = {
  name: 'runs-run-triggers',
  version: 1,
  tables: [TABLE],
  events: ['RunTriggerCreated', 'RunTriggerDeleted', 'WorkspaceDeleted'] satisfies (
    RunTriggerEvent | WorkspaceDeleted
  )['type'][],
  setup(db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (id TEXT PRIMARY KEY, organization TEXT NOT NULL,
      workspace_id TEXT NOT NULL, sourceable_id TEXT NOT NULL, created_at TEXT NOT NULL,
      UNIQUE (workspace_id, sourceable_id))`);
    const insert = db.prepare(
      `INSERT INTO ${TABLE} (id, organization, workspace_id, sourceable_id, created_at) VALUES (?, ?, ?, ?, ?)`,
    );
    const remove = db.prepare(`DELETE FROM ${TABLE} WHERE id = ?`);
    const workspaceGone = db.prepare(
      `DELETE FROM ${TABLE} WHERE workspace_id = ? OR sourceable_id = ?`,
    );
    return (event: StoredEvent) => {
      if (event.type === 'WorkspaceDeleted') {
        const { id } = (event as StoredEvent<WorkspaceDeleted>).data;
        workspaceGone.run(id, id);
        return;
      }
      if (event.type !== 'RunTriggerCreated' && event.type !== 'RunTriggerDeleted') return;
      const e = event as StoredEvent<RunTriggerEvent>;
      switch (e.type) {
        case 'RunTriggerCreated':
          insert.run(
            e.data.id,
            e.data.organization,
            e.data.workspaceId,
            e.data.sourceableId,
            e.time,
          );
          return;
        case 'RunTriggerDeleted':
          remove.run(e.data.id);
          return;
        default: {
          const _never: never = e;
          return _never;
        }
      }
    };
  },
};

/** Read access to run triggers. */
export class RunTriggerQueries {
  /** Statements are prepared on first use and kept (see core/sql.ts). */
  private readonly sql: ReturnType<typeof statements>;

  constructor(db: Db) {
    this.sql = statements(db);
  }

  get(id: string): RunTriggerRow | null {
    const r = this.sql(`SELECT * FROM ${TABLE} WHERE id = ?`).get(id) as DbRow | undefined;
    return r === undefined ? null : toRow(r);
  }

  /** Triggers whose follower is the workspace (`inbound`). */
  inbound(workspaceId: string): RunTriggerRow[] {
    return (
      this.sql(`SELECT * FROM ${TABLE} WHERE workspace_id = ? ORDER BY created_at, id`).all(
        workspaceId,
      ) as DbRow[]
    ).map(toRow);
  }

  /** Triggers whose source is the workspace (`outbound`): its followers. */
  outbound(workspaceId: string): RunTriggerRow[] {
    return (
      this.sql(`SELECT * FROM ${TABLE} WHERE sourceable_id = ? ORDER BY created_at, id`).all(
        workspaceId,
      ) as DbRow[]
    ).map(toRow);
  }

  /** Whether `to` follows `from`, directly or through other workspaces. */
  reaches(from: string, to: string): boolean {
    const seen = new Set<string>([from]);
    const queue = [from];
    while (queue.length > 0) {
      for (const t of this.outbound(queue.shift()!)) {
        if (t.workspaceId === to) return true;
        if (!seen.has(t.workspaceId)) {
          seen.add(t.workspaceId);
          queue.push(t.workspaceId);
        }
      }
    }
    return false;
  }

  /** Whether a run in the workspace was already queued by this source run (a redelivered event). */
  queuedBy(workspaceId: string, runId: string): boolean {
    return (
      this.sql(
        `SELECT 1 FROM runs_runs WHERE workspace_id = ? AND json_extract(attrs, '$.triggeredBy.runId') = ? LIMIT 1`,
      ).get(workspaceId, runId) !== undefined
    );
  }
}
