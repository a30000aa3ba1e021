import { createActor, initialTransition } from 'xstate';
import type { AnyMachineSnapshot, AnyStateMachine, EventFromLogic, SnapshotFrom } from 'xstate';
import type { Decider } from './command-handler.js';
import type { NewEvent, StoredEvent } from './events.js';

/** A state value as text: `planning`, or `rotating.retry` for nested states. */
export function stateName(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object') {
    return Object.entries(value)
      .map(([k, v]) => `${k}.${stateName(v)}`)
      .join(',');
  }
  return String(value);
}

/**
 * Turn a pure machine (no invoke, no after) into a decider. The machine's events are the domain
 * events themselves, so the fold is xstate's `transition` and the guard is `snapshot.can` (ADR
 * 0101). Event types the machine does not know (comments, notes) are allowed and leave the state
 * as it is.
 */
export function machineDecider<M extends AnyStateMachine>(
  machine: M,
): Decider<SnapshotFrom<M>, EventFromLogic<M> & NewEvent> {
  type S = SnapshotFrom<M>;
  type E = EventFromLogic<M> & NewEvent;
  const events: unknown = machine.events;
  const scope = inertScope(machine);
  const initial = initialTransition(machine as AnyStateMachine)[0] as S;
  const transition = (machine.transition as Transition).bind(machine);
  const known = new Set<string>(
    Array.isArray(events) ? events.filter((e): e is string => typeof e === 'string') : [],
  );
  return {
    // Snapshots are immutable (every transition returns a new one), so one initial snapshot serves all.
    initialState: () => initial,
    evolve: (state: S, event: StoredEvent<E>) =>
      known.has((event as NewEvent).type) ? (transition(state, event, scope) as S) : state,
    accepts: (state: S, event: E) =>
      !known.has((event as NewEvent).type) || (state as AnyMachineSnapshot).can(event),
    describe: (state: S) => stateName((state as { value: unknown }).value),
  };
}

/** `machine.transition` with the actor scope it takes as its third argument. */
type Transition = (state: unknown, event: unknown, scope: unknown) => AnyMachineSnapshot;

/**
 * xstate's `transition()` builds a fresh inert actor and system on every call, which costs more
 * than the transition itself. Machines here are pure (no invoke, no spawn, no side effects: see
 * machines/README.md), so one inert scope per machine serves every fold; actions that would
 * need executing are dropped, exactly as `transition()` returns them unexecuted.
 */
function inertScope(machine: AnyStateMachine): Record<string, unknown> {
  const self = createActor(machine);
  const ignore = () => undefined;
  return {
    self,
    id: self.id,
    sessionId: self.sessionId,
    logger: ignore,
    defer: ignore,
    emit: ignore,
    system: self.system,
    stopChild: ignore,
    actionExecutor: ignore,
  };
}
