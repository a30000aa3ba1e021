import { describe, expect, it } from 'vitest';
import { assembleVariables, type AppliedVarset } from '../../../src/runs/varsets/assemble.js';

/** The reference's variable precedence, layer by layer, as a pure function. */

const v = (key: string, value: string, category: 'terraform' | 'env' = 'terraform') => ({
  key,
  value,
  category,
  hcl: false,
  sensitive: false,
});
const set = (
  name: string,
  tier: AppliedVarset['tier'],
  priority: boolean,
  variables: ReturnType<typeof v>[],
): AppliedVarset => ({ id: `varset-${name}`, name, tier, priority, variables });

const values = (r: ReturnType<typeof assembleVariables>) =>
  Object.fromEntries(r.workspace.map((x) => [`${x.category}:${x.key}`, x.value]));

describe('assembleVariables', () => {
  it('each layer overrides the ones below it, per category', () => {
    const r = assembleVariables(
      [v('a', 'ws'), v('A', 'ws-env', 'env')],
      [
        set('g', 'global', false, [v('a', 'g'), v('b', 'g'), v('c', 'g'), v('d', 'g')]),
        set('p', 'project', false, [v('b', 'p'), v('c', 'p')]),
        set('w', 'workspace', false, [v('c', 'w'), v('a', 'w'), v('A', 'w-env', 'env')]),
      ],
      [{ key: 'a', value: '"run"' }],
    );
    expect(values(r)).toEqual({
      'terraform:a': 'ws',
      'terraform:b': 'p',
      'terraform:c': 'w',
      'terraform:d': 'g',
      'env:A': 'ws-env',
    });
    expect(r.run).toEqual([{ key: 'a', value: '"run"' }]);
  });

  it('priority sets override workspace and run variables; global over project over workspace', () => {
    const r = assembleVariables(
      [v('x', 'ws'), v('X', 'ws', 'env')],
      [
        set('gp', 'global', true, [v('x', 'gp'), v('y', 'gp')]),
        set('pp', 'project', true, [v('y', 'pp'), v('z', 'pp'), v('X', 'pp', 'env')]),
        set('wp', 'workspace', true, [v('z', 'wp')]),
      ],
      [
        { key: 'x', value: '"run"' },
        { key: 'X', value: '"run"' },
        { key: 'free', value: '"run"' },
      ],
    );
    expect(values(r)).toEqual({
      'terraform:x': 'gp',
      'terraform:y': 'gp',
      'terraform:z': 'pp',
      'env:X': 'pp',
    });
    // an env variable of a priority set does not take a run's terraform variable of that name
    expect(r.run.map((x) => x.key)).toEqual(['X', 'free']);
  });

  it('refuses two sets of one scope with one key, and allows it across scopes or categories', () => {
    expect(() =>
      assembleVariables(
        [],
        [set('a', 'global', false, [v('k', '1')]), set('b', 'global', false, [v('k', '2')])],
        [],
      ),
    ).toThrow(/terraform variable k is set by variable sets a \(varset-a\) and b \(varset-b\)/);
    expect(() =>
      assembleVariables(
        [],
        [
          set('a', 'global', false, [v('k', '1')]),
          set('b', 'global', true, [v('k', '2')]),
          set('c', 'project', false, [v('k', '3', 'env')]),
          set('d', 'project', false, [v('k', '4')]),
        ],
        [],
      ),
    ).not.toThrow();
  });
});
