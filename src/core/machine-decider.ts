import { isDeepStrictEqual } from 'node:util';
import { createActor, initialTransition } from 'xstate';
import type {
  AnyMachineSnapshot,
  AnyStateMachine,
  EventFromLogic,
  EventObject,
  SnapshotFrom,
} from 'xstate';
import type { Decider } from './command-handler.js';
import type { NewEvent, StoredEvent } from './events.js';
import type { FlatFold, FoldScope, FoldStep } from './flat-fold.js';
import { flatFold } from './flat-fold.js';

let checkingFolds = false;

/**
 * With checking on (`config.checkFolds`, `KEEL_CHECK_FOLDS=1`, set by `createApp`) every flat fold
 * step is also taken through xstate's `transition` and every legality check through
 * `snapshot.can`, and the answers compared; a difference throws. The test suite runs with it on.
 * It holds for the whole process, deciders made before the call included.
 */
export function checkFolds(on: boolean): void {
  checkingFolds = on;
}

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
 * events themselves, so the fold is `transition` and the guard is `snapshot.can`. Event types the
 * machine does not know (comments, notes) are allowed and leave the state as it is. A flat
 * machine folds through `flatFold` (ADR 0007), which gives the snapshots `transition` gives.
 */
export function machineDecider<M extends AnyStateMachine>(
  machine: M,
  options: { checkFolds?: boolean } = {},
): Decider<SnapshotFrom<M>, EventFromLogic<M> & NewEvent> {
  type S = SnapshotFrom<M>;
  type E = EventFromLogic<M> & NewEvent;
  const events: unknown = machine.events;
  const scope = inertScope(machine);
  const initial = initialTransition(machine as AnyStateMachine)[0] as S;
  const full: FoldStep = (state, event) =>
    (machine.transition as (s: unknown, e: unknown, scope: unknown) => AnyMachineSnapshot)(
      state,
      event,
      scope,
    );
  const flat = flatFold(machine, scope, full);
  const plain: FlatFold = 'step' in flat ? flat : { step: full, can: (state, e) => state.can(e) };
  const check = 'step' in flat ? checked(machine, flat, full) : plain;
  const fold = (): FlatFold => ((options.checkFolds ?? checkingFolds) ? check : plain);
  const known = new Set<string>(
    Array.isArray(events) ? events.filter((e): e is string => typeof e === 'string') : [],
  );
  return {
    // Snapshots are immutable (every transition returns a new one), so one initial snapshot serves all.
    initialState: () => initial,
    evolve: (state: S, event: StoredEvent<E>) =>
      known.has((event as NewEvent).type) ? (fold().step(state, event) as S) : state,
    accepts: (state: S, event: E) =>
      !known.has((event as NewEvent).type) || fold().can(state, event),
    describe: (state: S) => stateName((state as { value: unknown }).value),
  };
}

/**
 * The flat fold, also taking every step through `full` and every check through `snapshot.can`,
 * throwing when they differ.
 */
function checked(machine: AnyStateMachine, flat: FlatFold, full: FoldStep): FlatFold {
  const differ = (what: string, event: EventObject, fast: unknown, slow: unknown) =>
    new Error(
      `machine ${machine.id}: the flat fold of ${event.type} gives ${what} ` +
        `${JSON.stringify(fast)}, transition gives ${JSON.stringify(slow)}`,
    );
  return {
    step: (state, event) => {
      const fast = flat.step(state, event);
      const slow = full(state, event);
      for (const key of ['value', 'context', 'status', 'output', 'error'] as const) {
        if (!isDeepStrictEqual(fast[key], slow[key]))
          throw differ(key, event, fast[key], slow[key]);
      }
      return fast;
    },
    can: (state, event) => {
      const fast = flat.can(state, event);
      const slow = state.can(event);
      if (fast !== slow) throw differ('can', event, fast, slow);
      return fast;
    },
  };
}

/**
 * xstate's `transition()` builds a fresh inert actor and system on every call, which costs more
 * than the transition itself. Machines here are pure (no invoke, no spawn, no side effects: see
 * machines/README.md), so one inert scope per machine serves every fold; actions that would
 * need executing are dropped, exactly as `transition()` returns them unexecuted.
 */
function inertScope(machine: AnyStateMachine): FoldScope & Record<string, unknown> {
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
