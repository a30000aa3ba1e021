import type {
  ApplyCounts,
  Json,
  RunFlags,
  StateInstance,
  StateResource,
  StateV4,
} from '../types.js';
import type { ConfigModel, ResourceBlock } from './config.js';
import { ConfigurationError } from './config.js';
import { UNKNOWN, evaluate, hasUnknown, splitUnknown } from './expressions.js';
import type { Value } from './expressions.js';
import { dependencyOrder } from './graph.js';
import { blockInstances, blockValue, inBlock, priorInstances, scopeFor } from './plan.js';
import type { InstanceAction } from './plan.js';
import { ENGINE_VERSION, providerConfig, show } from './render.js';
import { shapeAttributes, typeOf } from './schemas.js';

/** Everything an apply needs from its plan; stored between the two phases as JSON. */
export interface BuiltinArtifact {
  kind: 'keel-builtin-plan';
  version: 1;
  model: ConfigModel;
  variables: Record<string, Json>;
  flags: RunFlags;
  instances: {
    address: string;
    type: string;
    name: string;
    index?: number | string;
    action: InstanceAction;
    importId?: string;
  }[];
  /** The state the plan was made against, so a stale plan is refused. */
  prior: { serial: number; lineage: string } | null;
}

/** Where computed values come from: injected so applies are deterministic under test. */
export interface ApplyIdentity {
  /** The `id` of a newly created object. */
  newId(type: string, address: string): string;
  /** The lineage of a workspace's first state. */
  newLineage(): string;
}

export interface BuiltinApplyResult {
  state: StateV4;
  counts: ApplyCounts;
  log: string[];
}

interface Working {
  type: string;
  name: string;
  index?: number | string;
  attributes: Record<string, Json>;
  dependencies: string[];
}

const idOf = (attributes: Record<string, Json>): string =>
  typeof attributes.id === 'string' ? attributes.id : show(attributes.id);

/** Applies a plan to its prior state and returns the next state, counts and log lines. */
export function applyPlan(
  artifact: BuiltinArtifact,
  prior: StateV4 | null,
  identity: ApplyIdentity,
): BuiltinApplyResult {
  const current = prior ? { serial: prior.serial, lineage: prior.lineage } : null;
  if (JSON.stringify(current) !== JSON.stringify(artifact.prior)) {
    throw new ConfigurationError(
      'Saved plan is stale',
      'The given plan file can no longer be applied because the state was changed by another operation after the plan was created.',
    );
  }
  const { model, variables } = artifact;
  const log: string[] = [];
  const counts: ApplyCounts = { additions: 0, changes: 0, destructions: 0, imports: 0 };
  const working = new Map<string, Working>();
  for (const [address, p] of priorInstances(prior)) {
    const index = p.instance.index_key;
    working.set(address, {
      type: p.resource.type,
      name: p.resource.name,
      ...(index === undefined ? {} : { index }),
      attributes: p.instance.attributes,
      dependencies: p.instance.dependencies ?? [],
    });
  }
  const actions = new Map(artifact.instances.map((i) => [i.address, i]));
  // Destroy first, dependents before what they depend on (reverse plan order).
  for (const planned of [...artifact.instances].reverse()) {
    if (planned.action !== 'delete' && planned.action !== 'replace') continue;
    const object = working.get(planned.address);
    if (!object) continue;
    log.push(
      `${planned.address}: Destroying... [id=${idOf(object.attributes)}]`,
      `${planned.address}: Destruction complete after 0s`,
    );
    working.delete(planned.address);
    counts.destructions += 1;
  }
  const known = new Map<string, Value>();
  /** What references to a block read: its instances as they are now in the working state. */
  const valueOf = (block: ResourceBlock): Value =>
    blockValue(
      block,
      [...working.entries()]
        .filter(([a]) => a === block.address || a.startsWith(`${block.address}[`))
        .map(([, w]) => ({
          ...(w.index === undefined ? {} : { key: w.index }),
          value: w.attributes,
        }))
        .sort((a, b) => compareKeys(a.key, b.key)),
    );
  for (const block of dependencyOrder(model.resources)) {
    const each = inBlock(block, () =>
      blockInstances(block, scopeFor(model, variables, known, null)),
    );
    for (const { address, key, repetition } of each) {
      const planned = actions.get(address);
      if (!planned || planned.action === 'delete' || planned.action === 'no-op') continue;
      const evaluated = inBlock(block, () =>
        evaluate(block.attributes, scopeFor(model, variables, known, repetition)),
      );
      const attributes = shapeAttributes(block.type, address, fullyKnown(evaluated, address));
      const before = working.get(address)?.attributes;
      switch (planned.action) {
        case 'create':
        case 'replace':
          attributes.id ??= identity.newId(block.type, address);
          log.push(
            `${address}: Creating...`,
            `${address}: Creation complete after 0s [id=${idOf(attributes)}]`,
          );
          counts.additions += 1;
          break;
        case 'update':
          attributes.id ??= before?.id ?? identity.newId(block.type, address);
          log.push(
            `${address}: Modifying... [id=${idOf(attributes)}]`,
            `${address}: Modifications complete after 0s [id=${idOf(attributes)}]`,
          );
          counts.changes += 1;
          break;
        case 'import':
          attributes.id = planned.importId ?? null;
          log.push(
            `${address}: Importing... [id=${idOf(attributes)}]`,
            `${address}: Import complete [id=${idOf(attributes)}]`,
          );
          counts.imports += 1;
          break;
        default: {
          const _never: never = planned.action;
          return _never;
        }
      }
      working.set(address, {
        type: block.type,
        name: block.name,
        ...(key === undefined ? {} : { index: key }),
        attributes,
        dependencies: block.dependsOn,
      });
    }
    known.set(block.address, valueOf(block));
  }
  for (const planned of artifact.instances) {
    if (planned.action !== 'import' || working.has(planned.address)) continue;
    const attributes = { id: planned.importId ?? null };
    log.push(
      `${planned.address}: Importing... [id=${idOf(attributes)}]`,
      `${planned.address}: Import complete [id=${idOf(attributes)}]`,
    );
    working.set(planned.address, {
      type: planned.type,
      name: planned.name,
      attributes,
      dependencies: [],
    });
    counts.imports += 1;
  }
  const outputs: StateV4['outputs'] = {};
  if (!artifact.flags.isDestroy) {
    for (const block of Object.values(model.outputs)) {
      const value = fullyKnown(
        inBlock({ address: `output.${block.name}`, file: 'outputs' }, () =>
          evaluate(block.value, scopeFor(model, variables, known, null)),
        ),
        `output.${block.name}`,
      );
      // Terraform keeps no null output in the state.
      if (value === null) continue;
      outputs[block.name] = {
        value,
        type: typeOf(value),
        ...(block.sensitive ? { sensitive: true } : {}),
      };
    }
  }
  const state: StateV4 = {
    version: 4,
    terraform_version: ENGINE_VERSION,
    serial: (prior?.serial ?? 0) + 1,
    lineage: prior?.lineage ?? identity.newLineage(),
    outputs,
    resources: stateResources(working),
    check_results: null,
  };
  const importPrefix = counts.imports > 0 ? `${counts.imports} imported, ` : '';
  log.push(
    '',
    artifact.flags.isDestroy
      ? `Destroy complete! Resources: ${counts.destructions} destroyed.`
      : `Apply complete! Resources: ${importPrefix}${counts.additions} added, ${counts.changes} changed, ${counts.destructions} destroyed.`,
  );
  const names = Object.keys(outputs);
  if (names.length > 0) {
    log.push('', 'Outputs:', '');
    for (const name of names) {
      const o = outputs[name];
      log.push(`${name} = ${o?.sensitive ? '<sensitive>' : show(o?.value ?? null)}`);
    }
  }
  return { state, counts, log };
}

/** Instance keys in terraform's order: indexes by number, for_each keys lexically. */
function compareKeys(a: number | string | undefined, b: number | string | undefined): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const [x, y] = [String(a ?? ''), String(b ?? '')];
  return x < y ? -1 : x > y ? 1 : 0;
}

function fullyKnown(value: Value, address: string): Record<string, Json> & Json {
  if (value === UNKNOWN || hasUnknown(value)) {
    throw new ConfigurationError(
      'Provider produced inconsistent result',
      `${address} still has unknown values after apply`,
    );
  }
  const known = splitUnknown(value).known;
  return known as Record<string, Json> & Json;
}

function stateResources(working: Map<string, Working>): StateResource[] {
  const groups = new Map<string, StateResource>();
  for (const w of working.values()) {
    const key = `${w.type}.${w.name}`;
    let group = groups.get(key);
    if (!group) {
      group = {
        mode: 'managed',
        type: w.type,
        name: w.name,
        provider: providerConfig(w.type),
        instances: [],
      };
      groups.set(key, group);
    }
    const instance: StateInstance = {
      ...(w.index === undefined ? {} : { index_key: w.index }),
      schema_version: 0,
      attributes: w.attributes,
      sensitive_attributes: [],
      ...(w.dependencies.length > 0 ? { dependencies: [...w.dependencies].sort() } : {}),
    };
    group.instances.push(instance);
  }
  for (const group of groups.values())
    group.instances.sort((a, b) => compareKeys(a.index_key, b.index_key));
  return [...groups.values()].sort((a, b) =>
    `${a.type}.${a.name}`.localeCompare(`${b.type}.${b.name}`),
  );
}
