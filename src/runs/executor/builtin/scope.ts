import type { Json, StateInstance, StateResource, StateV4 } from '../types.js';
import type { ConfigModel, ResourceBlock } from './config.js';
import { ConfigurationError } from './config.js';
import { EvaluationError, UNKNOWN, evaluate, hasUnknown } from './expressions.js';
import type { Scope, Value } from './expressions.js';

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
  countIndex: number | null,
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
      const value = evaluate(model.locals[name] ?? null, { ...scope, countIndex: () => null });
      evaluating.delete(name);
      locals.set(name, value);
      return value;
    },
    countIndex: () => countIndex,
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
