import { canonicalJson } from '../../core/canonical.js';
import type { Db } from '../../core/database.js';
import { countedPage, statements } from '../../core/sql.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import type { ConfigurationVersionStatus } from '../../../machines/configuration-version.machine.js';
import type { ConfigurationVersionEvent, Requester } from '../events.js';

/**
 * The configuration versions read model, and each uploaded archive in a table of its own (lists
 * never read archives).
 */

export const CVS_TABLE = 'runs_configuration_versions';
export const CV_ARCHIVES_TABLE = 'runs_configuration_archives';

export interface ConfigurationVersionRow {
  id: string;
  seq: number;
  workspaceId: string;
  organization: string;
  status: ConfigurationVersionStatus;
  autoQueueRuns: boolean;
  speculative: boolean;
  provisional: boolean;
  source: string;
  errorMessage: string | null;
  size: number | null;
  statusTimestamps: Record<string, string>;
  createdAt: string;
  /** Who created it: runs its upload queues are theirs. */
  createdBy: Requester | null;
}

interface DbRow {
  id: string;
  seq: number;
  workspace_id: string;
  organization: string;
  status: ConfigurationVersionStatus;
  auto_queue_runs: number;
  speculative: number;
  provisional: number;
  source: string;
  error_message: string | null;
  size: number | null;
  status_timestamps: string;
  created_at: string;
  created_by: string | null;
}

const toRow = (r: DbRow): ConfigurationVersionRow => ({
  id: r.id,
  seq: r.seq,
  workspaceId: r.workspace_id,
  organization: r.organization,
  status: r.status,
  autoQueueRuns: r.auto_queue_runs === 1,
  speculative: r.speculative === 1,
  provisional: r.provisional === 1,
  source: r.source,
  errorMessage: r.error_message,
  size: r.size,
  statusTimestamps: JSON.parse(r.status_timestamps) as Record<string, string>,
  createdAt: r.created_at,
  createdBy: r.created_by === null ? null : (JSON.parse(r.created_by) as Requester),
});

const TYPES = new Set([
  'ConfigurationVersionCreated',
  'ConfigurationVersionUploaded',
  'ConfigurationVersionErrored',
  'ConfigurationVersionArchived',
  'WorkspaceDeleted',
]);

export const configurationVersionProjection: Projection = {
  name: 'runs-configuration-versions',
  version: 2,
  tables: [CVS_TABLE, CV_ARCHIVES_TABLE],
  events: [...TYPES],
  setup(db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${CVS_TABLE} (
      id TEXT PRIMARY KEY, seq INTEGER NOT NULL, workspace_id TEXT NOT NULL, organization TEXT NOT NULL,
      status TEXT NOT NULL, auto_queue_runs INTEGER NOT NULL, speculative INTEGER NOT NULL, provisional INTEGER NOT NULL,
      source TEXT NOT NULL, error_message TEXT, size INTEGER, status_timestamps TEXT NOT NULL, created_at TEXT NOT NULL,
      created_by TEXT);
      CREATE INDEX IF NOT EXISTS runs_cvs_ws ON ${CVS_TABLE} (workspace_id, seq);
      CREATE TABLE IF NOT EXISTS ${CV_ARCHIVES_TABLE} (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL,
        archive TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS runs_cv_archives_ws ON ${CV_ARCHIVES_TABLE} (workspace_id);`);
    const s = {
      insert:
        db.prepare(`INSERT INTO ${CVS_TABLE} (id, seq, workspace_id, organization, status, auto_queue_runs, speculative,
        provisional, source, status_timestamps, created_at, created_by)
        VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, '{}', ?, ?)`),
      status:
        db.prepare(`UPDATE ${CVS_TABLE} SET status = @status, error_message = COALESCE(@error, error_message),
        size = COALESCE(@size, size), status_timestamps = json_set(status_timestamps, '$.' || @key, @at) WHERE id = @id`),
      dropWorkspace: db.prepare(`DELETE FROM ${CVS_TABLE} WHERE workspace_id = ?`),
      archive: db.prepare(`INSERT INTO ${CV_ARCHIVES_TABLE} (id, workspace_id, archive)
        SELECT id, workspace_id, ? FROM ${CVS_TABLE} WHERE id = ?`),
      dropArchives: db.prepare(`DELETE FROM ${CV_ARCHIVES_TABLE} WHERE workspace_id = ?`),
    };
    return (event: StoredEvent) => {
      if (!TYPES.has(event.type)) return;
      if (event.type === 'WorkspaceDeleted') {
        s.dropWorkspace.run((event.data as { id: string }).id);
        s.dropArchives.run((event.data as { id: string }).id);
        return;
      }
      const e = event as StoredEvent<ConfigurationVersionEvent>;
      const move = (
        status: ConfigurationVersionStatus,
        extra: { error?: string; size?: number } = {},
      ) =>
        s.status.run({
          id: e.stream,
          status,
          key: `"${status}-at"`,
          at: e.time,
          error: extra.error ?? null,
          size: extra.size ?? null,
        });
      switch (e.type) {
        case 'ConfigurationVersionCreated': {
          const d = e.data;
          s.insert.run(
            d.id,
            e.position,
            d.workspaceId,
            d.organization,
            d.autoQueueRuns ? 1 : 0,
            d.speculative ? 1 : 0,
            d.provisional ? 1 : 0,
            d.source,
            e.time,
            d.createdBy === null ? null : canonicalJson(d.createdBy),
          );
          return;
        }
        case 'ConfigurationVersionUploaded':
          move('uploaded', { size: e.data.size });
          s.archive.run(e.data.archive, e.stream);
          return;
        case 'ConfigurationVersionErrored':
          move('errored', { error: e.data.message });
          return;
        case 'ConfigurationVersionArchived':
          move('archived');
          return;
        default: {
          const _never: never = e;
          return _never;
        }
      }
    };
  },
};

/** Read access to configuration versions. */
export class ConfigurationVersionQueries {
  /** Statements are prepared on first use and kept (see core/sql.ts). */
  private readonly sql: ReturnType<typeof statements>;

  constructor(db: Db) {
    this.sql = statements(db);
  }

  get(id: string): ConfigurationVersionRow | null {
    const r = this.sql(`SELECT * FROM ${CVS_TABLE} WHERE id = ?`).get(id) as DbRow | undefined;
    return r === undefined ? null : toRow(r);
  }

  /** The uploaded archive (a gzipped tarball), if one was uploaded. */
  archive(id: string): Buffer | null {
    const r = this.sql(`SELECT archive FROM ${CV_ARCHIVES_TABLE} WHERE id = ?`).get(id) as
      { archive: string } | undefined;
    return r === undefined ? null : Buffer.from(r.archive, 'base64');
  }

  list(
    workspaceId: string,
    limit: number,
    offset: number,
  ): { rows: ConfigurationVersionRow[]; total: number } {
    const { rows, total } = countedPage<DbRow>(this.sql, {
      table: CVS_TABLE,
      where: 'workspace_id = ?',
      params: [workspaceId],
      order: 'seq DESC',
      limit,
      offset,
    });
    return { rows: rows.map(toRow), total };
  }
}
