import { KeelError, ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import { configDecider } from './commands.js';
import { CloudStepError, awsErrorText } from './cloud-calls.js';
import { deleteAccessKey, createOwnKey } from './key-calls.js';
import type { CloudIntents, OpenIntent } from './intents.js';
import type { EngineDeps } from './deps.js';
import { addSeconds, systemMetadata } from './deps.js';
import type { ConfigEvent, MountRef } from './events.js';
import { configStream } from './events.js';
import type { FieldData } from '../fields.js';
import type { CONFIG_LEASE, CONFIG_ROOT } from './paths.js';
import { nextRootRotation, retryAt } from './projection.js';
import { applyRootWrite, parseLeaseWrite } from './schema.js';
import { DEFAULT_USERNAME_TEMPLATE } from './template/index.js';

/** Root configuration, its rotation (manual and scheduled) and the lease settings of a mount. */
export class RootService {
  constructor(
    private readonly d: EngineDeps,
    private readonly intents: CloudIntents,
  ) {}

  private append(mount: MountRef, events: ConfigEvent[], metadata: AuditMetadata) {
    return this.d.core.handler.handle(
      configStream(mount.accessor),
      configDecider,
      () => events,
      metadata,
    );
  }

  /** POST config/root: validates, seals the secret key, stores (partial update). */
  async write(
    mount: MountRef,
    raw: FieldData<typeof CONFIG_ROOT.fields>,
    metadata: AuditMetadata,
  ): Promise<void> {
    const row = this.d.reads.config(mount.accessor);
    const { settings, secretKey } = applyRootWrite(
      row?.settings ?? null,
      raw,
      DEFAULT_USERNAME_TEMPLATE,
    );
    // A new access key without a new secret would pair the wrong secret; an unchanged key keeps its secret.
    const sealed =
      secretKey !== undefined
        ? secretKey === ''
          ? null
          : this.d.core.sealer.seal(secretKey)
        : settings.accessKey === ''
          ? null
          : (row?.secretKey ?? null);
    if (settings.accessKey !== '' && sealed === null) {
      throw new ValidationError('secret_key must be given with access_key');
    }
    await this.append(
      mount,
      [{ type: 'AwsRootConfigured', data: { mount, settings, secretKey: sealed } }],
      metadata,
    );
  }

  read(mount: MountRef) {
    return this.d.reads.config(mount.accessor)?.settings ?? null;
  }

  /**
   * config/rotate-root (research §5.1): GetUser → CreateAccessKey → store the new key →
   * DeleteAccessKey(old) with the old credentials. Returns the new access key id.
   */
  async rotate(mount: MountRef, metadata: AuditMetadata, scheduled = false): Promise<string> {
    const row = this.d.reads.config(mount.accessor);
    if (!row?.settings)
      throw new KeelError('internal', 'no configuration found for config/root', { status: 500 });
    if (row.settings.accessKey === '' || row.secretKey === null) {
      throw new ValidationError(
        'Cannot call config/rotate-root when either access_key or secret_key is empty',
      );
    }
    const oldClients = this.d.clientsFor(mount);
    const oldIam = oldClients.iam();
    const previous = row.settings.accessKey;
    const pending: { intent?: OpenIntent } = {};
    let created: Awaited<ReturnType<typeof createOwnKey>>;
    try {
      created = await createOwnKey(oldIam, async (username, known) => {
        pending.intent = await this.intents.record(
          mount,
          { kind: 'root_key', username, previous, known },
          metadata,
        );
      });
    } catch (e) {
      if (pending.intent) await this.intents.undo(pending.intent, metadata);
      throw new KeelError('internal', e instanceof CloudStepError ? e.message : String(e), {
        status: 500,
      });
    }
    const intent = pending.intent as OpenIntent;
    try {
      await this.append(
        mount,
        [
          {
            type: 'AwsRootRotated',
            data: {
              mount,
              accessKey: created.accessKeyId,
              secretKey: this.d.core.sealer.seal(created.secretAccessKey),
              previousAccessKey: previous,
              rotatedAt: this.d.core.clock.now().toISOString(),
              scheduled,
            },
          },
        ],
        metadata,
      );
    } catch (e) {
      await this.intents.undo(intent, metadata);
      throw e;
    }
    try {
      await deleteAccessKey(oldIam, created.userName, previous);
    } catch (e) {
      // The intent stays open: the next start deletes the old key.
      throw new KeelError('internal', `error deleting old access key: ${awsErrorText(e)}`, {
        status: 500,
      });
    }
    await this.intents.settle(intent.intentId, 'completed', metadata);
    return created.accessKeyId;
  }

  /** The scheduled root rotation timer: rotate, or skip an occurrence found outside its window. */
  async fireScheduled(mount: MountRef, dueAt: string): Promise<void> {
    const row = this.d.reads.config(mount.accessor);
    const s = row?.settings;
    if (!s || nextRootRotation(s, dueAt) === null) return;
    const now = this.d.core.clock.now();
    if (
      s.rotationWindow > 0 &&
      now.getTime() > new Date(dueAt).getTime() + s.rotationWindow * 1000
    ) {
      const nextAt = nextRootRotation(s, now.toISOString()) as string;
      await this.append(
        mount,
        [{ type: 'AwsRootRotationSkipped', data: { mount, dueAt, nextAt } }],
        systemMetadata,
      );
      return;
    }
    try {
      await this.rotate(mount, systemMetadata, true);
    } catch (e) {
      const attempt =
        this.d.core.handler.load(configStream(mount.accessor), configDecider).state.rootFailures +
        1;
      this.d.core.logger.warn(
        { mount: mount.path, attempt, err: (e as Error).message },
        'scheduled root rotation failed',
      );
      await this.append(
        mount,
        [
          {
            type: 'AwsRootRotationFailed',
            data: { mount, error: (e as Error).message, attempt, retryAt: retryAt(now, attempt) },
          },
        ],
        systemMetadata,
      );
    }
  }

  /** POST config/lease. */
  async writeLease(
    mount: MountRef,
    raw: FieldData<typeof CONFIG_LEASE.fields>,
    metadata: AuditMetadata,
  ): Promise<void> {
    const { lease, leaseMax } = parseLeaseWrite(raw);
    await this.append(
      mount,
      [{ type: 'AwsLeaseConfigured', data: { mount, lease, leaseMax } }],
      metadata,
    );
  }

  /** The lease settings in force (stored, else the mount's TTLs: tuned, else the system's). */
  lease(mount: MountRef): { lease: number; leaseMax: number } {
    const row = this.d.reads.config(mount.accessor);
    const ttls = this.d.mountTtls(mount.accessor);
    return {
      lease: row?.lease ?? ttls.defaultTtl,
      leaseMax: row?.leaseMax ?? ttls.maxTtl,
    };
  }

  /** The iam_user lease TTL and its max end, from the lease settings. */
  leaseWindow(mount: MountRef, from: Date): { ttl: number; expiresAt: Date; maxExpiresAt: Date } {
    const { lease, leaseMax } = this.lease(mount);
    const ttls = this.d.mountTtls(mount.accessor);
    const max = leaseMax > 0 ? leaseMax : ttls.maxTtl;
    const ttl = Math.min(lease > 0 ? lease : ttls.defaultTtl, max);
    return { ttl, expiresAt: addSeconds(from, ttl), maxExpiresAt: addSeconds(from, max) };
  }
}
