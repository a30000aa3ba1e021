import { canonicalJson } from '../../core/canonical.js';
import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import type { Sealed } from '../../core/seal.js';
import { RUN_EVENT_TYPES, type RunStatus } from '../../../machines/run.machine.js';
import type { ResourceCounts } from '../../../machines/run.machine.js';
import type { RunCreated, RunEvent } from '../events.js';
import { operationOf, runStateAfter, timestampKey, type RunState } from '../lifecycle.js';

/**
 * The runs read model. One row per run, holding the run's state in named columns (`RunState`:
 * status, flags, the cancel's times), from which `actions.*` and `permissions.*` are derived at
 * read time, the creation attributes, and the plan and apply phases. It holds no machine snapshot:
 * decisions fold the run's stream through the machine inside the command handler.
 * `seq` (the log position of `RunCreated`) orders runs; `listed_seq` numbers a workspace's
 * non-plan-only runs 1, 2, 3… so its default list is a range scan that costs the page only.
 * JSON columns are canonical (sorted keys) wherever event data flows in, so a replay, which reads
 * events back from the log, writes byte-identical rows.
 */

export const RUNS_TABLE = 'runs_runs';
export const RUN_LOGS_TABLE = 'runs_run_logs';

export type PhaseStatus =
  'pending' | 'queued' | 'running' | 'finished' | 'errored' | 'canceled' | 'unreachable';

/** A plan or an apply, as its resource shows it. */
export interface Phase {
  status: PhaseStatus;
  timestamps: Record<string, string>;
  counts: ResourceCounts | null;
  hasChanges: boolean | null;
}

export interface RunRow extends RunState {
  id: string;
  seq: number;
  workspaceId: string;
  organization: string;
  attrs: RunCreated['data'];
  createdAt: string;
  createdByName: string | null;
  statusTimestamps: Record<string, string>;
  plan: Phase;
  apply: Phase;
}

interface DbRow {
  id: string;
  seq: number;
  workspace_id: string;
  organization: string;
  status: string;
  plan_only: number;
  save_plan: number;
  auto_apply: number;
  allow_empty_apply: number;
  has_changes: number;
  paused_for_confirmation: number;
  cancel_requested_at: string | null;
  force_cancel_available_at: string | null;
  attrs: string;
  created_at: string;
  created_by_name: string | null;
  status_timestamps: string;
  plan: string;
  apply: string;
}

export const toRunRow = (r: DbRow): RunRow => ({
  id: r.id,
  seq: r.seq,
  workspaceId: r.workspace_id,
  organization: r.organization,
  status: r.status as RunStatus,
  planOnly: r.plan_only === 1,
  savePlan: r.save_plan === 1,
  autoApply: r.auto_apply === 1,
  allowEmptyApply: r.allow_empty_apply === 1,
  hasChanges: r.has_changes === 1,
  pausedForConfirmation: r.paused_for_confirmation === 1,
  cancelRequestedAt: r.cancel_requested_at,
  forceCancelAvailableAt: r.force_cancel_available_at,
  attrs: JSON.parse(r.attrs) as RunCreated['data'],
  createdAt: r.created_at,
  createdByName: r.created_by_name,
  statusTimestamps: JSON.parse(r.status_timestamps) as Record<string, string>,
  plan: JSON.parse(r.plan) as Phase,
  apply: JSON.parse(r.apply) as Phase,
});

/** The state columns an event may change, as the statements bind them. */
const changingColumns = (s: RunState) => ({
  status: s.status,
  has_changes: s.hasChanges ? 1 : 0,
  paused_for_confirmation: s.pausedForConfirmation ? 1 : 0,
  cancel_requested_at: s.cancelRequestedAt,
  force_cancel_available_at: s.forceCancelAvailableAt,
});

/** Every state column: the creation flags, which never change, too. */
const stateColumns = (s: RunState) => ({
  plan_only: s.planOnly ? 1 : 0,
  save_plan: s.savePlan ? 1 : 0,
  auto_apply: s.autoApply ? 1 : 0,
  allow_empty_apply: s.allowEmptyApply ? 1 : 0,
  ...changingColumns(s),
});

const newPhase = (): Phase => ({
  status: 'pending',
  timestamps: {},
  counts: null,
  hasChanges: null,
});

const RUN_EVENTS = new Set<string>(RUN_EVENT_TYPES);

/** How a run event moves its plan and apply phases (the run's status before the event decides which). */
function movePhases(
  row: RunRow,
  event: StoredEvent<RunEvent>,
  before: RunStatus,
  after: RunStatus,
): void {
  const at = event.time;
  const set = (phase: Phase, status: PhaseStatus, key: string) => {
    phase.status = status;
    phase.timestamps[key] = at;
  };
  const inPlan = ['plan_queued', 'planning'].includes(before);
  const inApply = ['apply_queued', 'applying'].includes(before);
  // Only phase events matter here (the switch lint wants every type; an if-chain says "some").
  const e = event;
  if (e.type === 'RunPlanQueued') set(row.plan, 'queued', 'queued-at');
  else if (e.type === 'RunPlanStarted') set(row.plan, 'running', 'started-at');
  else if (e.type === 'RunPlanFinished') {
    set(row.plan, 'finished', 'finished-at');
    row.plan.counts = e.data.counts;
    row.plan.hasChanges = e.data.hasChanges;
  } else if (e.type === 'RunApplyQueued') set(row.apply, 'queued', 'queued-at');
  else if (e.type === 'RunApplyStarted') set(row.apply, 'running', 'started-at');
  else if (e.type === 'RunApplyFinished') {
    set(row.apply, 'finished', 'finished-at');
    row.apply.counts = e.data.counts;
  } else if (e.type === 'RunErrored' || e.type === 'RunCanceled' || e.type === 'RunForceCanceled') {
    const status: PhaseStatus = e.type === 'RunErrored' ? 'errored' : 'canceled';
    const key = e.type === 'RunForceCanceled' ? 'force-canceled-at' : `${status}-at`;
    if (inPlan) set(row.plan, status, key);
    if (inApply) set(row.apply, status, key);
  }
  // A run that completes without applying leaves its unfinished phases unreachable.
  if (
    [
      'planned_and_finished',
      'discarded',
      'errored',
      'canceled',
      'force_canceled',
      'policy_soft_failed',
    ].includes(after)
  ) {
    if (row.plan.status === 'pending' || row.plan.status === 'queued')
      row.plan.status = 'unreachable';
    if (row.apply.status === 'pending' || row.apply.status === 'queued')
      row.apply.status = 'unreachable';
  }
}

/** The projection. It folds each run event into the row's named state with `runStateAfter`. */
export const runProjection: Projection = {
  name: 'runs-runs',
  // 4: named state columns in place of the machine's context (rebuilt from the log on start).
  version: 4,
  tables: [RUNS_TABLE, RUN_LOGS_TABLE],
  events: [...RUN_EVENT_TYPES, 'WorkspaceDeleted'],
  setup(db: Db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${RUNS_TABLE} (
        id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, workspace_id TEXT NOT NULL, organization TEXT NOT NULL,
        listed_seq INTEGER, status TEXT NOT NULL, operation TEXT NOT NULL, source TEXT NOT NULL,
        plan_only INTEGER NOT NULL, save_plan INTEGER NOT NULL, auto_apply INTEGER NOT NULL,
        allow_empty_apply INTEGER NOT NULL, has_changes INTEGER NOT NULL, paused_for_confirmation INTEGER NOT NULL,
        cancel_requested_at TEXT, force_cancel_available_at TEXT, message TEXT NOT NULL, created_at TEXT NOT NULL,
        created_by_name TEXT, attrs TEXT NOT NULL, status_timestamps TEXT NOT NULL,
        plan TEXT NOT NULL, apply TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS runs_runs_ws ON ${RUNS_TABLE} (workspace_id, seq);
      CREATE UNIQUE INDEX IF NOT EXISTS runs_runs_ws_listed ON ${RUNS_TABLE} (workspace_id, listed_seq);
      CREATE INDEX IF NOT EXISTS runs_runs_org ON ${RUNS_TABLE} (organization, seq);
      -- the queue's lookups (oldest pending run that waits for the lock, runs that bypass it) are range scans
      CREATE INDEX IF NOT EXISTS runs_runs_queue ON ${RUNS_TABLE} (workspace_id, status, plan_only, save_plan, seq);
      CREATE TABLE IF NOT EXISTS ${RUN_LOGS_TABLE} (
        run_id TEXT NOT NULL, phase TEXT NOT NULL, log TEXT NOT NULL, json_output TEXT,
        json_output_redacted TEXT, PRIMARY KEY (run_id, phase));
    `);
    const s = {
      get: db.prepare<[string], DbRow>(`SELECT * FROM ${RUNS_TABLE} WHERE id = ?`),
      // The last number through its index, whatever plan PostgreSQL keeps: MAX(listed_seq),
      // planned while the table was small, was kept as a read of every run of the workspace.
      lastListed: db
        .prepare<[string], number>(
          `SELECT listed_seq FROM ${RUNS_TABLE} WHERE workspace_id = ? AND listed_seq IS NOT NULL
            ORDER BY listed_seq DESC LIMIT 1`,
        )
        .pluck(),
      insert:
        db.prepare(`INSERT INTO ${RUNS_TABLE} (id, seq, workspace_id, organization, listed_seq, status, operation,
        source, plan_only, save_plan, auto_apply, allow_empty_apply, has_changes, paused_for_confirmation,
        cancel_requested_at, force_cancel_available_at, message, created_at, created_by_name, attrs,
        status_timestamps, plan, apply)
        VALUES (@id, @seq, @workspace_id, @organization, @listed_seq, @status, @operation, @source, @plan_only,
        @save_plan, @auto_apply, @allow_empty_apply, @has_changes, @paused_for_confirmation, @cancel_requested_at,
        @force_cancel_available_at, @message, @created_at, @created_by_name, @attrs, @status_timestamps, @plan, @apply)`),
      // The creation flags never change; the rest of the state does.
      update: db.prepare(`UPDATE ${RUNS_TABLE} SET status = @status, has_changes = @has_changes,
        paused_for_confirmation = @paused_for_confirmation, cancel_requested_at = @cancel_requested_at,
        force_cancel_available_at = @force_cancel_available_at, status_timestamps = @status_timestamps,
        plan = @plan, apply = @apply WHERE id = @id`),
      log: db.prepare(`INSERT INTO ${RUN_LOGS_TABLE} (run_id, phase, log, json_output, json_output_redacted)
        VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id, phase) DO UPDATE SET log = excluded.log,
        json_output = COALESCE(excluded.json_output, ${RUN_LOGS_TABLE}.json_output),
        json_output_redacted = COALESCE(excluded.json_output_redacted, ${RUN_LOGS_TABLE}.json_output_redacted)`),
      dropWorkspace: db.prepare(`DELETE FROM ${RUNS_TABLE} WHERE workspace_id = ?`),
    };

    return (event: StoredEvent) => {
      if (event.type === 'WorkspaceDeleted') {
        s.dropWorkspace.run((event.data as { id: string }).id);
        return;
      }
      if (!RUN_EVENTS.has(event.type)) return;
      const e = event as StoredEvent<RunEvent>;
      if (e.type === 'RunCreated') {
        const d = e.data;
        s.insert.run({
          id: d.id,
          seq: e.position,
          workspace_id: d.workspaceId,
          organization: d.organization,
          listed_seq: d.planOnly ? null : (s.lastListed.get(d.workspaceId) ?? 0) + 1,
          ...stateColumns(runStateAfter(null, e)),
          operation: operationOf(d),
          source: d.source,
          message: d.message,
          created_at: e.time,
          created_by_name: e.metadata.actor?.name ?? null,
          attrs: canonicalJson(d),
          status_timestamps: JSON.stringify({ 'plan-queueable-at': e.time }),
          plan: canonicalJson(newPhase()),
          apply: canonicalJson(newPhase()),
        });
        return;
      }
      const found = s.get.get(e.stream);
      if (found === undefined) return;
      const row = toRunRow(found);
      const next = runStateAfter(row, e);
      const after = next.status;
      if (after !== row.status) row.statusTimestamps[timestampKey(after)] = e.time;
      movePhases(row, e, row.status, after);
      s.update.run({
        id: row.id,
        ...changingColumns(next),
        status_timestamps: JSON.stringify(row.statusTimestamps),
        plan: canonicalJson(row.plan),
        apply: canonicalJson(row.apply),
      });
      const log = logOf(e, row.status);
      if (log !== null)
        s.log.run(row.id, log.phase, canonicalJson(log.text), log.json, log.redacted);
    };
  },
};

/**
 * The log an event carries for a phase, if any, with the plan JSON: sealed as the event has them
 * (the read model keeps the JSON of either form; reads unseal).
 */
function logOf(
  e: StoredEvent<RunEvent>,
  before: RunStatus,
): {
  phase: 'plan' | 'apply';
  text: string | Sealed;
  json: string | null;
  redacted: string | null;
} | null {
  if (e.type === 'RunPlanFinished')
    return {
      phase: 'plan',
      text: e.data.log,
      json: canonicalJson(e.data.jsonOutput ?? null),
      redacted:
        e.data.jsonOutputRedacted === undefined ? null : canonicalJson(e.data.jsonOutputRedacted),
    };
  if (e.type === 'RunApplyFinished')
    return { phase: 'apply', text: e.data.log, json: null, redacted: null };
  if ((e.type === 'RunErrored' || e.type === 'RunCanceled') && e.data.log !== null) {
    return {
      phase: ['apply_queued', 'applying'].includes(before) ? 'apply' : 'plan',
      text: e.data.log,
      json: null,
      redacted: null,
    };
  }
  return null;
}
