import { describe, expect, it } from 'vitest';
import { redactPlan } from '../../../src/runs/executor/redact.js';
import type { PlanJson } from '../../../src/runs/executor/types.js';

/** The redacted plan JSON: sensitive values become null, their markers say so. */

const plan = (parts: Partial<PlanJson> & Record<string, unknown>): PlanJson => ({
  format_version: '1.2',
  terraform_version: '1.9.8',
  variables: {},
  planned_values: { outputs: {}, root_module: { resources: [] } },
  resource_changes: [],
  output_changes: {},
  applyable: true,
  complete: true,
  errored: false,
  ...parts,
});

describe('redactPlan', () => {
  it('follows terraform sensitivity markers, nested and in lists, without any secret given', () => {
    const redacted = redactPlan(
      plan({
        resource_changes: [
          {
            address: 'x.y',
            mode: 'managed',
            type: 'x',
            name: 'y',
            provider_name: 'p',
            change: {
              actions: ['update'],
              before: { a: 'old', nested: { key: 'k1', keep: 1 }, list: ['p', 'q'] },
              after: { a: 'new', nested: { key: 'k2', keep: 1 }, list: ['p', 'r'] },
              after_unknown: {},
              before_sensitive: { nested: { key: true } },
              after_sensitive: { nested: { key: true }, list: [false, true] },
            },
          },
        ],
        planned_values: {
          outputs: {
            token: { sensitive: true, value: 'tok-value' },
            open: { sensitive: false, value: 1 },
          },
          root_module: {
            resources: [
              {
                address: 'x.y',
                mode: 'managed',
                type: 'x',
                name: 'y',
                provider_name: 'p',
                schema_version: 0,
                values: { a: 'new', whole: { s: 1 } },
                sensitive_values: { whole: true },
              },
            ],
            child_modules: [
              {
                resources: [
                  {
                    address: 'module.m.z.w',
                    values: { pw: 'deep' },
                    sensitive_values: { pw: true },
                  },
                ],
              },
            ],
          } as PlanJson['planned_values']['root_module'],
        },
      }),
      [],
    ) as Record<string, unknown>;
    expect(JSON.stringify(redacted)).not.toMatch(/k1|k2|"r"|tok-value|deep|"s":1/);
    const change = (redacted.resource_changes as { change: Record<string, unknown> }[])[0]!.change;
    expect(change.before).toEqual({ a: 'old', nested: { key: null, keep: 1 }, list: ['p', 'q'] });
    expect(change.after).toEqual({ a: 'new', nested: { key: null, keep: 1 }, list: ['p', null] });
    expect(change.after_sensitive).toEqual({ nested: { key: true }, list: [false, true] });
    expect(redacted.planned_values).toMatchObject({
      outputs: { token: { sensitive: true, value: null }, open: { sensitive: false, value: 1 } },
      root_module: { resources: [{ values: { a: 'new', whole: null } }] },
    });
  });

  it('takes the variables the configuration declares sensitive as secrets too', () => {
    const redacted = redactPlan(
      plan({
        variables: { token: { value: 'tok-declared-9' }, region: { value: 'eu' } },
        planned_values: {
          outputs: { url: { sensitive: false, value: 'https://tok-declared-9@h' } },
          root_module: { resources: [] },
        },
        configuration: {
          root_module: { variables: { token: { sensitive: true }, region: {} } },
        },
      }),
      [],
    );
    expect(JSON.stringify(redacted)).not.toContain('tok-declared-9');
    expect(redacted).toMatchObject({
      variables: { token: { value: null }, region: { value: 'eu' } },
      planned_values: { outputs: { url: { sensitive: true, value: null } } },
    });
  });

  it('marks and redacts whatever carries a sensitive variable value, wherever it is', () => {
    const redacted = redactPlan(
      plan({
        variables: { pw: { value: 'sekrit-1' }, region: { value: 'eu' } },
        output_changes: {
          url: {
            actions: ['create'],
            before: null,
            after: 'https://u:sekrit-1@h',
            after_unknown: false,
            before_sensitive: false,
            after_sensitive: false,
          },
        },
        configuration: { root_module: { variables: { pw: { default: 'sekrit-1' } } } },
      }),
      ['sekrit-1', 'ab'],
    );
    expect(JSON.stringify(redacted)).not.toContain('sekrit-1');
    expect(redacted).toMatchObject({
      variables: { pw: { value: null }, region: { value: 'eu' } },
      output_changes: { url: { after: null, after_sensitive: true, before_sensitive: false } },
      configuration: { root_module: { variables: { pw: { default: null } } } },
    });
  });
});
