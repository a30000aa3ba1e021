import jsonata from 'jsonata';
import type { PlanJson } from './types.js';

/** How much a failing policy matters. */
export type Enforcement = 'advisory' | 'soft-mandatory' | 'hard-mandatory';
export const ENFORCEMENTS: readonly Enforcement[] = [
  'advisory',
  'soft-mandatory',
  'hard-mandatory',
];

/** One rule: a JSONata expression over the plan JSON that must evaluate to `true`. */
export interface PolicyRule {
  name: string;
  description?: string;
  query: string;
  enforcement: Enforcement;
}

/** A named group of rules, attached to an organization or to workspaces. */
export interface PolicySetRules {
  name: string;
  policies: readonly PolicyRule[];
}

/** What one policy decided. */
export interface PolicyOutcome {
  policy: string;
  description: string | null;
  'enforcement-level': Enforcement;
  result: boolean;
  error: string | null;
}

/** The `result` attribute of a `policy-checks` resource. */
export interface PolicyCheckResult {
  result: boolean;
  passed: number;
  'total-failed': number;
  'hard-failed': number;
  'soft-failed': number;
  'advisory-failed': number;
  'duration-ms': number;
  policies: PolicyOutcome[];
}

/** The policy check's status: a soft failure can be overridden, a hard one cannot. */
export type PolicyCheckStatus = 'passed' | 'soft_failed' | 'hard_failed';

/** Evaluation steps one policy may take: a budget, not a clock, so checks stay deterministic. */
export const MAX_POLICY_STEPS = 200_000;
const MAX_DEPTH = 200;

/** A policy's expression does not compile; the message is JSONata's, with its position. */
export class PolicySyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicySyntaxError';
  }
}

interface JsonataFailure {
  message?: string;
  position?: number;
  token?: string;
}

/** Compiles a policy's expression, or throws {@link PolicySyntaxError} naming the problem. */
export function compilePolicy(query: string): jsonata.Expression {
  try {
    return jsonata(query);
  } catch (error) {
    const e = error as JsonataFailure;
    throw new PolicySyntaxError(
      `${e.message ?? String(error)}${e.position === undefined ? '' : ` (at position ${e.position})`}`,
    );
  }
}

/**
 * JSONata calls these hooks around every evaluation step; counting steps and depth bounds a
 * runaway expression (e.g. unbounded recursion) without reading the clock.
 */
function budget(expression: jsonata.Expression): void {
  let steps = 0;
  let depth = 0;
  const entry = () => {
    steps += 1;
    depth += 1;
    if (steps > MAX_POLICY_STEPS)
      throw new Error(`policy exceeded ${MAX_POLICY_STEPS} evaluation steps`);
    if (depth > MAX_DEPTH) throw new Error(`policy exceeded an evaluation depth of ${MAX_DEPTH}`);
  };
  const exit = () => {
    depth -= 1;
  };
  // The hook names are symbols JSONata looks up in its environment; assign() binds any key.
  expression.assign(Symbol.for('jsonata.__evaluate_entry') as unknown as string, entry);
  expression.assign(Symbol.for('jsonata.__evaluate_exit') as unknown as string, exit);
}

/**
 * What a value is, in words: never the value itself, which may be sensitive (the outcome of a
 * policy check rests in clear).
 */
function kindOfValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

async function evaluatePolicy(
  set: string,
  rule: PolicyRule,
  plan: PlanJson,
): Promise<PolicyOutcome> {
  const outcome = (result: boolean, error: string | null): PolicyOutcome => ({
    policy: `${set}/${rule.name}`,
    description: rule.description ?? null,
    'enforcement-level': rule.enforcement,
    result,
    error,
  });
  try {
    const expression = compilePolicy(rule.query);
    budget(expression);
    const value: unknown = await expression.evaluate(plan);
    if (typeof value !== 'boolean') {
      return outcome(false, `the policy must evaluate to true or false, not ${kindOfValue(value)}`);
    }
    return outcome(value, null);
  } catch (error) {
    return outcome(false, (error as JsonataFailure).message ?? String(error));
  }
}

/**
 * Evaluates every policy of every set against the plan JSON. A policy that errors counts as
 * failed at its enforcement level, as a failing Sentinel policy does.
 */
export async function checkPolicies(
  sets: readonly PolicySetRules[],
  plan: PlanJson,
): Promise<{ status: PolicyCheckStatus; result: PolicyCheckResult }> {
  const policies: PolicyOutcome[] = [];
  for (const set of sets)
    for (const rule of set.policies) policies.push(await evaluatePolicy(set.name, rule, plan));
  const failed = (level: Enforcement) =>
    policies.filter((p) => !p.result && p['enforcement-level'] === level).length;
  const result: PolicyCheckResult = {
    result: policies.every((p) => p.result || p['enforcement-level'] === 'advisory'),
    passed: policies.filter((p) => p.result).length,
    'total-failed': policies.filter((p) => !p.result).length,
    'hard-failed': failed('hard-mandatory'),
    'soft-failed': failed('soft-mandatory'),
    'advisory-failed': failed('advisory'),
    'duration-ms': 0,
    policies,
  };
  const status: PolicyCheckStatus =
    result['hard-failed'] > 0
      ? 'hard_failed'
      : result['soft-failed'] > 0
        ? 'soft_failed'
        : 'passed';
  return { status, result };
}

/**
 * Where a run goes after its policy check: a pass continues, a soft failure waits for an override
 * (or ends a plan-only run as `policy_soft_failed`), a hard failure errors the run.
 */
export function runStatusAfterPolicyCheck(
  status: PolicyCheckStatus,
  planOnly: boolean,
): 'policy_checked' | 'policy_override' | 'policy_soft_failed' | 'errored' {
  switch (status) {
    case 'passed':
      return 'policy_checked';
    case 'soft_failed':
      return planOnly ? 'policy_soft_failed' : 'policy_override';
    case 'hard_failed':
      return 'errored';
    default: {
      const _never: never = status;
      return _never;
    }
  }
}

/** The log lines of a policy check, in the spirit of the Sentinel output in the run log. */
export function policyLog(result: PolicyCheckResult): string[] {
  const lines = [`${result.policies.length} policies evaluated.`, ''];
  for (const p of result.policies) {
    const verdict = p.result
      ? 'Passed'
      : p['enforcement-level'] === 'advisory'
        ? 'Advisory failed'
        : 'Failed';
    lines.push(
      `## Policy: ${p.policy} (${p['enforcement-level']})`,
      '',
      `Result: ${verdict}${p.error ? ` — ${p.error}` : ''}`,
      '',
    );
  }
  return lines;
}
