import { getShortestPaths } from '@xstate/graph';
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import { transition } from 'xstate';

/**
 * Graph paths of a lifecycle machine for model tests: for every transition the machine defines,
 * the shortest event sequence that takes it last (from shortest paths to every state, with
 * `serializeState` keeping loops finite, DESIGN §3).
 */

export interface Edge<E extends EventObject> {
  /** `from|event|to` (a targetless transition stays where it is). */
  key: string;
  steps: E[];
}

/** The events to try in a state: a fixed list, or one computed from the snapshot. */
export type EventsFor<E extends EventObject> = E[] | ((s: AnyMachineSnapshot) => E[]);

const stateOf = (s: AnyMachineSnapshot) => String(s.value);

/** Every transition the machine defines, as `from|event|to`. */
export function definedTransitions(machine: AnyStateMachine): Set<string> {
  const out = new Set<string>();
  for (const [from, node] of Object.entries(machine.root.states)) {
    for (const [event, candidates] of node.transitions) {
      for (const t of candidates) out.add(`${from}|${event}|${t.target?.[0]?.key ?? from}`);
    }
  }
  return out;
}

/** For each transition reachable with `events`, the shortest event sequence that takes it last. */
export function edgesToCover<E extends EventObject>(
  machine: AnyStateMachine,
  events: EventsFor<E>,
  serializeState: (s: AnyMachineSnapshot) => string,
): Edge<E>[] {
  const list = (s: AnyMachineSnapshot) => (typeof events === 'function' ? events(s) : events);
  const paths = getShortestPaths(machine, { events: list, serializeState });
  const edges = new Map<string, Edge<E>>();
  const sorted = [...paths].sort((a, b) => a.steps.length - b.steps.length);
  for (const path of sorted) {
    const steps = path.steps.map((s) => s.event as E).filter((e) => !e.type.startsWith('xstate.'));
    const state = path.state as AnyMachineSnapshot;
    for (const event of list(state)) {
      if (!state.can(event)) continue;
      const [next] = transition(machine, state, event);
      const key = `${stateOf(state)}|${event.type}|${stateOf(next)}`;
      if (!edges.has(key)) edges.set(key, { key, steps: [...steps, event] });
    }
  }
  return [...edges.values()].sort((a, b) => a.key.localeCompare(b.key));
}

/** The transitions the machine defines that no edge takes. */
export function uncovered<E extends EventObject>(
  machine: AnyStateMachine,
  edges: Edge<E>[],
): string[] {
  const covered = new Set(edges.map((e) => e.key));
  return [...definedTransitions(machine)].filter((k) => !covered.has(k));
}

/** Every state an edge leaves or enters, sorted. */
export function statesReached<E extends EventObject>(edges: Edge<E>[]): string[] {
  const out = new Set(edges.flatMap((e) => e.key.split('|').filter((_, i) => i !== 1)));
  return [...out].sort();
}
