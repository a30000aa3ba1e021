/**
 * Typed domain errors with a stable code. Each HTTP surface maps codes to its own statuses and
 * envelope (see src/http/errors.ts); nothing here knows about HTTP.
 */
export type ErrorCode =
  | 'validation' // the caller sent something malformed or inconsistent
  | 'unauthenticated' // no credentials, or credentials that are not valid
  | 'forbidden' // valid credentials without the right to do this
  | 'not_found'
  | 'conflict' // the resource's state forbids the action
  | 'illegal_transition' // a machine refused a proposed event
  | 'concurrency' // the stream moved between read and append
  | 'unsupported' // the operation is not supported at this path
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'internal';

export class KeelError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: { title?: string; status?: number; headers?: Record<string, string> } = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'KeelError';
  }
}

export class ValidationError extends KeelError {
  constructor(message: string, details: KeelError['details'] = {}) {
    super('validation', message, details);
    this.name = 'ValidationError';
  }
}

export class NotFoundError extends KeelError {
  constructor(message: string, details: KeelError['details'] = {}) {
    super('not_found', message, details);
    this.name = 'NotFoundError';
  }
}

export class ForbiddenError extends KeelError {
  constructor(message = 'permission denied', details: KeelError['details'] = {}) {
    super('forbidden', message, details);
    this.name = 'ForbiddenError';
  }
}

export class ConflictError extends KeelError {
  constructor(message: string, details: KeelError['details'] = {}) {
    super('conflict', message, details);
    this.name = 'ConflictError';
  }
}

/** A machine refused an event: the stream's current state does not allow it. */
export class IllegalTransitionError extends KeelError {
  constructor(
    readonly stream: string,
    readonly state: string,
    readonly eventType: string,
  ) {
    super('illegal_transition', `${eventType} is not allowed while ${stream} is ${state}`, {
      title: 'transition not allowed',
    });
    this.name = 'IllegalTransitionError';
  }
}

/** The stream's version was not the expected one: someone else appended first. */
export class ConcurrencyError extends KeelError {
  constructor(
    readonly stream: string,
    readonly expected: number,
    readonly actual: number,
  ) {
    super('concurrency', `stream ${stream} is at version ${actual}, expected ${expected}`);
    this.name = 'ConcurrencyError';
  }
}

export const isKeelError = (e: unknown): e is KeelError => e instanceof KeelError;
