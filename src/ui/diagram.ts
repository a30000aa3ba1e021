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

/** A machine with more states than this is drawn top to bottom. */
export const TALL_STATES = 12;
/** One event into one state from this many states or more is drawn through one shared node. */
export const SHARED_EXIT_SOURCES = 4;
/** A shared node with this many sources or more is a note ("any of N states") without arrows in. */
export const ANY_STATE_SOURCES = 8;

/** An arrow of the drawing: one or more transitions between the same two drawn nodes. */
interface Arrow {
  from: string;
  to: string;
  labels: string[];
}

/** A node the drawing adds where many states leave by the same transitions. */
interface Junction {
  id: string;
  sources: string[];
  /** `note`: an "any of N states" note with no arrows in; `point`: a dot every source joins. */
  kind: 'note' | 'point';
}

/**
 * The arrows a machine is drawn with. Transitions that take one event (and guard) from many
 * states into one state — every stage of a run can be errored — are drawn once: from an "any of
 * N states" note when they leave from many states, or from a dot the few states they leave from
 * join. Transitions between the same two nodes share one arrow with every label.
 */
export function arrows(graph: MachineGraph): { arrows: Arrow[]; junctions: Junction[] } {
  const label = (t: MachineGraph['transitions'][number]) =>
    t.guard === null ? t.event : `${t.event} [${t.guard}]`;
  const drawn = graph.transitions.map((t) => ({
    from: firstLeaf(graph, t.source),
    to: firstLeaf(graph, t.target),
    label: label(t),
  }));
  const bySink = new Map<string, typeof drawn>();
  for (const t of drawn) {
    const key = `${t.label}\u0000${t.to}`;
    bySink.set(key, [...(bySink.get(key) ?? []), t]);
  }
  const junctions = new Map<string, Junction>();
  const out: typeof drawn = [];
  for (const group of bySink.values()) {
    const sources = [...new Set(group.map((t) => t.from))];
    if (sources.length < SHARED_EXIT_SOURCES) {
      out.push(...group);
      continue;
    }
    // Transitions leaving from the same states share their node.
    const key = [...sources].sort().join('\u0000');
    let j = junctions.get(key);
    if (j === undefined) {
      j = {
        id: `__shared_${junctions.size}`,
        sources,
        kind: sources.length >= ANY_STATE_SOURCES ? 'note' : 'point',
      };
      junctions.set(key, j);
    }
    out.push({ from: j.id, to: group[0]!.to, label: group[0]!.label });
  }
  const merged = new Map<string, Arrow>();
  for (const t of out) {
    const key = `${t.from}\u0000${t.to}`;
    const arrow = merged.get(key);
    if (arrow === undefined) merged.set(key, { from: t.from, to: t.to, labels: [t.label] });
    else if (!arrow.labels.includes(t.label)) arrow.labels.push(t.label);
  }
  return { arrows: [...merged.values()], junctions: [...junctions.values()] };
}

/**
 * Graphviz DOT. `highlight` names a state (by its short name or id) to fill. Final states stand
 * together in the last column; see `arrows` for how many-to-one transitions are drawn.
 */
export function toDot(
  graph: MachineGraph,
  options: { highlight?: string; counts?: Record<string, number> } = {},
): string {
  // A long lifecycle (a run's 27 states) reads top to bottom, a phone's way; a short one left to right.
  const tall = graph.states.length > TALL_STATES;
  const lines = [
    `digraph ${q(graph.id)} {`,
    `  rankdir=${tall ? 'TB' : 'LR'};`,
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
  const finals = graph.states.filter((s) => s.final && s.parent === null && !s.compound);
  if (finals.length > 1) lines.push(`  { rank=sink; ${finals.map((s) => q(s.id)).join('; ')}; }`);
  const first = graph.states.find((s) => s.initial && s.parent === null);
  if (first !== undefined) lines.push(`  __start -> ${q(firstLeaf(graph, first.id))};`);
  else lines.splice(lines.indexOf('  __start [shape=point, width=0.15, label=""];'), 1);
  const drawing = arrows(graph);
  const nameOf = new Map(graph.states.map((s) => [s.id, s.name]));
  const active = graph.states.filter((s) => !s.final && !s.compound).length;
  for (const j of drawing.junctions) {
    const names = j.sources.map((id) => nameOf.get(id) ?? id).join(', ');
    const id = `junction-${j.id.slice('__shared_'.length)}`;
    if (j.kind === 'note') {
      const n = j.sources.length;
      const text = n === active ? `any state (${n})` : `any of ${n} states`;
      lines.push(
        `  ${q(j.id)} [shape=note, style="filled", fillcolor="#f6f8fa", color="#8c959f", label=${q(text)}, tooltip=${q(names)}, id=${q(id)}];`,
      );
      continue;
    }
    lines.push(`  ${q(j.id)} [shape=point, width=0.12, tooltip=${q(names)}, id=${q(id)}];`);
    for (const source of j.sources) lines.push(`  ${q(source)} -> ${q(j.id)} [arrowhead=none];`);
  }
  for (const a of drawing.arrows) {
    const style = a.from.startsWith('__shared_') ? ', style=dashed, color="#57606a"' : '';
    lines.push(`  ${q(a.from)} -> ${q(a.to)} [label=${q(a.labels.join('\\n'))}${style}];`);
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
