import { setup } from 'xstate';
import type { AcmeIdentifier } from './acme-order.machine.js';

/**
 * The lifecycle of one ACME authorization (RFC 8555 §7.1.6, the authorization diagram).
 *
 * absent      → no authorization has this id yet
 * pending     → waiting for one of its challenges to succeed
 * valid       → a challenge succeeded
 * invalid     → a challenge failed or it expired; final
 * deactivated → the client gave it up; final
 */

export interface AcmeAuthorizationCreatedData {
  mount: string;
  authorizationId: string;
  orderId: string;
  accountId: string;
  identifier: AcmeIdentifier;
  wildcard: boolean;
  /** the challenge types offered, each its own stream */
  challenges: ('http-01' | 'dns-01' | 'tls-alpn-01')[];
  /** one token shared by the challenges, base64url */
  token: string;
  expires: string;
}

export type AcmeAuthorizationEvent =
  | { type: 'AcmeAuthorizationCreated'; data: AcmeAuthorizationCreatedData }
  | { type: 'AcmeAuthorizationValidated'; data: { mount: string; authorizationId: string } }
  | {
      type: 'AcmeAuthorizationInvalidated';
      data: { mount: string; authorizationId: string; reason: string };
    }
  | { type: 'AcmeAuthorizationDeactivated'; data: { mount: string; authorizationId: string } };

/** The authorization lifecycle; its states are the authorization object's `status`. */
export const acmeAuthorizationMachine = setup({
  types: { events: {} as AcmeAuthorizationEvent },
}).createMachine({
  id: 'acme-authorization',
  initial: 'absent',
  states: {
    absent: { on: { AcmeAuthorizationCreated: 'pending' } },
    pending: {
      on: {
        AcmeAuthorizationValidated: 'valid',
        AcmeAuthorizationInvalidated: 'invalid',
        AcmeAuthorizationDeactivated: 'deactivated',
      },
    },
    valid: { on: { AcmeAuthorizationDeactivated: 'deactivated' } },
    invalid: { type: 'final' },
    deactivated: { type: 'final' },
  },
});
