import { describe, expect, it } from 'vitest';
import { builtinDriver } from '../../../src/runs/executor/builtin/index.js';
import {
  MAX_POLICY_STEPS,
  PolicySyntaxError,
  checkPolicies,
  compilePolicy,
  policyLog,
  runStatusAfterPolicyCheck,
} from '../../../src/runs/executor/policy.js';
import type { Enforcement, PolicyRule } from '../../../src/runs/executor/policy.js';
import { defaultFlags } from '../../../src/runs/executor/types.js';
import { tarball } from '../../support/configuration.js';

async function planOf(main: string) {
  const result = await builtinDriver({ newId: () => 'i', newLineage: () => 'l' }).plan({
    configuration: tarball({ 'main.tf': main }),
    workspaceVariables: [],
    runVariables: [],
    state: null,
    flags: defaultFlags,
    log: () => undefined,
  }).result;
  if (result.status !== 'finished') throw new Error('plan failed');
  return result.plan;
}

const TWO =
  'resource "aws_instance" "a" {\n  instance_type = "t3.micro"\n}\nresource "aws_instance" "b" {\n  instance_type = "m5.xlarge"\n}\n';
const SMALL_ONLY =
  '$count(resource_changes[type = "aws_instance" and change.after.instance_type != "t3.micro"]) = 0';
const AT_MOST_FIVE = '$count(resource_changes[change.actions = "create"]) <= 5';
const rule = (name: string, query: string, enforcement: Enforcement): PolicyRule => ({
  name,
  query,
  enforcement,
});

describe('policy checks', () => {
  it('passes when every policy holds', async () => {
    const { status, result } = await checkPolicies(
      [{ name: 'base', policies: [rule('five', AT_MOST_FIVE, 'hard-mandatory')] }],
      await planOf(TWO),
    );
    expect(status).toBe('passed');
    expect(result).toMatchObject({
      result: true,
      passed: 1,
      'total-failed': 0,
      'hard-failed': 0,
      'soft-failed': 0,
      'advisory-failed': 0,
    });
    expect(result.policies).toEqual([
      {
        policy: 'base/five',
        description: null,
        'enforcement-level': 'hard-mandatory',
        result: true,
        error: null,
      },
    ]);
  });

  it.each([
    ['advisory', 'passed', 'advisory-failed', true],
    ['soft-mandatory', 'soft_failed', 'soft-failed', false],
    ['hard-mandatory', 'hard_failed', 'hard-failed', false],
  ] as const)('a failing %s policy gives %s', async (enforcement, status, counter, overall) => {
    const checked = await checkPolicies(
      [
        {
          name: 'sizes',
          policies: [
            rule('small', SMALL_ONLY, enforcement),
            rule('five', AT_MOST_FIVE, 'hard-mandatory'),
          ],
        },
      ],
      await planOf(TWO),
    );
    expect(checked.status).toBe(status);
    expect(checked.result).toMatchObject({
      result: overall,
      passed: 1,
      'total-failed': 1,
      [counter]: 1,
    });
  });

  it('a hard failure outranks a soft one', async () => {
    const plan = await planOf(TWO);
    const checked = await checkPolicies(
      [
        { name: 'a', policies: [rule('soft', SMALL_ONLY, 'soft-mandatory')] },
        { name: 'b', policies: [rule('hard', 'false', 'hard-mandatory')] },
      ],
      plan,
    );
    expect(checked.status).toBe('hard_failed');
    expect(checked.result).toMatchObject({ 'soft-failed': 1, 'hard-failed': 1, 'total-failed': 2 });
  });

  it('a policy that does not evaluate to a boolean fails with an error', async () => {
    const { result } = await checkPolicies(
      [
        {
          name: 's',
          policies: [
            rule('count', '$count(resource_changes)', 'soft-mandatory'),
            rule('none', 'nothing.here', 'advisory'),
            rule('value', 'resource_changes[0].address', 'advisory'),
          ],
        },
      ],
      await planOf(TWO),
    );
    // The value itself is never echoed: it could be sensitive, and the outcome rests in clear.
    expect(result.policies.map((p) => p.error)).toEqual([
      'the policy must evaluate to true or false, not a number',
      'the policy must evaluate to true or false, not nothing',
      'the policy must evaluate to true or false, not a string',
    ]);
  });

  it('a runaway policy is stopped by the step budget', async () => {
    const loop = '($f := function($n) { $n = 0 ? true : $f($n - 1) }; $f(1000000))';
    const { result } = await checkPolicies(
      [{ name: 's', policies: [rule('loop', loop, 'hard-mandatory')] }],
      await planOf(TWO),
    );
    expect(result.policies[0]?.error).toMatch(/evaluation (steps|depth)/);
    expect(MAX_POLICY_STEPS).toBeGreaterThan(0);
  });

  it('reports a syntax error with its position', () => {
    expect(() => compilePolicy('resource_changes[')).toThrow(PolicySyntaxError);
    expect(() => compilePolicy('resource_changes[')).toThrow(/position/);
  });

  it('decides the next run status', () => {
    expect(runStatusAfterPolicyCheck('passed', false)).toBe('policy_checked');
    expect(runStatusAfterPolicyCheck('soft_failed', false)).toBe('policy_override');
    expect(runStatusAfterPolicyCheck('soft_failed', true)).toBe('policy_soft_failed');
    expect(runStatusAfterPolicyCheck('hard_failed', false)).toBe('errored');
  });

  it('writes a readable log', async () => {
    const { result } = await checkPolicies(
      [{ name: 'sizes', policies: [rule('small', SMALL_ONLY, 'advisory')] }],
      await planOf(TWO),
    );
    expect(policyLog(result)).toEqual([
      '1 policies evaluated.',
      '',
      '## Policy: sizes/small (advisory)',
      '',
      'Result: Advisory failed',
      '',
    ]);
  });
});
