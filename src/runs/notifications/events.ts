import type { Sealed } from '../../core/seal.js';

/**
 * Notification configurations of a workspace (generic webhooks) and their deliveries, on the
 * configuration's stream (its id, `nc-…`). The HMAC token is sealed in the event that records it.
 */

/** The run triggers the reference names. */
export const NOTIFICATION_TRIGGERS = [
  'run:created',
  'run:planning',
  'run:needs_attention',
  'run:applying',
  'run:completed',
  'run:errored',
] as const;
export type NotificationTrigger = (typeof NOTIFICATION_TRIGGERS)[number];

export type NotificationConfigurationCreated = {
  type: 'NotificationConfigurationCreated';
  data: {
    id: string;
    organization: string;
    workspaceId: string;
    name: string;
    url: string;
    enabled: boolean;
    triggers: NotificationTrigger[];
    token: Sealed | null;
  };
};
export type NotificationConfigurationUpdated = {
  type: 'NotificationConfigurationUpdated';
  data: {
    id: string;
    name?: string;
    url?: string;
    enabled?: boolean;
    triggers?: NotificationTrigger[];
    /** A new token (sealed), or null to stop signing. */
    token?: Sealed | null;
  };
};
export type NotificationConfigurationDeleted = {
  type: 'NotificationConfigurationDeleted';
  data: { id: string };
};

/** One attempt to deliver one notification: what was sent and what came back. */
export type NotificationDeliveryAttempted = {
  type: 'NotificationDeliveryAttempted';
  data: {
    id: string;
    /** One notification: `<run id>:<run event version>`, or `verify:<n>` for a verify action. */
    delivery: string;
    attempt: number;
    trigger: NotificationTrigger | 'verification';
    url: string;
    /** The payload, byte for byte as it was sent (it holds no secret). */
    payload: string;
    sentAt: string;
    /** The HTTP status, or null when no answer came. */
    code: number | null;
    /** The start of the answer's body, or why none came. */
    body: string;
    successful: boolean;
  };
};

export type NotificationEvent =
  | NotificationConfigurationCreated
  | NotificationConfigurationUpdated
  | NotificationConfigurationDeleted
  | NotificationDeliveryAttempted;
