import { streamName } from '../../core/streams.js';
import type { Sealed } from '../../core/seal.js';
import type { LeaseEvent } from '../../../machines/lease.machine.js';
import type { StaticRoleEvent } from '../../../machines/static-role.machine.js';
import type { RoleEntry } from './role-schema.js';
import type { RootSettings } from './schema.js';

export type { LeaseEvent } from '../../../machines/lease.machine.js';
export type { StaticRoleEvent } from '../../../machines/static-role.machine.js';

/**
 * Events of the cloud credentials engine. Streams (one per aggregate):
 * - `aws-config:<mount accessor>`: root configuration and lease settings;
 * - `aws-role:<mount accessor>:<name>`: a role;
 * - `aws-static-role:<mount accessor>:<name>`: a static role (events of `machines/static-role.machine.ts`);
 * - `aws-lease:<lease id>`: a lease (events of `machines/lease.machine.ts`).
 * Every event names its mount (accessor and path) so read models need no other lookup.
 */

export interface MountRef {
  /** The mount's accessor: stable for the life of a mount, so a re-enabled path starts empty. */
  accessor: string;
  /** The mount path with its trailing slash, e.g. `aws/`. */
  path: string;
}

export type ConfigEvent =
  | {
      type: 'AwsRootConfigured';
      data: { mount: MountRef; settings: RootSettings; secretKey: Sealed | null };
    }
  | {
      type: 'AwsRootRotated';
      data: {
        mount: MountRef;
        accessKey: string;
        secretKey: Sealed;
        previousAccessKey: string;
        rotatedAt: string;
        scheduled: boolean;
      };
    }
  | {
      type: 'AwsRootRotationFailed';
      data: { mount: MountRef; error: string; attempt: number; retryAt: string };
    }
  | {
      /** A scheduled rotation found outside its rotation_window; the next occurrence is scheduled. */
      type: 'AwsRootRotationSkipped';
      data: { mount: MountRef; dueAt: string; nextAt: string };
    }
  | { type: 'AwsLeaseConfigured'; data: { mount: MountRef; lease: number; leaseMax: number } };

export type RoleEvent =
  | { type: 'AwsRoleWritten'; data: { mount: MountRef; name: string; role: RoleEntry } }
  | { type: 'AwsRoleDeleted'; data: { mount: MountRef; name: string } };

/** Static-role events carry the mount in their stream; the adopted event names it in full. */
export type AwsStaticRoleEvent = StaticRoleEvent;
export type AwsLeaseEvent = LeaseEvent;

export type AwsEvent = ConfigEvent | RoleEvent | StaticRoleEvent | LeaseEvent;

/** Each event type of the engine once: the compiler refuses a type left out or one unknown. */
const AWS_EVENTS: { readonly [T in AwsEvent['type']]: true } = {
  AwsRootConfigured: true,
  AwsRootRotated: true,
  AwsRootRotationFailed: true,
  AwsRootRotationSkipped: true,
  AwsLeaseConfigured: true,
  AwsRoleWritten: true,
  AwsRoleDeleted: true,
  StaticRoleAdopted: true,
  StaticRoleUpdated: true,
  StaticRoleKeyIssued: true,
  StaticRoleRotationStarted: true,
  StaticRoleRotationFailed: true,
  StaticRoleDeleted: true,
  LeaseIssued: true,
  LeaseRenewed: true,
  LeaseRevocationRequested: true,
  LeaseRevocationFailed: true,
  LeaseRevoked: true,
};

/** The event types this engine owns (intents aside: `intents.ts`). */
export const AWS_EVENT_TYPES = Object.keys(AWS_EVENTS) as readonly AwsEvent['type'][];

export const configStream = streamName`aws-config:${'accessor'}`;
export const roleStream = streamName`aws-role:${'accessor'}:${'name'}`;
export const staticRoleStream = streamName`aws-static-role:${'accessor'}:${'name'}`;
export const leaseStream = streamName`aws-lease:${'leaseId'}`;

/** Schedule kinds (rows in the core schedule read model). */
export const TIMER_STATIC_ROTATION = 'aws.static-rotation';
export const TIMER_LEASE_EXPIRY = 'aws.lease-expiry';
export const TIMER_ROOT_ROTATION = 'aws.root-rotation';
