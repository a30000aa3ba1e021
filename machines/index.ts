import type { AnyStateMachine } from 'xstate';

/**
 * Every lifecycle machine, by the name `keel diagram` and the state-diagram pages use. A machine
 * added to `machines/` is registered here.
 */
export const machines: Readonly<Record<string, AnyStateMachine>> = {};
