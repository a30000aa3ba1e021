import type { Db } from '../../../core/database.js';
import { DocTable, docRows, type DocReader } from '../../../core/sql.js';
import type { StoredEvent } from '../../../core/events.js';
import type { Projection } from '../../../core/projections.js';
import { scheduleRows } from '../../../core/schedule.js';
import type { TaskResultStatus, TaskStage } from '../tasks.js';
import type { RunTaskCreated, RunTaskEvent, StageResult, WorkspaceTaskAttached } from './events.js';

/** Read models of run tasks: tasks, workspace attachments, and each run's task stages. */

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

const TASKS = new DocTable<RunTaskRow>('exec_run_tasks', 'organization', (d) => d.organization);
const ATTACHED = new DocTable<WorkspaceTaskRow>(
  'exec_workspace_tasks',
  'workspace_id',
  (d) => d.workspaceId,
);
const STAGES = new DocTable<TaskStageRow>('exec_task_stages', 'run_id', (d) => d.runId);

export const runTasksProjection: Projection = {
  name: 'executor-run-tasks',
  version: 1,
  tables: [TASKS.name, ATTACHED.name, STAGES.name],
  events: [
    'RunTaskCreated',
    'WorkspaceTaskAttached',
    'TaskStageStarted',
    'TaskResultUpdated',
    'TaskStageFinished',
  ] satisfies RunTaskEvent['type'][],
  setup(db: Db) {
    db.exec(`
      ${TASKS.ddl}
      ${ATTACHED.ddl}
      ${STAGES.ddl}
    `);
    const schedule = scheduleRows(db, 'executor-run-tasks');
    const putTask = TASKS.writer(db);
    const putAttached = ATTACHED.writer(db);
    const saveStage = STAGES.writer(db);
    const stage = STAGES.reader(db).get;
    return (stored: StoredEvent) => {
      const e = stored as StoredEvent<RunTaskEvent>;
      const at = stored.time;
      switch (e.type) {
        case 'RunTaskCreated':
          putTask({ ...e.data, createdAt: at });
          return;
        case 'WorkspaceTaskAttached':
          putAttached(e.data);
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
  readonly #docs: ReturnType<typeof docRows>;
  readonly #tasks: DocReader<RunTaskRow>;
  readonly #attached: DocReader<WorkspaceTaskRow>;
  readonly #stages: DocReader<TaskStageRow>;
  constructor(db: Db) {
    this.#docs = docRows(db);
    this.#tasks = TASKS.reader(db);
    this.#attached = ATTACHED.reader(db);
    this.#stages = STAGES.reader(db);
    runTasksProjection.setup(db);
  }

  task(id: string): RunTaskRow | null {
    return this.#tasks.get(id);
  }

  tasks(organization: string): RunTaskRow[] {
    return this.#tasks.where(organization);
  }

  attached(workspaceId: string, stage?: TaskStage): WorkspaceTaskRow[] {
    return this.#attached
      .where(workspaceId)
      .filter((w) => stage === undefined || w.stage === stage);
  }

  stage(id: string): TaskStageRow | null {
    return this.#stages.get(id);
  }

  stagesOfRun(runId: string): TaskStageRow[] {
    return this.#stages.where(runId);
  }

  /** The stage a task result belongs to. */
  stageOfResult(resultId: string): TaskStageRow | null {
    return this.#docs.one<TaskStageRow>(
      `SELECT s.doc FROM ${STAGES.name} s, json_each(s.doc, '$.results') r WHERE json_extract(r.value, '$.id') = ?`,
      resultId,
    );
  }
}
