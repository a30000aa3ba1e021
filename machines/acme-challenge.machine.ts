import { setup } from 'xstate';

/**
 * The lifecycle of one ACME challenge (RFC 8555 §7.1.6, the challenge diagram), with Keel's
 * retries made explicit: validation runs off the request path, and a failed attempt that may
 * still succeed (the client's server not up yet) is recorded and tried again later.
 *
 * absent     → not offered
 * pending    → offered; the client has not asked for validation yet
 * processing → the client asked; a validation is due (a schedule row), attempts are recorded
 * valid      → validated; final
 * invalid    → the last attempt failed; final
 */

export type AcmeChallengeType = 'http-01' | 'dns-01' | 'tls-alpn-01';

export interface AcmeChallengeRef {
  mount: string;
  authorizationId: string;
  challengeType: AcmeChallengeType;
}

export type AcmeChallengeEvent =
  | { type: 'AcmeChallengeOffered'; data: AcmeChallengeRef }
  | {
      type: 'AcmeChallengeStarted';
      data: AcmeChallengeRef & { keyAuthorization: string; dueAt: string };
    }
  | {
      type: 'AcmeChallengeAttemptFailed';
      data: AcmeChallengeRef & { attempt: number; error: string; retryAt: string };
    }
  | { type: 'AcmeChallengeValidated'; data: AcmeChallengeRef & { validatedAt: string } }
  | { type: 'AcmeChallengeFailed'; data: AcmeChallengeRef & { error: string } };

/** The challenge lifecycle; its states are the challenge object's `status`. */
export const acmeChallengeMachine = setup({
  types: { events: {} as AcmeChallengeEvent },
}).createMachine({
  id: 'acme-challenge',
  initial: 'absent',
  states: {
    absent: { on: { AcmeChallengeOffered: 'pending' } },
    pending: { on: { AcmeChallengeStarted: 'processing' } },
    processing: {
      on: {
        AcmeChallengeAttemptFailed: 'processing',
        AcmeChallengeValidated: 'valid',
        AcmeChallengeFailed: 'invalid',
      },
    },
    valid: { type: 'final' },
    invalid: { type: 'final' },
  },
});
