import type { Db } from '../../../core/database.js';
import { DocTable, type DocReader } from '../../../core/sql.js';
import type { StoredEvent } from '../../../core/events.js';
import type { Projection } from '../../../core/projections.js';
import type { CostEstimate } from '../cost.js';
import type { PolicyCheckResult, PolicyCheckStatus } from '../policy.js';
import type { OrganizationUpdated } from '../../events.js';
import type { CheckEvent, PolicyCreated, PolicySetCreated } from './events.js';

/** Read models of cost estimation and policy checks. */

const SETTINGS = 'exec_org_settings';

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

const POLICY_SETS = new DocTable<PolicySetRow>(
  'exec_policy_sets',
  'organization',
  (d) => d.organization,
);
const POLICIES = new DocTable<PolicyRow>('exec_policies', 'organization', (d) => d.organization);
const ESTIMATES = new DocTable<CostEstimateRow>('exec_cost_estimates', 'run_id', (d) => d.runId, {
  uniqueKey: true,
});
const CHECKS = new DocTable<PolicyCheckRow>('exec_policy_checks', 'run_id', (d) => d.runId);

export const checksProjection: Projection = {
  name: 'executor-checks',
  version: 1,
  tables: [SETTINGS, POLICY_SETS.name, POLICIES.name, ESTIMATES.name, CHECKS.name],
  events: [
    'ExecutionSettingsUpdated',
    'OrganizationUpdated',
    'PolicySetCreated',
    'PolicyCreated',
    'CostEstimateRecorded',
    'PolicyCheckRecorded',
    'PolicyCheckOverridden',
  ] satisfies (CheckEvent | OrganizationUpdated)['type'][],
  setup(db: Db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${SETTINGS} (organization TEXT PRIMARY KEY, cost_estimation INTEGER NOT NULL);
      ${POLICY_SETS.ddl}
      ${POLICIES.ddl}
      ${ESTIMATES.ddl}
      ${CHECKS.ddl}
    `);
    const settings = db.prepare(
      `INSERT OR REPLACE INTO ${SETTINGS} (organization, cost_estimation) VALUES (?, ?)`,
    );
    const putSet = POLICY_SETS.writer(db);
    const putPolicy = POLICIES.writer(db);
    const putEstimate = ESTIMATES.writer(db);
    const putCheck = CHECKS.writer(db);
    const getCheck = CHECKS.reader(db).get;
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
          putSet({ ...e.data, createdAt: at });
          return;
        case 'PolicyCreated':
          putPolicy({ ...e.data, createdAt: at });
          return;
        case 'CostEstimateRecorded':
          putEstimate({ ...e.data, createdAt: at });
          return;
        case 'PolicyCheckRecorded':
          putCheck({ ...e.data, createdAt: at, overriddenAt: null });
          return;
        case 'PolicyCheckOverridden': {
          const check = getCheck(e.data.id);
          if (check) putCheck({ ...check, status: 'overridden', overriddenAt: at });
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
  readonly #sets: DocReader<PolicySetRow>;
  readonly #policies: DocReader<PolicyRow>;
  readonly #estimates: DocReader<CostEstimateRow>;
  readonly #checks: DocReader<PolicyCheckRow>;
  constructor(db: Db) {
    this.#db = db;
    this.#sets = POLICY_SETS.reader(db);
    this.#policies = POLICIES.reader(db);
    this.#estimates = ESTIMATES.reader(db);
    this.#checks = CHECKS.reader(db);
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
    return this.#sets.where(organization);
  }

  policySet(id: string): PolicySetRow | null {
    return this.#sets.get(id);
  }

  policies(organization: string): PolicyRow[] {
    return this.#policies.where(organization);
  }

  policy(id: string): PolicyRow | null {
    return this.#policies.get(id);
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
    return this.#estimates.get(id);
  }

  costEstimateOfRun(runId: string): CostEstimateRow | null {
    return this.#estimates.where(runId)[0] ?? null;
  }

  policyCheck(id: string): PolicyCheckRow | null {
    return this.#checks.get(id);
  }

  policyChecksOfRun(runId: string): PolicyCheckRow[] {
    return this.#checks.where(runId);
  }
}
