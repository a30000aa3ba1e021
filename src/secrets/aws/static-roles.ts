import { IAMClient } from '@aws-sdk/client-iam';
import { KeelError, NotFoundError, ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { StaticRoleEvent } from '../../../machines/static-role.machine.js';
import { rotationRetryDelaySeconds } from '../../../machines/static-role.machine.js';
import { signAt } from './clients.js';
import { staticRoleDecider } from './commands.js';
import { awsErrorText } from './cloud-calls.js';
import { assumeRole } from './sts-calls.js';
import { deleteAccessKey, getUser, rotateStaticKey } from './key-calls.js';
import type { EngineDeps } from './deps.js';
import { addSeconds, systemMetadata } from './deps.js';
import type { MountRef } from './events.js';
import { staticRoleStream } from './events.js';
import type { FieldData } from '../fields.js';
import type { STATIC_ROLE } from './paths.js';
import type { CloudIntents, OpenIntent } from './intents.js';
import type { StaticRoleRow } from './queries.js';
import type { StaticRoleView } from './presenters.js';
import { checkRotationPeriod, parseStaticRoleWrite } from './schema.js';

/** How long a started rotation may stay silent before the schedule resumes it. */
const RESUME_AFTER_SECONDS = 60;

/**
 * Static roles (research §4): adopt an existing IAM user, keep its key rotated every
 * rotation_period (first key, second key, then always the oldest), serve the current key.
 */
export class StaticRoleService {
  constructor(
    private readonly d: EngineDeps,
    private readonly intents: CloudIntents,
  ) {}

  /** The IAM client for a static role's user (the mount's when the role is gone). */
  iamForRole(mount: MountRef, name: string): Promise<IAMClient> {
    const row = this.d.reads.staticRole(mount.accessor, name);
    return this.iamFor(
      mount,
      row ?? { assumeRoleArn: '', assumeRoleSessionName: '', externalId: '' },
    );
  }

  private append(
    mount: MountRef | { accessor: string },
    name: string,
    events: StaticRoleEvent[],
    metadata: AuditMetadata,
  ) {
    return this.d.core.handler.handle(
      staticRoleStream(mount.accessor, name),
      staticRoleDecider,
      () => events,
      metadata,
    );
  }

  /**
   * IAM client managing the role's user: the mount's, or (cross-account) one signed with
   * credentials from assuming `assume_role_arn` through the mount's STS.
   */
  private async iamFor(
    mount: MountRef,
    row: { assumeRoleArn: string; assumeRoleSessionName: string; externalId: string },
  ): Promise<IAMClient> {
    const clients = this.d.clientsFor(mount);
    if (!row.assumeRoleArn) return clients.iam();
    const sts = await clients.sts();
    const creds = await assumeRole(sts, {
      roleArn: row.assumeRoleArn,
      sessionName: row.assumeRoleSessionName,
      seconds: 900,
      policy: '',
      policyArns: [],
      externalId: row.externalId,
      tags: {},
    });
    const base = clients.iam().config;
    return signAt(
      new IAMClient({
        region: await base.region(),
        endpoint: base.endpoint ? await base.endpoint() : undefined,
        credentials: {
          accessKeyId: creds.accessKeyId,
          secretAccessKey: creds.secretAccessKey,
          sessionToken: creds.sessionToken,
        },
      }),
      this.d.core.clock,
    );
  }

  /** POST static-roles/:name: create (adopt + first key) or update (resets the next rotation). */
  async write(
    mount: MountRef,
    name: string,
    raw: FieldData<typeof STATIC_ROLE.fields>,
    metadata: AuditMetadata,
  ): Promise<StaticRoleView> {
    const existing = this.d.reads.staticRole(mount.accessor, name);
    const input = parseStaticRoleWrite(raw, existing === null);
    const next = {
      username: input.username || existing?.username || '',
      rotationPeriod: input.rotationPeriod ?? existing?.rotationPeriod ?? 0,
      assumeRoleArn: input.assumeRoleArn ?? existing?.assumeRoleArn ?? '',
      assumeRoleSessionName: input.assumeRoleSessionName ?? existing?.assumeRoleSessionName ?? '',
      externalId: input.externalId ?? existing?.externalId ?? '',
    };
    checkRotationPeriod(next.rotationPeriod);
    let iam: IAMClient;
    let user: { userName: string; userId: string };
    try {
      iam = await this.iamFor(mount, next);
      user = await getUser(iam, next.username);
    } catch (e) {
      throw new ValidationError(
        `unable to validate username "${next.username}": ${awsErrorText(e)}`,
      );
    }
    if (existing && existing.username === next.username && existing.userId !== user.userId) {
      throw new ValidationError(
        `AWS GetUser returned a user, but the ID did not match: "${existing.userId}" was requested, but "${user.userId}" was returned`,
      );
    }
    const view: StaticRoleView = { name, ...next, userId: user.userId };
    const now = this.d.core.clock.now();
    if (existing) {
      const nextRotationAt = addSeconds(now, next.rotationPeriod).toISOString();
      await this.append(
        mount,
        name,
        [
          {
            type: 'StaticRoleUpdated',
            data: {
              username: next.username,
              userId: user.userId,
              rotationPeriod: next.rotationPeriod,
              nextRotationAt,
            },
          },
        ],
        metadata,
      );
      return view;
    }
    await this.append(
      mount,
      name,
      [{ type: 'StaticRoleAdopted', data: { mount, name, ...next, userId: user.userId } }],
      metadata,
    );
    const ok = await this.issueKey(
      mount,
      name,
      iam,
      next.username,
      null,
      next.rotationPeriod,
      metadata,
    );
    if (!ok.issued) {
      throw new KeelError(
        'internal',
        `failed to create new credentials for role "${name}": ${ok.error}`,
        { status: 500 },
      );
    }
    return view;
  }

  /**
   * One key cycle; records KeyIssued or RotationFailed (with the backoff's retry time). The intent
   * is recorded once the user's keys are listed, before one is deleted or created.
   */
  private async issueKey(
    mount: MountRef,
    name: string,
    iam: IAMClient,
    username: string,
    servedKey: string | null,
    rotationPeriod: number,
    metadata: AuditMetadata,
  ): Promise<{ issued: true } | { issued: false; error: string }> {
    const pending: { intent?: OpenIntent } = {};
    try {
      const key = await rotateStaticKey(iam, username, servedKey, async (known) => {
        pending.intent = await this.intents.record(
          mount,
          { kind: 'static_key', role: name, username, known },
          metadata,
        );
      });
      const now = this.d.core.clock.now();
      await this.append(
        mount,
        name,
        [
          {
            type: 'StaticRoleKeyIssued',
            data: {
              accessKeyId: key.accessKeyId,
              secretAccessKey: this.d.core.sealer.seal(key.secretAccessKey),
              deletedAccessKeyId: key.deletedAccessKeyId,
              issuedAt: now.toISOString(),
              expiresAt: addSeconds(now, rotationPeriod).toISOString(),
            },
          },
        ],
        metadata,
      );
    } catch (e) {
      // A key the failed cycle may have made is removed (or left to the next start's recovery).
      if (pending.intent) await this.intents.undo(pending.intent, metadata);
      return this.rotationFailed(mount, name, e, metadata);
    }
    if (pending.intent) await this.intents.settle(pending.intent.intentId, 'completed', metadata);
    return { issued: true };
  }

  /** Records a failed key cycle with its attempt number and the backoff's retry time. */
  private async rotationFailed(
    mount: MountRef,
    name: string,
    e: unknown,
    metadata: AuditMetadata,
  ): Promise<{ issued: false; error: string }> {
    const error = awsErrorText(e);
    const { state } = this.d.core.handler.load(
      staticRoleStream(mount.accessor, name),
      staticRoleDecider,
    );
    const attempt = state.context.failures + 1;
    const retryAt = addSeconds(
      this.d.core.clock.now(),
      rotationRetryDelaySeconds(attempt),
    ).toISOString();
    this.d.core.logger.warn(
      { staticRole: name, attempt, err: error },
      'static role rotation failed',
    );
    await this.append(
      mount,
      name,
      [{ type: 'StaticRoleRotationFailed', data: { error, attempt, retryAt } }],
      metadata,
    );
    return { issued: false, error };
  }

  /**
   * The rotation timer: a role whose key is due (or whose last attempt failed or never reported
   * back) rotates now. Anything else (deleted, or rescheduled later by an update) is left alone.
   */
  async rotateDue(accessor: string, name: string): Promise<void> {
    const row = this.d.reads.staticRole(accessor, name);
    if (!row) return;
    const now = this.d.core.clock.now();
    const { state } = this.d.core.handler.load(staticRoleStream(accessor, name), staticRoleDecider);
    const value = state.value as string;
    if (value === 'active' && row.expiration !== null && new Date(row.expiration) > now) return;
    const mount: MountRef = { accessor, path: row.mountPath };
    const started: StaticRoleEvent = {
      type: 'StaticRoleRotationStarted',
      data: {
        startedAt: now.toISOString(),
        resumeAt: addSeconds(now, RESUME_AFTER_SECONDS).toISOString(),
      },
    };
    if (!state.can(started)) return;
    // Checked again where it is decided: another rotation may have started since the load.
    const { events } = await this.d.core.handler.handle(
      staticRoleStream(accessor, name),
      staticRoleDecider,
      (s) => (s.can(started) ? [started] : []),
      systemMetadata,
    );
    if (events.length === 0) return;
    let iam: IAMClient;
    try {
      iam = await this.iamFor(mount, row);
      const user = await getUser(iam, row.username);
      if (user.userId !== row.userId) {
        throw new Error(
          `AWS GetUser returned a user, but the ID did not match: "${row.userId}" was requested, but "${user.userId}" was returned`,
        );
      }
    } catch (e) {
      const attempt = state.context.failures + 1;
      const retryAt = addSeconds(now, rotationRetryDelaySeconds(attempt)).toISOString();
      await this.append(
        mount,
        name,
        [
          {
            type: 'StaticRoleRotationFailed',
            data: {
              error: e instanceof Error && !('$metadata' in e) ? e.message : awsErrorText(e),
              attempt,
              retryAt,
            },
          },
        ],
        systemMetadata,
      );
      return;
    }
    await this.issueKey(
      mount,
      name,
      iam,
      row.username,
      row.accessKey,
      row.rotationPeriod,
      systemMetadata,
    );
  }

  list(mount: MountRef): string[] {
    return this.d.reads.staticRoleNames(mount.accessor);
  }

  read(mount: MountRef, name: string): StaticRoleRow | null {
    return this.d.reads.staticRole(mount.accessor, name);
  }

  /** DELETE static-roles/:name: deletes the last key Keel issued, then the role (absent: no-op). */
  async delete(mount: MountRef, name: string, metadata: AuditMetadata): Promise<void> {
    const row = this.d.reads.staticRole(mount.accessor, name);
    if (!row) return;
    if (row.accessKey) {
      try {
        await deleteAccessKey(await this.iamFor(mount, row), row.username, row.accessKey);
      } catch (e) {
        throw new KeelError(
          'internal',
          `failed to delete the access key of static role "${name}": ${awsErrorText(e)}`,
          { status: 500 },
        );
      }
    }
    await this.append(
      mount,
      name,
      [{ type: 'StaticRoleDeleted', data: { deletedAccessKeyId: row.accessKey } }],
      metadata,
    );
  }

  /** GET static-creds/:name. */
  creds(
    mount: MountRef,
    name: string,
  ): { access_key: string; secret_key: string; expiration: string | null } {
    const row = this.d.reads.staticRole(mount.accessor, name);
    if (!row || !row.accessKey || !row.secretKey)
      throw new NotFoundError(`no credentials for static role "${name}"`);
    return {
      access_key: row.accessKey,
      secret_key: this.d.core.sealer.unseal(row.secretKey),
      expiration: row.expiration,
    };
  }
}
