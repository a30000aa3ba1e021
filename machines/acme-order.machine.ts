import { setup } from 'xstate';

/**
 * The lifecycle of one ACME order (RFC 8555 §7.1.6, the order diagram).
 *
 * absent  → no order has this id yet
 * pending → some authorization is not yet valid
 * ready   → every authorization is valid; the client may finalize
 * valid   → finalized: the certificate was issued (Keel signs inside the finalize request, so
 *           the RFC's `processing` is never observable and is not a state)
 * invalid → an authorization failed or was deactivated, or the order expired; final
 */

export interface AcmeIdentifier {
  type: 'dns' | 'ip';
  value: string;
}

export interface AcmeOrderCreatedData {
  mount: string;
  orderId: string;
  accountId: string;
  directory: string;
  identifiers: AcmeIdentifier[];
  authorizationIds: string[];
  notBefore: string;
  notAfter: string;
  expires: string;
}

export interface AcmeOrderIssuedData {
  mount: string;
  orderId: string;
  serial: string;
  /** the leaf and its chain, PEM, as the certificate URL serves them */
  certificate: string;
  notAfter: string;
}

export type AcmeOrderEvent =
  | { type: 'AcmeOrderCreated'; data: AcmeOrderCreatedData }
  | { type: 'AcmeOrderReady'; data: { mount: string; orderId: string } }
  | { type: 'AcmeOrderIssued'; data: AcmeOrderIssuedData }
  | {
      type: 'AcmeOrderInvalidated';
      data: { mount: string; orderId: string; reason: string };
    };

/** The order lifecycle; its states are the order object's `status`. */
export const acmeOrderMachine = setup({
  types: { events: {} as AcmeOrderEvent },
}).createMachine({
  id: 'acme-order',
  initial: 'absent',
  states: {
    absent: { on: { AcmeOrderCreated: 'pending' } },
    pending: { on: { AcmeOrderReady: 'ready', AcmeOrderInvalidated: 'invalid' } },
    ready: { on: { AcmeOrderIssued: 'valid', AcmeOrderInvalidated: 'invalid' } },
    valid: { type: 'final' },
    invalid: { type: 'final' },
  },
});
