/** Who did it, from where, under which request: stored with every event (DESIGN rule 6). */
export interface Actor {
  /** The token accessor: identifies a credential without revealing it. */
  accessor: string;
  /** A display name for people reading the audit trail. */
  name: string;
}

export interface AuditMetadata {
  actor: Actor | null;
  /** Made by Keel for each request; never a client's. */
  requestId: string | null;
  remoteAddress: string | null;
  /** The `X-Request-Id` the client sent, kept apart from `requestId` (absent when none). */
  clientRequestId?: string;
}

/** Metadata for work the system does on its own (reactors, timers, bootstrap). */
export const systemMetadata = (name = 'keel', requestId: string | null = null): AuditMetadata => ({
  actor: { accessor: 'system', name },
  requestId,
  remoteAddress: null,
});

/** An event as a decision proposes it. Types are past tense and name the aggregate. */
export interface NewEvent<T extends string = string, D = unknown> {
  readonly type: T;
  readonly data: D;
}

/** An event as the log holds it. */
export type StoredEvent<E extends NewEvent = NewEvent> = E & {
  /** Global position in the log, from 1, without gaps. */
  readonly position: number;
  readonly stream: string;
  /** Position within the stream, from 1. */
  readonly version: number;
  /** When it was appended, ISO 8601 UTC with milliseconds. */
  readonly time: string;
  readonly metadata: AuditMetadata;
  /** sha256(previous hash ‖ this event), hex. */
  readonly hash: string;
};
