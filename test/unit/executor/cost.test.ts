import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinDriver } from '../../../src/runs/executor/builtin/index.js';
import {
  estimateCost,
  loadPriceTable,
  monthlyPrice,
  parsePriceTable,
} from '../../../src/runs/executor/cost.js';
import type { PlanJson, StateV4 } from '../../../src/runs/executor/types.js';
import { defaultFlags } from '../../../src/runs/executor/types.js';
import { tarball } from '../../support/configuration.js';

const table = parsePriceTable(
  JSON.stringify({
    resources: {
      aws_instance: { attribute: 'instance_type', hourly: { 't3.micro': 0.01, 't3.large': 0.1 } },
      aws_s3_bucket: { monthly: 2.5 },
    },
  }),
  'test',
);

async function plan(main: string, state: StateV4 | null = null) {
  let n = 0;
  const driver = builtinDriver({ newId: () => `id-${++n}`, newLineage: () => 'l' });
  const request = {
    configuration: tarball({ 'main.tf': main }),
    workspaceVariables: [],
    runVariables: [],
    state,
    flags: defaultFlags,
    log: () => undefined,
  };
  const planned = await driver.plan(request).result;
  if (planned.status !== 'finished') throw new Error('plan failed');
  const applied = await driver.apply({ ...request, artifact: planned.artifact }).result;
  if (applied.status !== 'finished') throw new Error('apply failed');
  return { plan: planned.plan, state: applied.state };
}

const instance = (size: string) =>
  `resource "aws_instance" "web" {\n  instance_type = "${size}"\n}\nresource "aws_s3_bucket" "b" {}\nresource "aws_iam_role" "r" {}\n`;

describe('cost estimation', () => {
  it('prices hourly resources by attribute and flat monthly ones', () => {
    expect(monthlyPrice(table, 'aws_instance', { instance_type: 't3.micro' })).toBeCloseTo(7.3);
    expect(monthlyPrice(table, 'aws_instance', { instance_type: 'x9.huge' })).toBeNull();
    expect(monthlyPrice(table, 'aws_s3_bucket', {})).toBe(2.5);
    expect(monthlyPrice(table, 'aws_iam_role', {})).toBeNull();
  });

  it('estimates prior, proposed and delta monthly cost with matched and unmatched counts', async () => {
    const first = await plan(instance('t3.micro'));
    expect(estimateCost(table, first.plan)).toEqual({
      priorMonthlyCost: '0.00',
      proposedMonthlyCost: '9.80',
      deltaMonthlyCost: '9.80',
      matchedResourcesCount: 2,
      unmatchedResourcesCount: 1,
      resourcesCount: 3,
    });
    const bigger = await plan(instance('t3.large'), first.state);
    expect(estimateCost(table, bigger.plan)).toMatchObject({
      priorMonthlyCost: '9.80',
      proposedMonthlyCost: '75.50',
      deltaMonthlyCost: '65.70',
    });
  });

  it('a destroy plan has a negative delta', async () => {
    const first = await plan(instance('t3.micro'));
    const destroy = await builtinDriver({ newId: () => 'x', newLineage: () => 'l' }).plan({
      configuration: tarball({ 'main.tf': instance('t3.micro') }),
      workspaceVariables: [],
      runVariables: [],
      state: first.state,
      flags: { ...defaultFlags, isDestroy: true },
      log: () => undefined,
    }).result;
    expect(destroy.status === 'finished' && estimateCost(table, destroy.plan)).toMatchObject({
      proposedMonthlyCost: '0.00',
      deltaMonthlyCost: '-9.80',
    });
  });

  it('ships a default table and lets the data directory override it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-prices-'));
    try {
      const shipped = loadPriceTable(dir);
      expect(shipped.resources.aws_instance?.attribute).toBe('instance_type');
      await writeFile(
        join(dir, 'prices.json'),
        JSON.stringify({ resources: { aws_iam_role: { monthly: 1 } } }),
      );
      const custom = loadPriceTable(dir);
      expect(Object.keys(custom.resources)).toEqual(['aws_iam_role']);
      expect(custom.hours_per_month).toBe(730);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['{', 'is not valid JSON'],
    ['{"resources": {"a": {}}}', 'resources.a: give exactly one of hourly or monthly'],
    ['{"resources": {"a": {"attribute": "x", "monthly": 3}}}', 'needs a map of prices'],
    ['{"resources": {"a": {"monthly": -1}}}', 'resources.a.monthly'],
  ])('refuses a bad table %s', (text, message) => {
    expect(() => parsePriceTable(text, 'prices.json')).toThrow(message);
  });

  it('counts a plan with no resources as zero cost', () => {
    const empty: PlanJson = {
      format_version: '1.2',
      terraform_version: '1.9.8',
      variables: {},
      planned_values: { outputs: {}, root_module: { resources: [] } },
      resource_changes: [],
      output_changes: {},
      applyable: false,
      complete: true,
      errored: false,
    };
    expect(estimateCost(table, empty)).toMatchObject({
      deltaMonthlyCost: '0.00',
      resourcesCount: 0,
    });
  });
});
