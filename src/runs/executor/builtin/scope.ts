import type { Json, StateInstance, StateResource, StateV4 } from '../types.js';
import type { ConfigModel, ResourceBlock } from './config.js';
import { ConfigurationError } from './config.js';
import { EvaluationError, UNKNOWN, evaluate, hasUnknown } from './expressions.js';
import type { Repetition, Scope, Value } from './expressions.js';

/** A prior-state instance with its address. */
export interface PriorInstance {
  address: string;
  resource: StateResource;
  instance: StateInstance;
}

/** The managed instances of a state, by address. */
export function priorInstances(state: StateV4 | null): Map<string, PriorInstance> {
  const out = new Map<string, PriorInstance>();
  for (const resource of state?.resources ?? []) {
    if (resource.mode !== 'managed') continue;
    for (const instance of resource.instances) {
      const key = instance.index_key;
      const suffix = key === undefined ? '' : typeof key === 'number' ? `[${key}]` : `["${key}"]`;
      const address = `${resource.type}.${resource.name}${suffix}`;
      out.set(address, { address, resource, instance });
    }
  }
  return out;
}

/** Evaluates the configuration against resolved values; resource lookups read `known`. */
export function scopeFor(
  model: ConfigModel,
  variables: Record<string, Json>,
  known: Map<string, Value>,
  instance: Repetition | null,
): Scope {
  const locals = new Map<string, Value>();
  const evaluating = new Set<string>();
  const scope: Scope = {
    variable(name) {
      if (!(name in variables))
        throw new EvaluationError(
          'Reference to undeclared input variable',
          `var.${name} is not declared`,
        );
      return variables[name] ?? null;
    },
    local(name) {
      const cached = locals.get(name);
      if (cached !== undefined) return cached;
      if (!(name in model.locals))
        throw new EvaluationError(
          'Reference to undeclared local value',
          `local.${name} is not declared`,
        );
      if (evaluating.has(name))
        throw new EvaluationError('Cycle', `local.${name} refers to itself`);
      evaluating.add(name);
      const value = evaluate(model.locals[name] ?? null, {
        ...scope,
        countIndex: () => null,
        each: () => null,
      });
      evaluating.delete(name);
      locals.set(name, value);
      return value;
    },
    countIndex: () => instance?.countIndex ?? null,
    each: () => instance?.each ?? null,
    resource(type, name) {
      const value = known.get(`${type}.${name}`);
      if (value === undefined)
        throw new EvaluationError(
          'Reference to undeclared resource',
          `${type}.${name} is not declared`,
        );
      return value;
    },
  };
  return scope;
}

/** One instance of a resource block: its address, its key in state, and what it evaluates with. */
export interface BlockInstance {
  address: string;
  key?: number | string;
  repetition: Repetition | null;
}

/**
 * The instances a block has: one without `count` or `for_each`; one per index with `count`; one
 * per key, in key order, with `for_each` over a map or object (terraform refuses other values;
 * a set of strings needs `toset`, a function the builtin engine refuses).
 */
export function blockInstances(block: ResourceBlock, scope: Scope): BlockInstance[] {
  const count = instanceCount(block, scope);
  if (count !== null)
    return Array.from({ length: count }, (_, i) => ({
      address: `${block.address}[${i}]`,
      key: i,
      repetition: { countIndex: i },
    }));
  if (block.forEach === undefined) return [{ address: block.address, repetition: null }];
  const map = evaluate(block.forEach, scope);
  if (map === UNKNOWN || hasUnknown(map))
    throw new ConfigurationError(
      'Invalid for_each argument',
      `${block.address}: the "for_each" map includes keys or set values that cannot be determined until apply (${block.file})`,
    );
  if (map === null || typeof map !== 'object' || Array.isArray(map))
    throw new ConfigurationError(
      'Invalid for_each argument',
      `${block.address}: the "for_each" argument must be a map, or set of strings, and you have provided a value of type ${map === null ? 'null' : Array.isArray(map) ? 'tuple' : typeof map} (${block.file})`,
    );
  return Object.keys(map)
    .sort()
    .map((key) => ({
      address: `${block.address}[${JSON.stringify(key)}]`,
      key,
      repetition: { each: { key, value: map[key] ?? null } },
    }));
}

/** The value a block's instances give references to it: one, a list by index, a map by key. */
export function blockValue(
  block: ResourceBlock,
  values: { key?: number | string; value: Value }[],
): Value {
  if (block.count !== undefined) return values.map((v) => v.value);
  if (block.forEach !== undefined)
    return Object.fromEntries(values.map((v) => [String(v.key), v.value]));
  return values[0]?.value ?? null;
}

/** The instance count of a block: `count` must be a known whole number. */
export function instanceCount(block: ResourceBlock, scope: Scope): number | null {
  if (block.count === undefined) return null;
  const count = evaluate(block.count, scope);
  if (count === UNKNOWN || hasUnknown(count)) {
    throw new ConfigurationError(
      'Invalid count argument',
      `${block.address}: the "count" value depends on resource attributes that cannot be determined until apply (${block.file})`,
    );
  }
  const n = typeof count === 'string' ? Number(count) : count;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw new ConfigurationError(
      'Invalid count argument',
      `${block.address}: count must be a whole number, got ${JSON.stringify(count)} (${block.file})`,
    );
  }
  return n;
}

/** Wraps evaluation errors with the block they came from. */
export function inBlock<T>(block: { address: string; file: string }, run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof EvaluationError)
      throw new ConfigurationError(
        error.summary,
        `${error.detail} (${block.address}, ${block.file})`,
      );
    throw error;
  }
}
