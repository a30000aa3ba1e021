import type { AnyMachineSnapshot, AnyStateMachine, AnyStateNode, EventObject } from 'xstate';

/** What the fold needs of the scope the machine's actions run in. */
export interface FoldScope {
  self: unknown;
  system: unknown;
}

/** A folding step: the snapshot one event leads to. */
export type FoldStep = (state: AnyMachineSnapshot, event: EventObject) => AnyMachineSnapshot;

/**
 * Why a machine cannot take the flat fold, or `undefined` when it can. A machine is flat when
 * its root's children are all atomic or final states, nothing runs on entry or exit, nothing is
 * invoked, delayed or eventless, and every transition's actions are `assign`s. For such a machine
 * a transition only moves between two top-level states and computes the next context, so the
 * shape of the snapshot it leads to depends on the transition alone.
 */
export function whyNotFlat(machine: AnyStateMachine): string | undefined {
  const root = machine.root;
  if (root.output !== undefined) return 'the machine has an output';
  const nodes: AnyStateNode[] = [root, ...Object.values(root.states)];
  for (const node of nodes) {
    const name = node === root ? 'the root' : `state ${node.key}`;
    if (node !== root && node.type !== 'atomic' && node.type !== 'final') {
      return `${name} is ${node.type}`;
    }
    // Before entry and exit: xstate schedules `after` with entry and exit actions of its own.
    if (node.after.length > 0) return `${name} has after`;
    if (node.entry.length > 0 || node.exit.length > 0) return `${name} has entry or exit actions`;
    if (node.invoke.length > 0) return `${name} invokes`;
    if (node.always !== undefined && node.always.length > 0) return `${name} has always`;
    if (node.output !== undefined) return `${name} has an output`;
    for (const [type, transitions] of node.transitions) {
      for (const t of transitions) {
        for (const action of t.actions as readonly unknown[]) {
          if (assignOf(machine, action) === undefined) {
            return `${name} runs an action other than assign on ${type}`;
          }
        }
      }
    }
  }
  return undefined;
}

/** A flat machine's fold step and legality check. */
export interface FlatFold {
  step: FoldStep;
  /** What `snapshot.can(event)` answers. */
  can: (state: AnyMachineSnapshot, event: EventObject) => boolean;
}

/**
 * The fold of a flat machine (see `whyNotFlat`), or the reason it has none. The transition is the
 * one xstate selects: where a state's first candidate for an event has no guard (and no wildcard
 * could add one), that candidate, whatever the context; otherwise xstate's own selection
 * (`getTransitionData`, guards and all). This step only skips the macrostep's general machinery.
 * A targetless transition keeps the snapshot's shape and gets the new context; a transition with
 * a target takes the shape of the snapshot `full` returned the first time that transition was
 * taken. Snapshots that are no longer active go to `full`, as do the first passes of each
 * transition.
 */
export function flatFold(
  machine: AnyStateMachine,
  scope: FoldScope,
  full: FoldStep,
): FlatFold | { unsupported: string } {
  const reason = whyNotFlat(machine);
  if (reason !== undefined) return { unsupported: reason };
  const shapes = new WeakMap<object, AnyMachineSnapshot>();
  const selections = new Map<unknown, Map<string, Selection>>();
  const select = (state: AnyMachineSnapshot, event: EventObject): readonly Transition[] => {
    let byType = selections.get(state.value);
    if (byType === undefined) {
      byType = new Map();
      selections.set(state.value, byType);
    }
    let selection = byType.get(event.type);
    if (selection === undefined) {
      selection = fixedSelection(machine, state.value, event.type);
      byType.set(event.type, selection);
    }
    if (selection === 'guarded') return machine.getTransitionData(state, event);
    return selection === null ? [] : [selection];
  };
  const step: FoldStep = (state, event) => {
    if (state.status !== 'active') return full(state, event);
    const [transition] = select(state, event);
    if (transition === undefined) return state;
    const actions = transition.actions as readonly unknown[];
    if (transition.target === undefined) {
      if (actions.length === 0) return state;
      return {
        ...state,
        context: contextAfter(machine, scope, actions, state.context as object, event),
      };
    }
    const shape = shapes.get(transition);
    if (shape === undefined) {
      const next = full(state, event);
      shapes.set(transition, next);
      return next;
    }
    return {
      ...shape,
      context: contextAfter(machine, scope, actions, state.context as object, event),
    };
  };
  // As xstate's `can`: some selected transition goes somewhere or does something.
  const can = (state: AnyMachineSnapshot, event: EventObject): boolean =>
    select(state, event).some((t) => t.target !== undefined || t.actions.length > 0);
  return { step, can };
}

type Transition = ReturnType<AnyStateMachine['getTransitionData']>[number];

/** The transition a state always selects for an event type (or none), or `guarded`: it depends. */
type Selection = Transition | null | 'guarded';

/**
 * xstate's selection for a top-level state, where it does not depend on the context or event: a
 * state's candidates are its transitions for the type (a wildcard key could add more: then it
 * depends); the first whose guard passes wins; with none, the root's candidates are asked the
 * same way.
 */
function fixedSelection(machine: AnyStateMachine, value: unknown, type: string): Selection {
  const node = typeof value === 'string' ? machine.root.states[value] : undefined;
  if (node === undefined) return 'guarded';
  for (const source of [node, machine.root]) {
    if ([...source.transitions.keys()].some((key) => key.includes('*'))) return 'guarded';
    const first = source.transitions.get(type)?.[0];
    if (first === undefined) continue;
    return first.guard === undefined ? first : 'guarded';
  }
  return null;
}

interface Assign {
  type: 'xstate.assign';
  assignment: unknown;
}

/** The assign an action reference names (inline, by name, or `{ type, params }`), if it is one. */
function assignOf(machine: AnyStateMachine, action: unknown): Assign | undefined {
  const resolved =
    typeof action === 'function'
      ? action
      : typeof action === 'string'
        ? implementation(machine, action)
        : action !== null && typeof action === 'object' && 'type' in action
          ? implementation(machine, String(action.type))
          : undefined;
  if (resolved === undefined || resolved === null) return undefined;
  const candidate = resolved as Partial<Assign>;
  return candidate.type === 'xstate.assign' && 'assignment' in candidate
    ? (candidate as Assign)
    : undefined;
}

function implementation(machine: AnyStateMachine, name: string): unknown {
  const actions = machine.implementations.actions as Record<string, unknown>;
  return actions[name];
}

type Assigner = (args: object, params: unknown) => unknown;

/**
 * The context after a transition's assigns, each applied as xstate applies it: the partial
 * update (a function of the arguments, or an object of values and functions) merged into a copy.
 */
function contextAfter(
  machine: AnyStateMachine,
  scope: FoldScope,
  actions: readonly unknown[],
  context: object,
  event: EventObject,
): object {
  let current = context;
  for (const action of actions) {
    const { assignment } = assignOf(machine, action) as Assign;
    const params = paramsOf(action, current, event);
    const args = {
      context: current,
      event,
      spawn: noSpawn,
      self: scope.self,
      system: scope.system,
    };
    let partial: unknown;
    if (typeof assignment === 'function') {
      partial = (assignment as Assigner)(args, params);
    } else {
      const update: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(assignment as Record<string, unknown>)) {
        update[key] = typeof value === 'function' ? (value as Assigner)(args, params) : value;
      }
      partial = update;
    }
    current = Object.assign({}, current, partial);
  }
  return current;
}

function paramsOf(action: unknown, context: object, event: EventObject): unknown {
  if (action === null || typeof action !== 'object' || !('params' in action)) return undefined;
  const params = action.params;
  return typeof params === 'function'
    ? (params as (args: object) => unknown)({ context, event })
    : params;
}

function noSpawn(): never {
  throw new Error('machines are pure: an assign may not spawn');
}
