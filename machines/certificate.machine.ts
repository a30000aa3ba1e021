import { setup } from 'xstate';

/**
 * The lifecycle of one certificate serial in a certificate authority mount. The stream is keyed
 * by the serial, so a serial can be issued once per mount, whichever issuer signs it.
 *
 * absent  → no certificate has this serial yet
 * issued  → signed and handed out (stored, or only recorded when the role has no_store)
 * revoked → on its issuer's CRL; revoking again is answered idempotently and appends nothing
 * deleted → removed by tidy after expiry; final
 *
 * Expiry is not a state: it is a property of time, read from the certificate's notAfter.
 */

export interface CertificateIssuedData {
  mount: string;
  serial: string;
  issuerId: string;
  /** PEM; empty when the role had no_store (the serial is still reserved) */
  certificate: string;
  notAfter: string;
  commonName: string;
  /** true for CA certificates (roots, intermediates, self-issued) */
  isCa: boolean;
  stored: boolean;
  /**
   * The lease the certificate was issued with (a role's `generate_lease`): revoking the lease
   * revokes the certificate; it ends at `notAfter`.
   */
  leaseId?: string;
  /** The accessor of the token that obtained the lease: revoking the token revokes the lease. */
  leaseToken?: string;
}

export interface CertificateRevokedData {
  mount: string;
  serial: string;
  issuerId: string;
  revokedAt: string;
  /** RFC 5280 reason code; absent means unspecified and is left out of the CRL entry */
  reason?: number;
  /** PEM, present when a certificate that was not stored is revoked by value */
  certificate?: string;
  notAfter: string;
}

export interface CertificateDeletedData {
  mount: string;
  serial: string;
}

export type CertificateEvent =
  | { type: 'CertificateIssued'; data: CertificateIssuedData }
  | { type: 'CertificateRevoked'; data: CertificateRevokedData }
  | { type: 'CertificateDeleted'; data: CertificateDeletedData };

/** The certificate lifecycle; its states are the values of `GET /cert/:serial`'s `state`. */
export const certificateMachine = setup({
  types: { events: {} as CertificateEvent },
}).createMachine({
  id: 'certificate',
  initial: 'absent',
  states: {
    absent: { on: { CertificateIssued: 'issued' } },
    issued: { on: { CertificateRevoked: 'revoked', CertificateDeleted: 'deleted' } },
    revoked: { on: { CertificateDeleted: 'deleted' } },
    deleted: { type: 'final' },
  },
});
