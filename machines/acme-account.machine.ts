import { setup } from 'xstate';

/**
 * The lifecycle of one ACME account (RFC 8555 §7.1.6) in a certificate authority mount.
 *
 * absent      → no account has this id yet
 * valid       → registered; its key signs requests, its contact can change, its key can roll over
 * deactivated → deactivated by its holder; final, every later request with its key is refused
 */

export interface AcmeAccountCreatedData {
  mount: string;
  accountId: string;
  /** the account key as a public JWK (canonical members only) */
  jwk: Record<string, string>;
  /** RFC 7638 thumbprint of the key, base64url */
  thumbprint: string;
  contact: string[];
  /** the directory the account was made through: '' (the mount's), `roles/x`, `issuer/y`… */
  directory: string;
  /** the external account binding key used, if any */
  eabId: string;
  createdAt: string;
}

export type AcmeAccountEvent =
  | { type: 'AcmeAccountCreated'; data: AcmeAccountCreatedData }
  | { type: 'AcmeAccountUpdated'; data: { mount: string; accountId: string; contact: string[] } }
  | {
      type: 'AcmeAccountKeyChanged';
      data: { mount: string; accountId: string; jwk: Record<string, string>; thumbprint: string };
    }
  | { type: 'AcmeAccountDeactivated'; data: { mount: string; accountId: string } };

/** The account lifecycle; its states are the account object's `status`. */
export const acmeAccountMachine = setup({
  types: { events: {} as AcmeAccountEvent },
}).createMachine({
  id: 'acme-account',
  initial: 'absent',
  states: {
    absent: { on: { AcmeAccountCreated: 'valid' } },
    valid: {
      on: {
        AcmeAccountUpdated: 'valid',
        AcmeAccountKeyChanged: 'valid',
        AcmeAccountDeactivated: 'deactivated',
      },
    },
    deactivated: { type: 'final' },
  },
});
