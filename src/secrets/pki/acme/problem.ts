/**
 * An ACME problem document (RFC 8555 §6.7, RFC 7807): what every ACME path answers on error,
 * as `application/problem+json`.
 */
export type AcmeErrorType =
  | 'accountDoesNotExist'
  | 'alreadyRevoked'
  | 'badCSR'
  | 'badNonce'
  | 'badPublicKey'
  | 'badRevocationReason'
  | 'badSignatureAlgorithm'
  | 'connection'
  | 'dns'
  | 'externalAccountRequired'
  | 'incorrectResponse'
  | 'invalidContact'
  | 'malformed'
  | 'orderNotReady'
  | 'rejectedIdentifier'
  | 'serverInternal'
  | 'tls'
  | 'unauthorized'
  | 'unsupportedContact'
  | 'unsupportedIdentifier';

const STATUS: Readonly<Partial<Record<AcmeErrorType, number>>> = {
  accountDoesNotExist: 400,
  badNonce: 400,
  unauthorized: 403,
  orderNotReady: 403,
  serverInternal: 500,
};

export class AcmeProblem extends Error {
  readonly status: number;

  constructor(
    readonly kind: AcmeErrorType,
    detail: string,
    status?: number,
    /** a resource the problem is about, sent as `Location` (key-change's conflicting account) */
    readonly location?: string,
  ) {
    super(detail);
    this.name = 'AcmeProblem';
    this.status = status ?? STATUS[kind] ?? 400;
  }

  get body(): { type: string; detail: string; status: number } {
    return {
      type: `urn:ietf:params:acme:error:${this.kind}`,
      detail: this.message,
      status: this.status,
    };
  }
}

export const malformed = (detail: string) => new AcmeProblem('malformed', detail);
export const unauthorized = (detail: string) => new AcmeProblem('unauthorized', detail);

/**
 * An account, order or key of one ACME directory used through another: the reference's answer
 * (`malformed`, "account part of different ACME directory path").
 */
export const otherDirectory = (what = 'account') =>
  malformed(`${what} part of different ACME directory path`);
