import type { AnyStateMachine } from 'xstate';
import { acmeAccountMachine } from './acme-account.machine.js';
import { acmeAuthorizationMachine } from './acme-authorization.machine.js';
import { acmeChallengeMachine } from './acme-challenge.machine.js';
import { acmeOrderMachine } from './acme-order.machine.js';
import { certificateMachine } from './certificate.machine.js';
import { configurationVersionMachine } from './configuration-version.machine.js';
import { leaseMachine } from './lease.machine.js';
import type { MachineName } from './names.js';
import { runMachine } from './run.machine.js';
import { staticRoleMachine } from './static-role.machine.js';

/**
 * Every lifecycle machine, by the name `keel diagram` and the state-diagram pages use. A machine
 * added to `machines/` is registered here, and its name in `names.ts`.
 */
const registry: Readonly<Record<MachineName, AnyStateMachine>> = {
  run: runMachine,
  'configuration-version': configurationVersionMachine,
  certificate: certificateMachine,
  'static-role': staticRoleMachine,
  lease: leaseMachine,
  'acme-account': acmeAccountMachine,
  'acme-order': acmeOrderMachine,
  'acme-authorization': acmeAuthorizationMachine,
  'acme-challenge': acmeChallengeMachine,
};

export const machines: Readonly<Record<string, AnyStateMachine>> = registry;
