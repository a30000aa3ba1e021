import type { Db } from '../../../core/database.js';
import { docRows } from '../../../core/sql.js';
import type { StoredEvent } from '../../../core/events.js';
import type { Projection } from '../../../core/projections.js';
import { scheduleRows } from '../../../core/schedule.js';
import type { TaskResultStatus, TaskStage } from '../tasks.js';
import type { RunTaskCreated, RunTaskEvent, StageResult, WorkspaceTaskAttached } from './events.js';

/** Read models of run tasks: tasks, workspace attachments, and each run's task stages. */

const TASKS = 'exec_run_tasks';
const ATTACHED = 'exec_workspace_tasks';
const STAGES = 'exec_task_stages';
/** Schedule kind of a task result's deadline. */
export const TASK_TIMEOUT = 'run-task-timeout';

export type RunTaskRow = RunTaskCreated['data'] & { createdAt: string };

export type WorkspaceTaskRow = WorkspaceTaskAttached['data'];

export interface ResultRow extends StageResult {
  status: TaskResultStatus;
  message: string | null;
  resultUrl: string | null;
  updatedAt: string;
}

export interface TaskStageRow {
  id: string;
  runId: string;
  stage: TaskStage;
  status: 'running' | 'passed' | 'failed';
  createdAt: string;
  updatedAt: string;
  results: ResultRow[];
}

export const runTasksProjection: Projection = {
  name: 'executor-run-tasks',
  version: 1,
  tables: [TASKS, ATTACHED, STAGES],
  setup(db: Db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${TASKS} (id TEXT PRIMARY KEY, organization TEXT NOT NULL, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ${ATTACHED} (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ${STAGES} (id TEXT PRIMARY KEY, run_id TEXT NOT NULL, doc TEXT NOT NULL);
    `);
    const schedule = scheduleRows(db, 'executor-run-tasks');
    const putTask = db.prepare(
      `INSERT OR REPLACE INTO ${TASKS} (id, organization, doc) VALUES (?, ?, ?)`,
    );
    const putAttached = db.prepare(
      `INSERT OR REPLACE INTO ${ATTACHED} (id, workspace_id, doc) VALUES (?, ?, ?)`,
    );
    const putStage = db.prepare(
      `INSERT OR REPLACE INTO ${STAGES} (id, run_id, doc) VALUES (?, ?, ?)`,
    );
    const getStage = db.prepare<[string], { doc: string }>(
      `SELECT doc FROM ${STAGES} WHERE id = ?`,
    );
    const saveStage = (s: TaskStageRow) => putStage.run(s.id, s.runId, JSON.stringify(s));
    const stage = (id: string) => {
      const row = getStage.get(id);
      return row ? (JSON.parse(row.doc) as TaskStageRow) : null;
    };
    return (stored: StoredEvent) => {
      const e = stored as StoredEvent<RunTaskEvent>;
      const at = stored.time;
      switch (e.type) {
        case 'RunTaskCreated':
          putTask.run(e.data.id, e.data.organization, JSON.stringify({ ...e.data, createdAt: at }));
          return;
        case 'WorkspaceTaskAttached':
          putAttached.run(e.data.id, e.data.workspaceId, JSON.stringify(e.data));
          return;
        case 'TaskStageStarted': {
          const results = e.data.results.map((r): ResultRow => ({
            ...r,
            status: 'running',
            message: null,
            resultUrl: null,
            updatedAt: at,
          }));
          saveStage({
            id: e.data.id,
            runId: e.data.runId,
            stage: e.data.stage,
            status: 'running',
            createdAt: at,
            updatedAt: at,
            results,
          });
          for (const r of results)
            schedule.put({
              key: `task-result:${r.id}`,
              kind: TASK_TIMEOUT,
              dueAt: r.dueAt,
              data: { stageId: e.data.id, resultId: r.id },
            });
          return;
        }
        case 'TaskResultUpdated': {
          const s = stage(e.data.stageId);
          if (!s) return;
          s.results = s.results.map((r) =>
            r.id === e.data.resultId
              ? {
                  ...r,
                  status: e.data.status,
                  message: e.data.message,
                  resultUrl: e.data.url,
                  updatedAt: at,
                }
              : r,
          );
          s.updatedAt = at;
          saveStage(s);
          if (e.data.status !== 'running' && e.data.status !== 'pending')
            schedule.remove(`task-result:${e.data.resultId}`);
          return;
        }
        case 'TaskStageFinished': {
          const s = stage(e.data.id);
          if (!s) return;
          saveStage({ ...s, status: e.data.status, updatedAt: at });
          for (const r of s.results) schedule.remove(`task-result:${r.id}`);
          return;
        }
        default:
          return;
      }
    };
  },
};

/** Queries over the run task read models. */
export class RunTaskQueries {
  readonly #db: Db;
  readonly #docs: ReturnType<typeof docRows>;
  constructor(db: Db) {
    this.#db = db;
    this.#docs = docRows(db);
    runTasksProjection.setup(db);
  }

  task(id: string): RunTaskRow | null {
    return this.#docs.one<RunTaskRow>(`SELECT doc FROM ${TASKS} WHERE id = ?`, id);
  }

  tasks(organization: string): RunTaskRow[] {
    return this.#docs.all<RunTaskRow>(
      `SELECT doc FROM ${TASKS} WHERE organization = ? ORDER BY id`,
      organization,
    );
  }

  attached(workspaceId: string, stage?: TaskStage): WorkspaceTaskRow[] {
    return this.#docs
      .all<WorkspaceTaskRow>(
        `SELECT doc FROM ${ATTACHED} WHERE workspace_id = ? ORDER BY id`,
        workspaceId,
      )
      .filter((w) => stage === undefined || w.stage === stage);
  }

  stage(id: string): TaskStageRow | null {
    return this.#docs.one<TaskStageRow>(`SELECT doc FROM ${STAGES} WHERE id = ?`, id);
  }

  stagesOfRun(runId: string): TaskStageRow[] {
    return this.#docs.all<TaskStageRow>(
      `SELECT doc FROM ${STAGES} WHERE run_id = ? ORDER BY id`,
      runId,
    );
  }

  /** The stage a task result belongs to. */
  stageOfResult(resultId: string): TaskStageRow | null {
    return this.#docs.one<TaskStageRow>(
      `SELECT s.doc FROM ${STAGES} s, json_each(s.doc, '$.results') r WHERE json_extract(r.value, '$.id') = ?`,
      resultId,
    );
  }
}
