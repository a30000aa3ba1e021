import { describe, expect, it } from 'vitest';
import { assign, createMachine, setup, transition } from 'xstate';
import type { AnyMachineSnapshot } from 'xstate';
import type { StoredEvent } from '../../../src/core/events.js';
import { machineDecider, stateName } from '../../../src/core/machine-decider.js';

const stored = (type: string, data: object = {}) =>
  ({
    type,
    data,
    position: 1,
    stream: 's',
    version: 1,
    time: '',
    hash: '',
  }) as unknown as StoredEvent;

const machine = setup({
  types: {
    context: {} as { n: number },
    events: {} as { type: 'ADD' | 'GO' | 'NOTE' | 'END' | 'BIG'; data: { n?: number } },
  },
  guards: { big: ({ event }) => (event.data.n ?? 0) > 5 },
  actions: { add: assign({ n: ({ context }) => context.n + 1 }) },
}).createMachine({
  id: 'counter',
  initial: 'a',
  context: { n: 0 },
  states: {
    a: {
      on: {
        ADD: { actions: 'add' },
        GO: { target: 'b', actions: 'add' },
        BIG: { guard: 'big', target: 'b' },
        NOTE: {},
      },
    },
    b: { on: { GO: 'a', END: 'done' } },
    done: { type: 'final' },
  },
});

describe('machineDecider', () => {
  const decider = machineDecider(machine);
  const fold = (...events: StoredEvent[]) =>
    events.reduce(
      (s, e) => decider.evolve(s, e as never),
      decider.initialState(),
    ) as AnyMachineSnapshot;

  it('folds as xstate transition does', () => {
    const events = ['ADD', 'GO', 'GO', 'ADD', 'GO', 'END'].map((type) => stored(type));
    let expected = machine.getInitialSnapshot({} as never) as AnyMachineSnapshot;
    for (const e of events) expected = transition(machine, expected as never, e as never)[0];
    const s = fold(...events);
    expect(s.value).toBe('done');
    expect(s.status).toBe('done');
    expect(s.context).toEqual({ n: 4 });
    expect(s.value).toEqual(expected.value);
    expect(s.context).toEqual(expected.context);
  });

  it('serves one initial snapshot', () => {
    expect(decider.initialState()).toBe(decider.initialState());
  });

  it('allows an event type the machine does not know and keeps the state as it is', () => {
    const s = fold(stored('ADD'));
    const unknown = { type: 'SomethingCommented', data: {} };
    expect(decider.accepts!(s, unknown as never)).toBe(true);
    expect(decider.evolve(s, stored('SomethingCommented') as never)).toBe(s);
  });

  it('refuses what snapshot.can refuses: no transition, a failing guard, a final state', () => {
    const a = decider.initialState();
    expect(decider.accepts!(a, { type: 'END', data: {} } as never)).toBe(false);
    expect(decider.accepts!(a, { type: 'BIG', data: { n: 1 } } as never)).toBe(false);
    expect(decider.accepts!(a, { type: 'BIG', data: { n: 9 } } as never)).toBe(true);
    const done = fold(stored('GO'), stored('END'));
    expect(decider.accepts!(done, { type: 'GO', data: {} } as never)).toBe(false);
  });

  it('takes a transition that does nothing as an event the machine does not know', () => {
    // xstate leaves `NOTE: {}` out of `machine.events` (and `can` answers false for it).
    expect(machine.events).not.toContain('NOTE');
    const a = decider.initialState();
    expect(a.can({ type: 'NOTE', data: {} })).toBe(false);
    expect(decider.accepts!(a, { type: 'NOTE', data: {} } as never)).toBe(true);
    expect(decider.evolve(a, stored('NOTE') as never)).toBe(a);
  });

  it('names the state for a refusal', () => {
    expect(decider.describe!(fold(stored('GO')))).toBe('b');
  });
});

describe('stateName', () => {
  it('names top-level and nested states', () => {
    const nested = createMachine({
      initial: 'rotating',
      states: { rotating: { initial: 'retry', states: { retry: {} } } },
    });
    expect(stateName(machineDecider(nested).initialState().value)).toBe('rotating.retry');
    expect(stateName('planning')).toBe('planning');
  });
});
