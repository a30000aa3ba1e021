import type { Db } from '../../core/database.js';
import type { Sealed, Sealer } from '../../core/seal.js';
import { countedPage, statements } from '../../core/sql.js';
import type { RunStatus } from '../../../machines/run.machine.js';
import type { RunOperation } from '../lifecycle.js';
import type { Page } from '../jsonapi.js';
import { RUN_LOGS_TABLE, RUNS_TABLE, toRunRow, type RunRow } from './projection.js';

/** What a run list may be narrowed by; every field is optional (null = not given). */
export interface RunFilters {
  operations: RunOperation[] | null;
  statuses: readonly RunStatus[] | null;
  sources: string[] | null;
  agentPoolNames: string[] | null;
  workspaceNames: string[] | null;
  /** Inclusive lower and exclusive upper bounds on `created-at` (ISO). */
  createdFrom: string | null;
  createdBefore: string | null;
  searchUser: string | null;
  searchCommit: string | null;
  searchBasic: string | null;
}

export const NO_FILTERS: RunFilters = {
  operations: null,
  statuses: null,
  sources: null,
  agentPoolNames: null,
  workspaceNames: null,
  createdFrom: null,
  createdBefore: null,
  searchUser: null,
  searchCommit: null,
  searchBasic: null,
};

type Params = (string | number)[];

/** A condition no row meets, in SQL every store reads as a truth value. */
const NOTHING = '1 = 0';
const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** SQL conditions for the filters; an empty list of values matches nothing. */
function conditions(f: RunFilters): { where: string[]; params: Params } {
  const where: string[] = [];
  const params: Params = [];
  const oneOf = (column: string, values: readonly string[] | null) => {
    if (values === null) return;
    where.push(values.length === 0 ? NOTHING : `${column} IN (${placeholders(values.length)})`);
    params.push(...values);
  };
  // Plan-only runs are left out unless operations are asked for.
  if (f.operations === null) where.push('plan_only = 0');
  oneOf('operation', f.operations);
  oneOf('status', f.statuses);
  oneOf('source', f.sources);
  // Every run executes on the built-in (remote) runner: no agent pool matches.
  if (f.agentPoolNames !== null) where.push(NOTHING);
  if (f.createdFrom !== null) {
    where.push('created_at >= ?');
    params.push(f.createdFrom);
  }
  if (f.createdBefore !== null) {
    where.push('created_at < ?');
    params.push(f.createdBefore);
  }
  // Runs carry no version-control commit, so a commit search matches nothing.
  if (f.searchCommit !== null) where.push(NOTHING);
  else if (f.searchUser !== null) {
    where.push('created_by_name = ?');
    params.push(f.searchUser);
  } else if (f.searchBasic !== null) {
    where.push('(id = ? OR created_by_name = ? OR instr(lower(message), lower(?)) > 0)');
    params.push(f.searchBasic, f.searchBasic, f.searchBasic);
  }
  return { where, params };
}

const isDefault = (f: RunFilters): boolean =>
  f.operations === null &&
  f.statuses === null &&
  f.sources === null &&
  f.agentPoolNames === null &&
  f.createdFrom === null &&
  f.createdBefore === null &&
  f.searchUser === null &&
  f.searchCommit === null &&
  f.searchBasic === null;

/** Read access to runs. */
export class RunQueries {
  /** Statements are prepared on first use and kept (see core/sql.ts). */
  private readonly sql: ReturnType<typeof statements>;

  readonly #sealer: Sealer;

  constructor(db: Db, sealer: Sealer) {
    this.sql = statements(db);
    this.#sealer = sealer;
  }

  /** The runs `SELECT * … WHERE <rest>` gives, in the order `rest` asks. */
  #runs(rest: string, ...params: Params): RunRow[] {
    const rows = this.sql(`SELECT * FROM ${RUNS_TABLE} WHERE ${rest}`).all(...params);
    return (rows as Parameters<typeof toRunRow>[0][]).map(toRunRow);
  }

  get(id: string): RunRow | null {
    const row = this.sql(`SELECT * FROM ${RUNS_TABLE} WHERE id = ?`).get(id) as
      Parameters<typeof toRunRow>[0] | undefined;
    return row === undefined ? null : toRunRow(row);
  }

  /**
   * A workspace's runs, newest first, with the total. The default list (no filter) is a range over
   * `listed_seq`, so page 500 costs what page 1 does; filtered lists use the status/seq indexes.
   */
  listInWorkspace(
    workspaceId: string,
    f: RunFilters,
    page: Page,
  ): { rows: RunRow[]; total: number } {
    const offset = (page.number - 1) * page.size;
    if (isDefault(f)) {
      const total =
        (
          this.sql(`SELECT MAX(listed_seq) AS n FROM ${RUNS_TABLE} WHERE workspace_id = ?`).get(
            workspaceId,
          ) as { n: number | null }
        ).n ?? 0;
      const top = total - offset;
      const rows = this.#runs(
        'workspace_id = ? AND listed_seq <= ? AND listed_seq > ? ORDER BY listed_seq DESC',
        workspaceId,
        top,
        top - page.size,
      );
      return { rows, total };
    }
    const { where, params } = conditions(f);
    const { rows, total } = countedPage<Parameters<typeof toRunRow>[0]>(this.sql, {
      table: RUNS_TABLE,
      where: ['workspace_id = ?', ...where].join(' AND '),
      params: [workspaceId, ...params],
      order: 'seq DESC',
      limit: page.size,
      offset,
    });
    return { rows: rows.map(toRunRow), total };
  }

  /** An organization's runs, newest first; one extra row tells whether a next page exists. */
  listInOrganization(
    organization: string,
    workspaceIds: string[] | null,
    f: RunFilters,
    page: Page,
  ): { rows: RunRow[]; hasNext: boolean } {
    const { where, params } = conditions({ ...f, workspaceNames: null });
    const clauses = ['organization = ?', ...where];
    const all: Params = [organization, ...params];
    if (workspaceIds !== null) {
      clauses.push(
        workspaceIds.length === 0
          ? NOTHING
          : `workspace_id IN (${placeholders(workspaceIds.length)})`,
      );
      all.push(...workspaceIds);
    }
    const rows = this.#runs(
      `${clauses.join(' AND ')} ORDER BY seq DESC LIMIT ? OFFSET ?`,
      ...all,
      page.size + 1,
      (page.number - 1) * page.size,
    );
    return { rows: rows.slice(0, page.size), hasNext: rows.length > page.size };
  }

  /** Pending runs of a workspace that wait for the lock, oldest first (the FIFO queue). */
  queued(workspaceId: string, limit = Number.MAX_SAFE_INTEGER): RunRow[] {
    return this.#runs(
      "workspace_id = ? AND status = 'pending' AND plan_only = 0 AND save_plan = 0 ORDER BY seq LIMIT ?",
      workspaceId,
      limit,
    );
  }

  /** Runs that start without the lock (plan-only, and saved plans' planning), oldest first. */
  bypassing(workspaceId: string): RunRow[] {
    const select = (planOnly: number, savePlan: number) =>
      this.#runs(
        "workspace_id = ? AND status = 'pending' AND plan_only = ? AND save_plan = ? ORDER BY seq",
        workspaceId,
        planOnly,
        savePlan,
      );
    return [...select(1, 0), ...select(0, 1), ...select(1, 1)].sort((a, b) => a.seq - b.seq);
  }

  /** Confirmed saved-plan runs waiting for the lock to apply, oldest first. */
  savedPlansToApply(workspaceId: string, limit = Number.MAX_SAFE_INTEGER): RunRow[] {
    return this.#runs(
      "workspace_id = ? AND status = 'confirmed' AND plan_only = 0 AND save_plan = 1 ORDER BY seq LIMIT ?",
      workspaceId,
      limit,
    );
  }

  /** An organization's runs waiting for the executor (`plan_queued`, `apply_queued`), oldest first. */
  organizationQueue(organization: string): RunRow[] {
    return this.#runs(
      "organization = ? AND status IN ('plan_queued', 'apply_queued') ORDER BY seq",
      organization,
    );
  }

  /** How many of an organization's runs are planning or applying now. */
  runningIn(organization: string): number {
    return (
      this.sql(
        `SELECT COUNT(*) AS n FROM ${RUNS_TABLE} WHERE organization = ? AND status IN ('planning', 'applying')`,
      ).get(organization) as { n: number }
    ).n;
  }

  /**
   * The log text of a phase, the plan's JSON output and its redacted form (null when the plan was
   * recorded before Keel kept one), unsealed.
   */
  log(
    runId: string,
    phase: 'plan' | 'apply',
  ): { log: string; jsonOutput: unknown; jsonOutputRedacted: unknown } | null {
    const row = this.sql(
      `SELECT log, json_output, json_output_redacted FROM ${RUN_LOGS_TABLE} WHERE run_id = ? AND phase = ?`,
    ).get(runId, phase) as
      { log: string; json_output: string | null; json_output_redacted: string | null } | undefined;
    if (row === undefined) return null;
    const json = (text: string | null) => (text === null ? null : (JSON.parse(text) as unknown));
    return {
      log: this.#sealer.open(json(row.log) as string | Sealed),
      jsonOutput: this.#sealer.openJson(json(row.json_output)),
      jsonOutputRedacted: json(row.json_output_redacted),
    };
  }
}
