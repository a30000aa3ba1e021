/** The AWS error codes the emulator answers with, and the HTTP status AWS uses for each. */
export const ERROR_STATUS = {
  InvalidClientTokenId: 403,
  SignatureDoesNotMatch: 403,
  IncompleteSignature: 400,
  MissingAuthenticationToken: 403,
  ExpiredToken: 403,
  InvalidAction: 400,
  MissingAction: 400,
  NoSuchEntity: 404,
  EntityAlreadyExists: 409,
  LimitExceeded: 409,
  DeleteConflict: 409,
  MalformedPolicyDocument: 400,
  ValidationError: 400,
  InvalidAuthenticationCode: 403,
  AccessDenied: 403,
  InternalFailure: 500,
} as const;

/** One of the AWS error codes in {@link ERROR_STATUS}. */
export type CloudErrorCode = keyof typeof ERROR_STATUS;

/**
 * An error in AWS's own terms. The middleware renders it as an `ErrorResponse` document with
 * the code's status; `Type` is `Receiver` only for faults on the emulator's side.
 */
export class CloudError extends Error {
  constructor(
    readonly code: CloudErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'CloudError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  get type(): 'Sender' | 'Receiver' {
    return this.status >= 500 ? 'Receiver' : 'Sender';
  }
}

/** AWS's wording for a parameter that fails a constraint. */
export function validationError(
  field: string,
  value: string | null,
  constraint: string,
): CloudError {
  const shown = value === null ? 'null' : `'${value}'`;
  return new CloudError(
    'ValidationError',
    `1 validation error detected: Value ${shown} at '${field}' failed to satisfy constraint: ${constraint}`,
  );
}
