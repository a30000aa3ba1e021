import type { AnyStateMachine } from 'xstate';
import { leaseMachine } from './lease.machine.js';
import { staticRoleMachine } from './static-role.machine.js';

/**
 * Every lifecycle machine, by the name `keel diagram` and the state-diagram pages use. A machine
 * added to `machines/` is registered here.
 */
export const machines: Readonly<Record<string, AnyStateMachine>> = {
  'static-role': staticRoleMachine,
  lease: leaseMachine,
};
