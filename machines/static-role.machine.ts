import { assign, setup } from 'xstate';

/**
 * The lifecycle of a static role: an existing IAM user whose access key Keel adopts and rotates.
 * The machine's events are the domain events of a static-role stream; folding them through the
 * machine gives the role's state, and `can()` decides whether a proposed event is legal.
 *
 * adopting  → the role is written, its first key not yet issued
 * active    → a key is issued and served; the next rotation is scheduled
 * rotating  → a rotation has started (IAM calls in flight; a crash here resumes from the schedule)
 * rotation_failed → the last attempt failed; a retry is scheduled with backoff
 * deleted   → final; the last issued key has been removed
 */

/** Shortest rotation period a static role accepts, in seconds. */
export const MIN_STATIC_ROTATION_SECONDS = 60;

export interface StaticRoleAdoptedData {
  /** The mount's accessor and path. */
  mount: { accessor: string; path: string };
  name: string;
  username: string;
  /** The IAM UserId seen when the role was adopted; later rotations check it still matches. */
  userId: string;
  rotationPeriod: number;
  assumeRoleArn: string;
  assumeRoleSessionName: string;
  externalId: string;
}

export interface StaticRoleUpdatedData {
  username: string;
  userId: string;
  rotationPeriod: number;
  /** now + the new period: an update resets the next rotation. */
  nextRotationAt: string;
}

export interface StaticRoleKeyIssuedData {
  accessKeyId: string;
  /** The secret access key, sealed (`{$sealed,$hmac}` from the core Sealer). */
  secretAccessKey: { $sealed: string; $hmac: string };
  /** The key deleted to make room (the oldest of two), or null. */
  deletedAccessKeyId: string | null;
  issuedAt: string;
  /** When this key is due to be rotated: issuedAt + rotation period. */
  expiresAt: string;
}

export interface StaticRoleRotationStartedData {
  startedAt: string;
  /** When the schedule retries if the attempt never reports back (the process died mid-rotation). */
  resumeAt: string;
}

export interface StaticRoleRotationFailedData {
  error: string;
  attempt: number;
  retryAt: string;
}

export interface StaticRoleDeletedData {
  /** The last key Keel issued, now deleted from the IAM user (null if none was issued). */
  deletedAccessKeyId: string | null;
}

export type StaticRoleEvent =
  | { type: 'StaticRoleAdopted'; data: StaticRoleAdoptedData }
  | { type: 'StaticRoleUpdated'; data: StaticRoleUpdatedData }
  | { type: 'StaticRoleKeyIssued'; data: StaticRoleKeyIssuedData }
  | { type: 'StaticRoleRotationStarted'; data: StaticRoleRotationStartedData }
  | { type: 'StaticRoleRotationFailed'; data: StaticRoleRotationFailedData }
  | { type: 'StaticRoleDeleted'; data: StaticRoleDeletedData };

export interface StaticRoleContext {
  rotationPeriod: number;
  /** The key currently served by static-creds. */
  currentKey: string | null;
  /** Consecutive failed attempts since the last issued key; drives the backoff. */
  failures: number;
}

/** Delay before retry number `attempt` (1-based): 10 s doubling, capped at 10 minutes. */
export const rotationRetryDelaySeconds = (attempt: number): number =>
  Math.min(10 * 2 ** Math.max(0, attempt - 1), 600);

export const staticRoleMachine = setup({
  types: {
    context: {} as StaticRoleContext,
    events: {} as StaticRoleEvent,
  },
  guards: {
    periodIsAllowed: ({ event }) =>
      (event.type === 'StaticRoleAdopted' || event.type === 'StaticRoleUpdated') &&
      event.data.rotationPeriod >= MIN_STATIC_ROTATION_SECONDS,
    isNewKey: ({ context, event }) =>
      event.type === 'StaticRoleKeyIssued' &&
      event.data.accessKeyId !== '' &&
      event.data.accessKeyId !== context.currentKey,
    isNextAttempt: ({ context, event }) =>
      event.type === 'StaticRoleRotationFailed' && event.data.attempt === context.failures + 1,
  },
  actions: {
    adopt: assign(({ event }) =>
      event.type === 'StaticRoleAdopted'
        ? { rotationPeriod: event.data.rotationPeriod, currentKey: null, failures: 0 }
        : {},
    ),
    update: assign(({ event }) =>
      event.type === 'StaticRoleUpdated' ? { rotationPeriod: event.data.rotationPeriod } : {},
    ),
    issue: assign(({ event }) =>
      event.type === 'StaticRoleKeyIssued'
        ? { currentKey: event.data.accessKeyId, failures: 0 }
        : {},
    ),
    fail: assign(({ context }) => ({ failures: context.failures + 1 })),
    forget: assign({ currentKey: null }),
  },
}).createMachine({
  id: 'staticRole',
  initial: 'new',
  context: { rotationPeriod: 0, currentKey: null, failures: 0 },
  states: {
    new: {
      on: { StaticRoleAdopted: { target: 'adopting', guard: 'periodIsAllowed', actions: 'adopt' } },
    },
    adopting: {
      on: {
        StaticRoleKeyIssued: { target: 'active', guard: 'isNewKey', actions: 'issue' },
        StaticRoleRotationFailed: {
          target: 'rotation_failed',
          guard: 'isNextAttempt',
          actions: 'fail',
        },
        StaticRoleUpdated: { target: 'adopting', guard: 'periodIsAllowed', actions: 'update' },
        // The process died before the first key was recorded: the schedule resumes the adoption.
        StaticRoleRotationStarted: { target: 'rotating' },
        StaticRoleDeleted: { target: 'deleted', actions: 'forget' },
      },
    },
    active: {
      on: {
        StaticRoleRotationStarted: { target: 'rotating' },
        StaticRoleUpdated: { target: 'active', guard: 'periodIsAllowed', actions: 'update' },
        StaticRoleDeleted: { target: 'deleted', actions: 'forget' },
      },
    },
    rotating: {
      on: {
        StaticRoleKeyIssued: { target: 'active', guard: 'isNewKey', actions: 'issue' },
        StaticRoleRotationFailed: {
          target: 'rotation_failed',
          guard: 'isNextAttempt',
          actions: 'fail',
        },
        // A resumed attempt after a crash starts again from here.
        StaticRoleRotationStarted: { target: 'rotating' },
        StaticRoleUpdated: { target: 'rotating', guard: 'periodIsAllowed', actions: 'update' },
        StaticRoleDeleted: { target: 'deleted', actions: 'forget' },
      },
    },
    rotation_failed: {
      on: {
        StaticRoleRotationStarted: { target: 'rotating' },
        StaticRoleUpdated: {
          target: 'rotation_failed',
          guard: 'periodIsAllowed',
          actions: 'update',
        },
        StaticRoleDeleted: { target: 'deleted', actions: 'forget' },
      },
    },
    deleted: { type: 'final' },
  },
});

/** Wire names of the states, in lifecycle order. */
export const STATIC_ROLE_STATES = [
  'new',
  'adopting',
  'active',
  'rotating',
  'rotation_failed',
  'deleted',
] as const;
export type StaticRoleState = (typeof STATIC_ROLE_STATES)[number];
