import type { Db } from '../../../core/database.js';
import { docRows } from '../../../core/sql.js';
import type { StoredEvent } from '../../../core/events.js';
import type { Projection } from '../../../core/projections.js';
import type { CostEstimate } from '../cost.js';
import type { PolicyCheckResult, PolicyCheckStatus } from '../policy.js';
import type { OrganizationUpdated } from '../../events.js';
import type { CheckEvent, PolicyCreated, PolicySetCreated } from './events.js';

/** Read models of cost estimation and policy checks. */

const SETTINGS = 'exec_org_settings';
const POLICY_SETS = 'exec_policy_sets';
const POLICIES = 'exec_policies';
const ESTIMATES = 'exec_cost_estimates';
const CHECKS = 'exec_policy_checks';

export type PolicySetRow = PolicySetCreated['data'] & { createdAt: string };

export type PolicyRow = PolicyCreated['data'] & { createdAt: string };

export interface CostEstimateRow {
  id: string;
  runId: string;
  estimate: CostEstimate;
  createdAt: string;
}

export interface PolicyCheckRow {
  id: string;
  runId: string;
  status: PolicyCheckStatus | 'overridden';
  result: PolicyCheckResult;
  createdAt: string;
  overriddenAt: string | null;
}

export const checksProjection: Projection = {
  name: 'executor-checks',
  version: 1,
  tables: [SETTINGS, POLICY_SETS, POLICIES, ESTIMATES, CHECKS],
  setup(db: Db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${SETTINGS} (organization TEXT PRIMARY KEY, cost_estimation INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS ${POLICY_SETS} (id TEXT PRIMARY KEY, organization TEXT NOT NULL, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ${POLICIES} (id TEXT PRIMARY KEY, organization TEXT NOT NULL, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ${ESTIMATES} (id TEXT PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ${CHECKS} (id TEXT PRIMARY KEY, run_id TEXT NOT NULL, doc TEXT NOT NULL);
    `);
    const settings = db.prepare(
      `INSERT OR REPLACE INTO ${SETTINGS} (organization, cost_estimation) VALUES (?, ?)`,
    );
    const put = (table: string) =>
      db.prepare(`INSERT OR REPLACE INTO ${table} (id, organization, doc) VALUES (?, ?, ?)`);
    const putSet = put(POLICY_SETS);
    const putPolicy = put(POLICIES);
    const putEstimate = db.prepare(
      `INSERT OR REPLACE INTO ${ESTIMATES} (id, run_id, doc) VALUES (?, ?, ?)`,
    );
    const putCheck = db.prepare(
      `INSERT OR REPLACE INTO ${CHECKS} (id, run_id, doc) VALUES (?, ?, ?)`,
    );
    const getCheck = db.prepare<[string], { doc: string }>(
      `SELECT doc FROM ${CHECKS} WHERE id = ?`,
    );
    return (stored: StoredEvent) => {
      // `PATCH /organizations/:name` sets the flag too.
      const e = stored as StoredEvent<CheckEvent | OrganizationUpdated>;
      const at = stored.time;
      switch (e.type) {
        case 'ExecutionSettingsUpdated':
          settings.run(e.data.organization, e.data.costEstimationEnabled ? 1 : 0);
          return;
        case 'OrganizationUpdated':
          settings.run(e.data.name, e.data.costEstimationEnabled ? 1 : 0);
          return;
        case 'PolicySetCreated':
          putSet.run(e.data.id, e.data.organization, JSON.stringify({ ...e.data, createdAt: at }));
          return;
        case 'PolicyCreated':
          putPolicy.run(
            e.data.id,
            e.data.organization,
            JSON.stringify({ ...e.data, createdAt: at }),
          );
          return;
        case 'CostEstimateRecorded':
          putEstimate.run(e.data.id, e.data.runId, JSON.stringify({ ...e.data, createdAt: at }));
          return;
        case 'PolicyCheckRecorded':
          putCheck.run(
            e.data.id,
            e.data.runId,
            JSON.stringify({ ...e.data, createdAt: at, overriddenAt: null }),
          );
          return;
        case 'PolicyCheckOverridden': {
          const row = getCheck.get(e.data.id);
          if (!row) return;
          const check = JSON.parse(row.doc) as PolicyCheckRow;
          putCheck.run(
            check.id,
            check.runId,
            JSON.stringify({ ...check, status: 'overridden', overriddenAt: at }),
          );
          return;
        }
        default:
          return;
      }
    };
  },
};

/** Queries over the checks read models. */
export class CheckQueries {
  readonly #db: Db;
  readonly #docs: ReturnType<typeof docRows>;
  constructor(db: Db) {
    this.#db = db;
    this.#docs = docRows(db);
    checksProjection.setup(db);
  }

  costEstimationEnabled(organization: string): boolean {
    return (
      (this.#db
        .prepare<[string], { cost_estimation: number }>(
          `SELECT cost_estimation FROM ${SETTINGS} WHERE organization = ?`,
        )
        .get(organization)?.cost_estimation ?? 0) === 1
    );
  }

  policySets(organization: string): PolicySetRow[] {
    return this.#docs.all<PolicySetRow>(
      `SELECT doc FROM ${POLICY_SETS} WHERE organization = ? ORDER BY id`,
      organization,
    );
  }

  policySet(id: string): PolicySetRow | null {
    return this.#docs.one<PolicySetRow>(`SELECT doc FROM ${POLICY_SETS} WHERE id = ?`, id);
  }

  policies(organization: string): PolicyRow[] {
    return this.#docs.all<PolicyRow>(
      `SELECT doc FROM ${POLICIES} WHERE organization = ? ORDER BY id`,
      organization,
    );
  }

  policy(id: string): PolicyRow | null {
    return this.#docs.one<PolicyRow>(`SELECT doc FROM ${POLICIES} WHERE id = ?`, id);
  }

  /** The policy sets that apply to a workspace, each with its policies. */
  setsFor(
    organization: string,
    workspaceId: string,
  ): { set: PolicySetRow; policies: PolicyRow[] }[] {
    const policies = this.policies(organization);
    return this.policySets(organization)
      .filter((s) => s.global || s.workspaceIds.includes(workspaceId))
      .map((set) => ({ set, policies: policies.filter((p) => p.policySetIds.includes(set.id)) }))
      .filter((s) => s.policies.length > 0);
  }

  costEstimate(id: string): CostEstimateRow | null {
    return this.#docs.one<CostEstimateRow>(`SELECT doc FROM ${ESTIMATES} WHERE id = ?`, id);
  }

  costEstimateOfRun(runId: string): CostEstimateRow | null {
    return this.#docs.one<CostEstimateRow>(`SELECT doc FROM ${ESTIMATES} WHERE run_id = ?`, runId);
  }

  policyCheck(id: string): PolicyCheckRow | null {
    return this.#docs.one<PolicyCheckRow>(`SELECT doc FROM ${CHECKS} WHERE id = ?`, id);
  }

  policyChecksOfRun(runId: string): PolicyCheckRow[] {
    return this.#docs.all<PolicyCheckRow>(
      `SELECT doc FROM ${CHECKS} WHERE run_id = ? ORDER BY id`,
      runId,
    );
  }
}
