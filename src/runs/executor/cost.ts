import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import defaults from './prices.json' with { type: 'json' };
import type { Json, PlanJson } from './types.js';

const rate = z.union([z.number().nonnegative(), z.record(z.string(), z.number().nonnegative())]);

/** A price table: per resource type a flat or attribute-keyed hourly or monthly price. */
export const priceTableSchema = z.object({
  currency: z.string().min(1).default('USD'),
  hours_per_month: z.number().positive().default(730),
  resources: z.record(
    z.string(),
    z
      .object({
        /** The attribute whose value selects the price, e.g. `instance_type`. */
        attribute: z.string().optional(),
        hourly: rate.optional(),
        monthly: rate.optional(),
      })
      .refine((p) => (p.hourly === undefined) !== (p.monthly === undefined), {
        message: 'give exactly one of hourly or monthly',
      })
      .refine((p) => p.attribute === undefined || typeof (p.hourly ?? p.monthly) === 'object', {
        message: 'an attribute-keyed price needs a map of prices',
      }),
  ),
});

export type PriceTable = z.infer<typeof priceTableSchema>;

/** The price table file in a data directory that replaces the shipped one when present. */
export const PRICE_TABLE_FILE = 'prices.json';

/**
 * The shipped price table, or `<dataDir>/prices.json` when an operator provides one. Read
 * synchronously (once, small) so that estimating stays inside one synchronous step.
 */
export function loadPriceTable(dataDir: string | null): PriceTable {
  if (dataDir) {
    const path = join(dataDir, PRICE_TABLE_FILE);
    let text: string | null = null;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (text !== null) return parsePriceTable(text, path);
  }
  return priceTableSchema.parse(defaults);
}

/** Parses and validates a price table, naming the file and the field at fault. */
export function parsePriceTable(text: string, source: string): PriceTable {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new Error(`price table ${source} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = priceTableSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `price table ${source}: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

/** The monthly price of one resource object, or null when the table has no price for it. */
export function monthlyPrice(table: PriceTable, type: string, values: Json): number | null {
  const entry = table.resources[type];
  if (!entry) return null;
  const price = entry.hourly ?? entry.monthly;
  const perHour = entry.hourly !== undefined;
  let amount: number | undefined;
  if (typeof price === 'number') amount = price;
  else if (price && entry.attribute) {
    const key =
      values && typeof values === 'object' && !Array.isArray(values)
        ? values[entry.attribute]
        : undefined;
    amount = typeof key === 'string' ? price[key] : undefined;
  }
  if (amount === undefined) return null;
  return perHour ? amount * table.hours_per_month : amount;
}

/** The figures of a `cost-estimates` resource. */
export interface CostEstimate {
  priorMonthlyCost: string;
  proposedMonthlyCost: string;
  deltaMonthlyCost: string;
  matchedResourcesCount: number;
  unmatchedResourcesCount: number;
  resourcesCount: number;
}

const money = (n: number): string => (Math.round(n * 100) / 100).toFixed(2);

/**
 * Estimates the monthly cost before and after a plan: prior from the plan's prior state, proposed
 * from its planned values. A resource counts as matched when the table prices it in the state it
 * ends in (or, for a deletion, the state it starts in).
 */
export function estimateCost(table: PriceTable, plan: PlanJson): CostEstimate {
  // Terraform leaves out empty lists: a plan that ends with no resources has no `resources`.
  const sum = (resources: readonly { type: string; values?: Json }[] = []) =>
    resources.reduce((total, r) => total + (monthlyPrice(table, r.type, r.values ?? null) ?? 0), 0);
  const prior = sum(plan.prior_state?.values.root_module.resources);
  const proposed = sum(plan.planned_values.root_module.resources);
  let matched = 0;
  let unmatched = 0;
  for (const change of plan.resource_changes ?? []) {
    const values = change.change.after ?? change.change.before ?? null;
    if (monthlyPrice(table, change.type, values) === null) unmatched += 1;
    else matched += 1;
  }
  return {
    priorMonthlyCost: money(prior),
    proposedMonthlyCost: money(proposed),
    deltaMonthlyCost: money(proposed - prior),
    matchedResourcesCount: matched,
    unmatchedResourcesCount: unmatched,
    resourcesCount: matched + unmatched,
  };
}
