import type { AnyStateMachine } from 'xstate';

/** A machine as a plain graph: what every diagram format is rendered from. */
export interface MachineGraph {
  id: string;
  states: {
    id: string;
    name: string;
    parent: string | null;
    final: boolean;
    initial: boolean;
    compound: boolean;
  }[];
  transitions: { source: string; target: string; event: string; guard: string | null }[];
}

interface StateNodeLike {
  id: string;
  key: string;
  type: string;
  states: Record<string, StateNodeLike>;
  parent?: StateNodeLike;
  initial?: { target?: readonly { id: string }[] };
  transitions: Map<string, readonly { target?: readonly { id: string }[]; guard?: unknown }[]>;
}

const guardName = (g: unknown): string | null => {
  if (g === undefined || g === null) return null;
  if (typeof g === 'string') return g;
  if (typeof g === 'object' && 'type' in g && typeof g.type === 'string')
    return (g as { type: string }).type;
  if (typeof g === 'function') return g.name || 'guard';
  return 'guard';
};

/** Walk a machine's state nodes: states (nested), transitions with their events and guard names. */
export function machineGraph(machine: AnyStateMachine): MachineGraph {
  const root = machine.root as unknown as StateNodeLike;
  const graph: MachineGraph = { id: root.id, states: [], transitions: [] };
  const walk = (node: StateNodeLike, parent: StateNodeLike | null) => {
    const initialIds = new Set((parent?.initial?.target ?? []).map((t) => t.id));
    if (parent !== null) {
      graph.states.push({
        id: node.id,
        name: node.key,
        parent: parent === root ? null : parent.id,
        final: node.type === 'final',
        initial: initialIds.has(node.id),
        compound: Object.keys(node.states).length > 0,
      });
    }
    for (const [event, transitions] of node.transitions) {
      for (const t of transitions) {
        for (const target of t.target ?? []) {
          graph.transitions.push({
            source: node.id,
            target: target.id,
            event,
            guard: guardName(t.guard),
          });
        }
      }
    }
    for (const child of Object.values(node.states)) walk(child, node);
  };
  walk(root, null);
  return graph;
}

/**
 * The part of a machine within `depth` transitions (either way) of the states named `name`: what
 * a reader needs around a stream's current state. The compound states holding them are kept, and
 * only transitions between kept states.
 */
export function neighbourhood(graph: MachineGraph, name: string, depth = 1): MachineGraph {
  const near = new Set(
    graph.states.filter((s) => s.name === name || s.id === name).map((s) => s.id),
  );
  const byId = new Map(graph.states.map((s) => [s.id, s]));
  // A transition from or to a compound state touches every state inside it.
  const within = (id: string): string[] => {
    const inside = graph.states.filter((s) => s.parent === id).flatMap((s) => within(s.id));
    return [id, ...inside];
  };
  for (let d = 0; d < depth; d++) {
    const frontier = [...near];
    for (const t of graph.transitions) {
      const from = within(t.source);
      const to = within(t.target);
      if (frontier.some((id) => from.includes(id))) to.forEach((id) => near.add(id));
      if (frontier.some((id) => to.includes(id))) from.forEach((id) => near.add(id));
    }
  }
  for (const id of [...near]) {
    for (let p = byId.get(id)?.parent ?? null; p !== null; p = byId.get(p)?.parent ?? null)
      near.add(p);
  }
  return {
    id: graph.id,
    states: graph.states.filter((s) => near.has(s.id)),
    transitions: graph.transitions.filter((t) => near.has(t.source) && near.has(t.target)),
  };
}

const q = (s: string) => `"${s.replace(/"/g, '\\"')}"`;

/** Graphviz DOT. `highlight` names a state (by its short name or id) to fill. */
export function toDot(
  graph: MachineGraph,
  options: { highlight?: string; counts?: Record<string, number> } = {},
): string {
  const lines = [
    `digraph ${q(graph.id)} {`,
    '  rankdir=LR;',
    '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=9];',
    '  __start [shape=point, width=0.15, label=""];',
  ];
  const byParent = new Map<string | null, MachineGraph['states']>();
  for (const s of graph.states) byParent.set(s.parent, [...(byParent.get(s.parent) ?? []), s]);
  const emit = (parent: string | null, indent: string) => {
    for (const s of byParent.get(parent) ?? []) {
      if (s.compound) {
        lines.push(`${indent}subgraph ${q(`cluster_${s.id}`)} {`, `${indent}  label=${q(s.name)};`);
        emit(s.id, `${indent}  `);
        lines.push(`${indent}}`);
        continue;
      }
      const hit =
        options.highlight !== undefined &&
        (options.highlight === s.name || options.highlight === s.id);
      const count = options.counts?.[s.name];
      const label = count === undefined ? s.name : `${s.name}\\n(${count})`;
      const attrs = [`label=${q(label)}`, `id=${q(`state-${s.name}`)}`];
      if (s.final) attrs.push('peripheries=2');
      if (hit) attrs.push('fillcolor="#ffd54f"', 'penwidth=2');
      lines.push(`${indent}${q(s.id)} [${attrs.join(', ')}];`);
    }
  };
  emit(null, '  ');
  const first = graph.states.find((s) => s.initial && s.parent === null);
  if (first !== undefined) lines.push(`  __start -> ${q(firstLeaf(graph, first.id))};`);
  else lines.splice(lines.indexOf('  __start [shape=point, width=0.15, label=""];'), 1);
  for (const t of graph.transitions) {
    const label = t.guard === null ? t.event : `${t.event} [${t.guard}]`;
    lines.push(
      `  ${q(firstLeaf(graph, t.source))} -> ${q(firstLeaf(graph, t.target))} [label=${q(label)}];`,
    );
  }
  lines.push('}');
  return lines.join('\n');
}

/** A compound state is drawn through its initial leaf. */
function firstLeaf(graph: MachineGraph, id: string): string {
  const children = graph.states.filter((s) => s.parent === id);
  if (children.length === 0) return id;
  return firstLeaf(graph, (children.find((c) => c.initial) ?? children[0]!).id);
}

/** Mermaid `stateDiagram-v2`. */
export function toMermaid(graph: MachineGraph): string {
  const name = (id: string) =>
    graph.states.find((s) => s.id === id)?.name.replace(/[^\w]/g, '_') ?? id;
  const lines = ['stateDiagram-v2'];
  const byParent = new Map<string | null, MachineGraph['states']>();
  for (const s of graph.states) byParent.set(s.parent, [...(byParent.get(s.parent) ?? []), s]);
  const emit = (parent: string | null, indent: string) => {
    for (const s of byParent.get(parent) ?? []) {
      if (s.initial) lines.push(`${indent}[*] --> ${name(s.id)}`);
      if (s.compound) {
        lines.push(`${indent}state ${name(s.id)} {`);
        emit(s.id, `${indent}  `);
        lines.push(`${indent}}`);
      }
      if (s.final) lines.push(`${indent}${name(s.id)} --> [*]`);
    }
  };
  emit(null, '  ');
  for (const t of graph.transitions) {
    const label = t.guard === null ? t.event : `${t.event} [${t.guard}]`;
    lines.push(`  ${name(t.source)} --> ${name(t.target)}: ${label}`);
  }
  return lines.join('\n');
}

/** SVG rendered in process by Graphviz compiled to WebAssembly (no external tools). */
export async function toSvg(dot: string): Promise<string> {
  const { instance } = await import('@viz-js/viz');
  const viz = await instance();
  return viz.renderString(dot, { format: 'svg', engine: 'dot' });
}

export type DiagramFormat = 'mermaid' | 'dot' | 'svg';

export async function renderDiagram(
  machine: AnyStateMachine,
  format: DiagramFormat,
  highlight?: string,
): Promise<string> {
  const graph = machineGraph(machine);
  switch (format) {
    case 'mermaid':
      return toMermaid(graph);
    case 'dot':
      return toDot(graph, { highlight });
    case 'svg':
      return toSvg(toDot(graph, { highlight }));
    default: {
      const _never: never = format;
      return _never;
    }
  }
}
