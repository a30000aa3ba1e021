import type { ActionReason, Json, RunFlags, StateV4 } from '../types.js';
import type { ConfigModel, ResourceBlock } from './config.js';
import { ConfigurationError, unsupported } from './config.js';
import { UNKNOWN, evaluate, hasUnknown, jsonEqual, splitUnknown } from './expressions.js';
import type { Value } from './expressions.js';
import { blockInstances, blockValue, inBlock, priorInstances, scopeFor } from './scope.js';
import type { PriorInstance } from './scope.js';
import { addressMatches, dependencyOrder, targeting } from './graph.js';
import { forcesReplacement, plannedAttributes, shapeAttributes } from './schemas.js';

export { blockInstances, blockValue, inBlock, priorInstances, scopeFor } from './scope.js';

/** What happens to one resource instance. `replace` is delete-then-create; `import` adopts an object. */
export type InstanceAction = 'create' | 'update' | 'replace' | 'delete' | 'no-op' | 'import';

/** One planned resource instance. */
export interface PlannedInstance {
  address: string;
  type: string;
  name: string;
  /** The instance key: an index with `count`, a key with `for_each`. */
  index?: number | string;
  action: InstanceAction;
  reason?: ActionReason;
  before: Record<string, Json> | null;
  after: Value | null;
  importId?: string;
  /** Import blocks for resources absent from the configuration generate their configuration. */
  generatedConfig?: boolean;
}

export interface PlannedOutput {
  name: string;
  sensitive: boolean;
  /** whether the state holds it sensitive (false when the state does not hold it) */
  beforeSensitive: boolean;
  before: Json | undefined;
  after: Value | undefined;
}

/** The decisions of a plan, before they are rendered as JSON and log lines. */
export interface PlanModel {
  instances: PlannedInstance[];
  outputs: PlannedOutput[];
  warnings: string[];
}

const asObject = (value: Value): Record<string, Value> =>
  value && typeof value === 'object' && !Array.isArray(value) ? value : {};

/**
 * Plans the configuration against the prior state: one decision per resource instance and output,
 * honouring destroy, refresh-only, replace and target flags.
 */
export function planModel(
  model: ConfigModel,
  variables: Record<string, Json>,
  state: StateV4 | null,
  flags: RunFlags,
): PlanModel {
  const prior = priorInstances(state);
  const ordered = dependencyOrder(model.resources);
  const known = new Map<string, Value>();
  const instances: PlannedInstance[] = [];
  const warnings: string[] = [];
  const imports = new Map<string, string>();
  for (const block of model.imports) {
    const id = evaluate(block.id, scopeFor(model, variables, known, null));
    if (typeof id !== 'string')
      throw new ConfigurationError(
        'Invalid import id',
        `the import id for ${block.to} must be a known string`,
      );
    imports.set(block.to, id);
  }
  const configured = new Set<string>();
  for (const block of ordered) {
    const each = inBlock(block, () =>
      blockInstances(block, scopeFor(model, variables, known, null)),
    );
    const values: { key?: number | string; value: Value }[] = [];
    for (const { address, key, repetition } of each) {
      configured.add(address);
      const attrs = inBlock(block, () =>
        shapeAttributes(
          block.type,
          address,
          asObject(evaluate(block.attributes, scopeFor(model, variables, known, repetition))),
        ),
      );
      const planned = planInstance(
        block,
        address,
        key,
        attrs,
        prior.get(address),
        imports.get(address),
        flags,
      );
      instances.push(planned);
      values.push({
        ...(key === undefined ? {} : { key }),
        value: planned.action === 'delete' ? null : (planned.after ?? null),
      });
    }
    known.set(block.address, blockValue(block, values));
  }
  for (const [to, id] of imports) {
    if (configured.has(to) || prior.has(to)) continue;
    if (!flags.allowConfigGeneration) {
      throw new ConfigurationError(
        'Configuration for import target does not exist',
        `The configuration for the given import target ${to} does not exist. Enable configuration generation for the run, or add a resource block for ${to}.`,
      );
    }
    const match = /^([\w-]+)\.([\w-]+)$/.exec(to);
    if (!match)
      throw new ConfigurationError(
        'Invalid import address',
        `cannot generate configuration for ${to}`,
      );
    instances.push({
      address: to,
      type: match[1] ?? '',
      name: match[2] ?? '',
      action: 'import',
      before: null,
      after: { id },
      importId: id,
      generatedConfig: true,
    });
  }
  /** The kind of key each block's instances have: none, an index (`count`) or a string. */
  const keyKind = (b: ResourceBlock) =>
    b.count !== undefined ? 'number' : b.forEach !== undefined ? 'string' : 'undefined';
  const kinds = new Map(model.resources.map((b) => [b.address, keyKind(b)]));
  for (const [address, entry] of prior) {
    if (configured.has(address)) continue;
    const { resource, instance } = entry;
    const kind = kinds.get(`${resource.type}.${resource.name}`);
    // Terraform moves `a` to `a[0]` (and back) when count is added (or removed), and deletes
    // for "wrong repetition" otherwise: refactorings the builtin engine does not model.
    if (kind !== undefined && kind !== typeof instance.index_key)
      throw unsupported(
        `changing how ${address}'s resource repeats (count, for_each or neither) with objects in state`,
        address,
      );
    instances.push({
      address,
      type: resource.type,
      name: resource.name,
      ...(instance.index_key === undefined ? {} : { index: instance.index_key }),
      action: 'delete',
      reason:
        kind === undefined
          ? 'delete_because_no_resource_config'
          : kind === 'number'
            ? 'delete_because_count_index'
            : 'delete_because_each_key',
      before: instance.attributes,
      after: null,
    });
  }
  applyFlags(instances, model, flags, prior, warnings);
  const outputs = planOutputs(model, variables, known, state, flags);
  return { instances, outputs, warnings };
}

function planInstance(
  block: ResourceBlock,
  address: string,
  index: number | string | undefined,
  attrs: Record<string, Value>,
  prior: PriorInstance | undefined,
  importId: string | undefined,
  flags: RunFlags,
): PlannedInstance {
  const base = {
    address,
    type: block.type,
    name: block.name,
    ...(index === undefined ? {} : { index }),
  };
  if (!prior) {
    if (importId !== undefined)
      return {
        ...base,
        action: 'import',
        before: null,
        after: { ...attrs, id: importId },
        importId,
      };
    return {
      ...base,
      action: 'create',
      before: null,
      after: { ...plannedAttributes(block.type, null, attrs), id: attrs.id ?? UNKNOWN },
    };
  }
  const before = prior.instance.attributes;
  const tainted = prior.instance.status === 'tainted';
  const requested = flags.replaceAddrs.some((a) => addressMatches(a, address));
  if (tainted || requested || forcesReplacement(block.type, before, attrs)) {
    return {
      ...base,
      action: 'replace',
      reason: tainted
        ? 'replace_because_tainted'
        : requested
          ? 'replace_by_request'
          : 'replace_because_cannot_update',
      before,
      after: { ...plannedAttributes(block.type, null, attrs), id: attrs.id ?? UNKNOWN },
    };
  }
  const after: Record<string, Value> = {
    ...plannedAttributes(block.type, before, attrs),
    id: attrs.id ?? before.id ?? UNKNOWN,
  };
  const same = !hasUnknown(after) && jsonEqual(after as Json, before);
  return { ...base, action: same ? 'no-op' : 'update', before, after };
}

/** Destroy, refresh-only and target flags narrow or rewrite the per-instance decisions. */
function applyFlags(
  instances: PlannedInstance[],
  model: ConfigModel,
  flags: RunFlags,
  prior: Map<string, PriorInstance>,
  warnings: string[],
): void {
  if (flags.isDestroy) {
    const kept = instances.filter((i) => prior.has(i.address));
    instances.splice(
      0,
      instances.length,
      // A destroy plan deletes everything for no particular reason: it gives none.
      ...kept.map(({ reason: _reason, ...i }): PlannedInstance => ({
        ...i,
        action: 'delete',
        before: prior.get(i.address)?.instance.attributes ?? null,
        after: null,
      })),
    );
  } else if (flags.refreshOnly) {
    // Nothing outside Keel changes the objects a builtin plan manages, so refreshing finds them as recorded.
    const kept = instances.filter((i) => prior.has(i.address));
    instances.splice(
      0,
      instances.length,
      ...kept.map((i): PlannedInstance => {
        const before = prior.get(i.address)?.instance.attributes ?? null;
        return {
          address: i.address,
          type: i.type,
          name: i.name,
          ...(i.index === undefined ? {} : { index: i.index }),
          action: 'no-op',
          before,
          after: before,
        };
      }),
    );
  }
  for (const address of flags.replaceAddrs) {
    if (!instances.some((i) => addressMatches(address, i.address) && i.action === 'replace')) {
      warnings.push(
        `Replace target not found: ${address} does not name an existing resource instance, so nothing is replaced for it.`,
      );
    }
  }
  if (flags.targetAddrs.length > 0) {
    const included = targeting(model.resources, flags.targetAddrs);
    const kept = instances.filter((i) => included(i.address));
    instances.splice(0, instances.length, ...kept);
    warnings.push(
      'Resource targeting is in effect: you are creating a plan with the -target option, which means that the result of this plan may not represent all of the changes requested by the current configuration.',
    );
  }
}

function planOutputs(
  model: ConfigModel,
  variables: Record<string, Json>,
  known: Map<string, Value>,
  state: StateV4 | null,
  flags: RunFlags,
): PlannedOutput[] {
  const out: PlannedOutput[] = [];
  const priorOutputs = state?.outputs ?? {};
  if (!flags.isDestroy) {
    for (const block of Object.values(model.outputs)) {
      const after = inBlock({ address: `output.${block.name}`, file: 'outputs' }, () =>
        evaluate(block.value, scopeFor(model, variables, known, null)),
      );
      out.push({
        name: block.name,
        sensitive: block.sensitive,
        beforeSensitive: priorOutputs[block.name]?.sensitive === true,
        before: priorOutputs[block.name]?.value,
        after,
      });
    }
  }
  for (const [name, prior] of Object.entries(priorOutputs)) {
    if (flags.isDestroy || !(name in model.outputs)) {
      out.push({
        name,
        sensitive: prior.sensitive === true,
        beforeSensitive: prior.sensitive === true,
        before: prior.value,
        after: undefined,
      });
    }
  }
  return out;
}

/** The JSON action list of a planned instance. */
export function actionsOf(action: InstanceAction): ('no-op' | 'create' | 'update' | 'delete')[] {
  switch (action) {
    case 'create':
      return ['create'];
    case 'update':
      return ['update'];
    case 'replace':
      return ['delete', 'create'];
    case 'delete':
      return ['delete'];
    case 'no-op':
    case 'import':
      return ['no-op'];
    default: {
      const _never: never = action;
      return _never;
    }
  }
}

/** The known part of an output or attribute value and whether anything is unknown. */
export const known = (value: Value): { value: Json; unknown: Json } => {
  const split = splitUnknown(value);
  return { value: split.known, unknown: split.unknown };
};
