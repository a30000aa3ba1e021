import { describe, expect, it, vi } from 'vitest';
import {
  assign,
  createMachine,
  fromPromise,
  initialTransition,
  log,
  setup,
  transition,
} from 'xstate';
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import { machines } from '../../../machines/index.js';
import { flatFold, whyNotFlat } from '../../../src/core/flat-fold.js';
import { machineDecider } from '../../../src/core/machine-decider.js';
import type { StoredEvent } from '../../../src/core/events.js';
import { accountMachine } from '../../support/ledger/machine.js';

const scope = { self: undefined, system: undefined };
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

describe('whyNotFlat', () => {
  it('finds every lifecycle machine flat', () => {
    for (const machine of [...Object.values(machines), accountMachine as AnyStateMachine]) {
      expect(whyNotFlat(machine)).toBeUndefined();
    }
  });

  it.each([
    [
      'a nested state',
      createMachine({ initial: 'a', states: { a: { initial: 'x', states: { x: {} } } } }),
      'state a is compound',
    ],
    [
      'a parallel state',
      createMachine({ initial: 'a', states: { a: { type: 'parallel', states: { x: {} } } } }),
      'state a is parallel',
    ],
    [
      'an entry action',
      createMachine({ initial: 'a', states: { a: { entry: assign({}) } } }),
      'state a has entry or exit actions',
    ],
    [
      'an exit action on the root',
      createMachine({ initial: 'a', exit: assign({}), states: { a: {} } }),
      'the root has entry or exit actions',
    ],
    [
      'an invoked actor',
      createMachine({
        initial: 'a',
        states: { a: { invoke: { src: fromPromise(() => Promise.resolve(1)) } } },
      }),
      'state a invokes',
    ],
    [
      'an eventless transition',
      createMachine({ initial: 'a', states: { a: { always: 'b' }, b: {} } }),
      'state a has always',
    ],
    [
      'a delayed transition',
      createMachine({ initial: 'a', states: { a: { after: { 10: 'b' } }, b: {} } }),
      'state a has after',
    ],
    [
      'an action other than assign',
      createMachine({ initial: 'a', states: { a: { on: { GO: { actions: log('x') } } } } }),
      'state a runs an action other than assign on GO',
    ],
    [
      'a named action that is not an assign',
      setup({ actions: { shout: () => undefined } }).createMachine({
        initial: 'a',
        states: { a: { on: { GO: { actions: 'shout' } } } },
      }),
      'state a runs an action other than assign on GO',
    ],
    [
      'an output',
      createMachine({ initial: 'a', output: 1, states: { a: { type: 'final' } } }),
      'the machine has an output',
    ],
  ])('refuses %s', (_, machine, reason) => {
    expect(whyNotFlat(machine as AnyStateMachine)).toBe(reason);
    expect(flatFold(machine as AnyStateMachine, scope, (s) => s)).toEqual({ unsupported: reason });
  });
});

describe('flatFold', () => {
  const machine = setup({
    types: { context: {} as { n: number }, events: {} as { type: 'ADD' | 'GO' | 'NOTE' | 'END' } },
    actions: { add: assign({ n: ({ context }) => context.n + 1 }) },
  }).createMachine({
    initial: 'a',
    context: { n: 0 },
    states: {
      a: { on: { ADD: { actions: 'add' }, GO: { target: 'b', actions: 'add' }, NOTE: {} } },
      b: { on: { GO: 'a', END: 'done' } },
      done: { type: 'final', on: {} },
    },
  });

  function counted() {
    const full = vi.fn(
      (s: AnyMachineSnapshot, e: EventObject) =>
        transition(machine, s as never, e as never)[0] as AnyMachineSnapshot,
    );
    const flat = flatFold(machine, scope, full);
    if (!('step' in flat)) throw new Error(flat.unsupported);
    return { step: flat.step, full };
  }

  it('keeps the snapshot for an event nothing handles and for a transition that does nothing', () => {
    const { step, full } = counted();
    const start = initialTransition(machine)[0];
    expect(step(start, { type: 'END' })).toBe(start);
    expect(step(start, { type: 'NOTE' })).toBe(start);
    expect(full).not.toHaveBeenCalled();
  });

  it('takes a transition with a target through xstate once, then by its shape', () => {
    const { step, full } = counted();
    let s = initialTransition(machine)[0];
    s = step(s, { type: 'GO' });
    expect(full).toHaveBeenCalledTimes(1);
    s = step(s, { type: 'GO' });
    s = step(s, { type: 'ADD' });
    s = step(s, { type: 'GO' });
    expect(full).toHaveBeenCalledTimes(2); // a → b, b → a; the second a → b reuses the first
    expect(s.value).toBe('b');
    expect(s.context).toEqual({ n: 3 });
  });

  it('hands a snapshot that is done to xstate', () => {
    const { step, full } = counted();
    let s = initialTransition(machine)[0];
    s = step(step(s, { type: 'GO' }), { type: 'END' });
    expect(s.status).toBe('done');
    full.mockClear();
    expect(step(s, { type: 'GO' }).value).toBe('done');
    expect(full).toHaveBeenCalledTimes(1);
  });
});

describe('flatFold can', () => {
  const guarded = setup({
    types: { context: {} as { n: number }, events: {} as { type: string; n?: number } },
    guards: { big: ({ event }) => (event.n ?? 0) > 5 },
  }).createMachine({
    initial: 'a',
    context: { n: 0 },
    on: { RESET: '.a', PING: {} },
    states: {
      a: {
        on: {
          GO: 'b',
          JUMP: [{ guard: 'big', target: 'b' }, { target: 'a' }],
          MAYBE: { guard: 'big', target: 'b' },
          NOTE: {},
          COUNT: { actions: assign({ n: ({ context }) => context.n + 1 }) },
        },
      },
      b: { on: { 'ANY.*': 'a' } },
    },
  });
  const wildcard = createMachine({
    initial: 'a',
    states: { a: { on: { '*': 'b', STAY: {} } }, b: { type: 'final' } },
  });

  it.each([
    ['a machine with guards, root transitions and partial wildcards', guarded],
    ['a machine with a wildcard', wildcard],
  ])('answers as snapshot.can for %s', (_, machine) => {
    const flat = flatFold(
      machine as AnyStateMachine,
      scope,
      (s, e) => transition(machine as AnyStateMachine, s as never, e as never)[0],
    );
    if (!('step' in flat)) throw new Error(flat.unsupported);
    const events = [
      'GO',
      'JUMP',
      'MAYBE',
      'NOTE',
      'COUNT',
      'RESET',
      'PING',
      'ANY.x',
      'STAY',
      'X',
    ].flatMap((type) => [{ type }, { type, n: 9 }]);
    let state = initialTransition(machine as AnyStateMachine)[0] as AnyMachineSnapshot;
    for (const next of [...events, ...events]) {
      for (const e of events)
        expect(flat.can(state, e), `${String(state.value)} ${e.type}`).toBe(state.can(e));
      state = flat.step(state, next);
    }
  });
});

describe('machineDecider with checkFolds', () => {
  it('throws when the flat fold and transition disagree', () => {
    // An assign that reads outside state differs on its second call: the check sees it.
    let calls = 0;
    const impure = createMachine({
      initial: 'a',
      context: { n: 0 },
      states: { a: { on: { ADD: { actions: assign({ n: () => ++calls }) } } } },
    });
    const checked = machineDecider(impure, { checkFolds: true });
    expect(() => checked.evolve(checked.initialState(), stored('ADD'))).toThrow(
      'machine (machine): the flat fold of ADD gives context {"n":1}, transition gives {"n":2}',
    );
    // The test suite runs with KEEL_CHECK_FOLDS=1, so deciders check by default here.
    expect(() => machineDecider(impure).evolve(checked.initialState(), stored('ADD'))).toThrow(
      'the flat fold of ADD gives context',
    );
    const unchecked = machineDecider(impure, { checkFolds: false });
    expect(unchecked.evolve(unchecked.initialState(), stored('ADD')).context).toEqual({ n: 5 });
  });
});
