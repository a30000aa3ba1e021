import { KeelError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import { systemMetadata as coreSystemMetadata } from '../../core/events.js';
import type { Core } from '../../context.js';
import type { AwsClientFactory, AwsClients } from './clients.js';
import { awsErrorText, isThrottling } from './cloud-calls.js';
import type { MountRef } from './events.js';
import type { AwsReads } from './queries.js';
import type { TemplateEnv } from './template/index.js';
import type { MountTtls } from '../sys/projection.js';

/** The parts of the core the engine uses. */
export type AwsCore = Pick<
  Core,
  'db' | 'store' | 'handler' | 'sealer' | 'clock' | 'ids' | 'logger'
>;

/** What every engine service gets: the core, the read models and the provider's clients. */
export interface EngineDeps {
  core: AwsCore;
  reads: AwsReads;
  /** IAM/STS clients for a mount, rebuilt when its root configuration changes. */
  clientsFor(mount: MountRef): AwsClients;
  templateEnv: TemplateEnv;
  /** The lease TTLs in force on a mount (by accessor): tuned, else the system's. */
  mountTtls(accessor: string): MountTtls;
}

/** Metadata for work the daemon does by itself (timers): no actor, no request. */
export const systemMetadata: AuditMetadata = coreSystemMetadata('aws');

/** Builds the per-mount client cache over a client factory. */
export function mountClients(
  reads: AwsReads,
  sealer: Core['sealer'],
  factory: AwsClientFactory,
): (mount: MountRef) => AwsClients {
  const cache = new Map<string, { fingerprint: string; clients: AwsClients }>();
  return (mount) => {
    const row = reads.config(mount.accessor);
    const fingerprint = JSON.stringify([row?.settings ?? null, row?.secretKey?.$hmac ?? null]);
    const hit = cache.get(mount.accessor);
    if (hit && hit.fingerprint === fingerprint) return hit.clients;
    const secretKey = row?.secretKey ? sealer.unseal(row.secretKey) : '';
    const clients = factory({ settings: row?.settings ?? null, secretKey });
    cache.set(mount.accessor, { fingerprint, clients });
    return clients;
  };
}

/**
 * A provider failure as the reference reports it: 400 with `<step>: <aws error>`, or 502 when the
 * provider throttled the call.
 */
export function providerError(step: string, e: unknown): KeelError {
  const text = `${step}: ${awsErrorText(e)}`;
  return isThrottling(e)
    ? new KeelError('internal', text, { status: 502 })
    : new KeelError('validation', text, { status: 400 });
}

export const addSeconds = (d: Date, seconds: number): Date =>
  new Date(d.getTime() + seconds * 1000);
