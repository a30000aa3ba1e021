import { streamName } from '../../core/streams.js';
import { GetUserCommand, ListAccessKeysCommand } from '@aws-sdk/client-iam';
import type { IAMClient } from '@aws-sdk/client-iam';
import type { Decider } from '../../core/command-handler.js';
import type { Db } from '../../core/database.js';
import type { AuditMetadata, StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import { canonicalJson } from '../../core/canonical.js';
import { leaseDecider } from './commands.js';
import { deleteIamUser, isNoSuchEntity } from './cloud-calls.js';
import { deleteAccessKey } from './key-calls.js';
import type { EngineDeps } from './deps.js';
import { systemMetadata } from './deps.js';
import type { MountRef } from './events.js';
import { leaseStream } from './events.js';

/**
 * Cloud side effects are recorded before they happen (issue 14): an intent event precedes the
 * IAM calls that create a user or a key, and one settles it once the result is recorded (a lease,
 * a static role's key) or undone. An intent still open when the daemon starts belongs to a
 * process that died in between; the recovery pass finishes or undoes it, so no IAM user or key
 * Keel made is ever left without a lease or a role that will remove it.
 *
 * Stream `aws-intent:<id>`; read model `aws_cloud_intents` (open intents only).
 */

/** What the IAM calls after the intent will make. */
export type IntentAction =
  | {
      /** iam_user credentials: CreateUser … CreateAccessKey, then LeaseIssued on `leaseId`. */
      kind: 'iam_user';
      username: string;
      leaseId: string;
    }
  | {
      /** A static role's key cycle: the keys `known` before it are never touched by recovery. */
      kind: 'static_key';
      role: string;
      username: string;
      known: string[];
    }
  | {
      /** config/rotate-root: CreateAccessKey, AwsRootRotated, then DeleteAccessKey of `previous`. */
      kind: 'root_key';
      username: string;
      previous: string;
      known: string[];
    };

export type IntentOutcome = 'completed' | 'undone';

export type IntentEvent =
  | {
      type: 'AwsCloudIntentRecorded';
      data: { intentId: string; mount: MountRef; action: IntentAction; recordedAt: string };
    }
  | { type: 'AwsCloudIntentSettled'; data: { outcome: IntentOutcome; settledAt: string } };

export const intentStream = streamName`aws-intent:${'intentId'}`;

interface IntentState {
  status: 'none' | 'open' | 'settled';
}

export const intentDecider: Decider<IntentState, IntentEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve(_s, e: StoredEvent<IntentEvent>) {
    switch (e.type) {
      case 'AwsCloudIntentRecorded':
        return { status: 'open' };
      case 'AwsCloudIntentSettled':
        return { status: 'settled' };
      default: {
        const _never: never = e;
        return _never;
      }
    }
  },
  accepts: (s, e) =>
    e.type === 'AwsCloudIntentRecorded' ? s.status === 'none' : s.status === 'open',
  describe: (s) => s.status,
};

export interface OpenIntent {
  intentId: string;
  mount: MountRef;
  action: IntentAction;
  recordedAt: string;
}

/** Open intents as a read model: recorded and not yet settled. */
export function intentProjection(): Projection {
  return {
    name: 'aws-intents',
    version: 1,
    tables: ['aws_cloud_intents'],
    events: ['AwsCloudIntentRecorded', 'AwsCloudIntentSettled'] satisfies IntentEvent['type'][],
    setup(db: Db) {
      db.exec(`CREATE TABLE IF NOT EXISTS aws_cloud_intents (intent_id TEXT PRIMARY KEY,
        accessor TEXT NOT NULL, mount_path TEXT NOT NULL, action TEXT NOT NULL, recorded_at TEXT NOT NULL)`);
      const insert = db.prepare(
        'INSERT OR REPLACE INTO aws_cloud_intents (intent_id, accessor, mount_path, action, recorded_at) VALUES (?, ?, ?, ?, ?)',
      );
      const remove = db.prepare('DELETE FROM aws_cloud_intents WHERE intent_id = ?');
      return (stored: StoredEvent) => {
        const e = stored as unknown as StoredEvent<IntentEvent>;
        switch (e.type) {
          case 'AwsCloudIntentRecorded':
            insert.run(
              e.data.intentId,
              e.data.mount.accessor,
              e.data.mount.path,
              canonicalJson(e.data.action),
              e.data.recordedAt,
            );
            break;
          case 'AwsCloudIntentSettled':
            remove.run(intentStream.parse(e.stream)?.intentId ?? '');
            break;
          default:
            break;
        }
      };
    },
  };
}

/**
 * How long an intent may stay open on a log shared with other processes before the leader takes
 * the process that recorded it for dead: far longer than the engine's IAM calls take. A request
 * still waiting on the provider after that may find what it made undone (ADR 0082).
 */
export const ORPHANED_AFTER_MS = 60_000;

/**
 * A user made by the intent's CreateUser cannot predate the intent by more than the clock skew
 * SigV4 allows between Keel and the provider: an older user of the same name is someone else's.
 */
const CREATE_SKEW_MS = 5 * 60 * 1000;

/** Deletes every key of `username` that is neither one of `known` nor `current`. */
async function deleteUnknownKeys(
  iam: IAMClient,
  username: string,
  known: readonly string[],
  current: string | null,
): Promise<void> {
  try {
    const listed = await iam.send(new ListAccessKeysCommand({ UserName: username }));
    for (const k of listed.AccessKeyMetadata ?? []) {
      const id = k.AccessKeyId ?? '';
      if (id !== '' && id !== current && !known.includes(id)) {
        await deleteAccessKey(iam, username, id);
      }
    }
  } catch (e) {
    // A user that is gone has no key left to remove.
    if (!isNoSuchEntity(e)) throw e;
  }
}

/** Records, settles and resolves intents. */
export class CloudIntents {
  #recovery: Promise<void> | undefined;
  #sweeping: Promise<void> | undefined;

  constructor(
    private readonly d: EngineDeps,
    /** The IAM client that manages a static role's user (cross-account roles assume first). */
    private readonly staticIam: (mount: MountRef, role: string) => Promise<IAMClient>,
  ) {}

  /** Appends the intent; the IAM calls may start once this settles (the intent is durable). */
  async record(
    mount: MountRef,
    action: IntentAction,
    metadata: AuditMetadata,
  ): Promise<OpenIntent> {
    const intent: OpenIntent = {
      intentId: this.d.core.ids.id('intent'),
      mount,
      action,
      recordedAt: this.d.core.clock.now().toISOString(),
    };
    await this.d.core.handler.handle(
      intentStream(intent.intentId),
      intentDecider,
      (): IntentEvent[] => [{ type: 'AwsCloudIntentRecorded', data: intent }],
      metadata,
    );
    return intent;
  }

  /**
   * The in-process failure path: undo what the intent may have made, now. When the provider
   * cannot be reached either, the intent stays open for the next start.
   */
  async undo(intent: OpenIntent, metadata: AuditMetadata): Promise<void> {
    try {
      await this.resolve(intent, metadata);
    } catch (err) {
      this.d.core.logger.error(
        { intent: intent.intentId, err: (err as Error).message },
        'undoing a failed cloud side effect failed; the next start retries',
      );
    }
  }

  async settle(intentId: string, outcome: IntentOutcome, metadata: AuditMetadata): Promise<void> {
    await this.d.core.handler.handle(
      intentStream(intentId),
      intentDecider,
      (): IntentEvent[] => [
        {
          type: 'AwsCloudIntentSettled',
          data: { outcome, settledAt: this.d.core.clock.now().toISOString() },
        },
      ],
      metadata,
    );
  }

  open(): OpenIntent[] {
    return (
      this.d.core.db
        .prepare('SELECT * FROM aws_cloud_intents ORDER BY recorded_at, intent_id')
        .all() as {
        intent_id: string;
        accessor: string;
        mount_path: string;
        action: string;
        recorded_at: string;
      }[]
    ).map((r) => ({
      intentId: r.intent_id,
      mount: { accessor: r.accessor, path: r.mount_path },
      action: JSON.parse(r.action) as IntentAction,
      recordedAt: r.recorded_at,
    }));
  }

  /**
   * Finishes or undoes one intent and settles it: a recorded result counts as completed; anything
   * else the intent made at the provider is removed. Throws (leaving it open) when the provider
   * cannot be reached; the next start tries again.
   */
  async resolve(intent: OpenIntent, metadata: AuditMetadata = systemMetadata): Promise<void> {
    const { action, mount } = intent;
    switch (action.kind) {
      case 'iam_user': {
        const { state } = this.d.core.handler.load(leaseStream(action.leaseId), leaseDecider);
        if (state.value !== 'new') {
          await this.settle(intent.intentId, 'completed', metadata);
          return;
        }
        const iam = this.d.clientsFor(mount).iam();
        if (await this.madeByIntent(iam, action.username, intent.recordedAt)) {
          await deleteIamUser(iam, action.username);
        }
        await this.settle(intent.intentId, 'undone', metadata);
        return;
      }
      case 'static_key': {
        const row = this.d.reads.staticRole(mount.accessor, action.role);
        const current = row?.username === action.username ? row.accessKey : null;
        await deleteUnknownKeys(
          await this.staticIam(mount, action.role),
          action.username,
          action.known,
          current,
        );
        const done = current !== null && !action.known.includes(current);
        await this.settle(intent.intentId, done ? 'completed' : 'undone', metadata);
        return;
      }
      case 'root_key': {
        const current = this.d.reads.config(mount.accessor)?.settings?.accessKey ?? '';
        const rotated = current !== '' && !action.known.includes(current);
        // The clients sign with the key the configuration holds now: the new one once recorded.
        const iam = this.d.clientsFor(mount).iam();
        if (rotated) await deleteAccessKey(iam, action.username, action.previous);
        else await deleteUnknownKeys(iam, action.username, action.known, current);
        await this.settle(intent.intentId, rotated ? 'completed' : 'undone', metadata);
        return;
      }
      default: {
        const _never: never = action;
        return _never;
      }
    }
  }

  private async madeByIntent(iam: IAMClient, username: string, recordedAt: string) {
    try {
      const out = await iam.send(new GetUserCommand({ UserName: username }));
      const created = out.User?.CreateDate?.getTime() ?? 0;
      return created >= new Date(recordedAt).getTime() - CREATE_SKEW_MS;
    } catch (e) {
      if (isNoSuchEntity(e)) return false;
      throw e;
    }
  }

  /**
   * The start-up pass: every intent open now was left by a process that died mid-way. Runs once;
   * work that could race with it (static-role key cycles) awaits {@link recovered} first.
   */
  recover(): Promise<void> {
    this.#recovery ??= this.#resolveAll(this.open());
    return this.#recovery;
  }

  /**
   * On a log shared with other processes (ADR 0082), every poll of the leader: an intent may be
   * open because a request in another process is making its calls right now, so only those open
   * longer than {@link ORPHANED_AFTER_MS} are taken for a dead process's and resolved. One pass at
   * a time.
   */
  sweep(): void {
    if (this.#sweeping !== undefined) return;
    const before = this.d.core.clock.now().getTime() - ORPHANED_AFTER_MS;
    const orphans = this.open().filter((i) => Date.parse(i.recordedAt) <= before);
    if (orphans.length === 0) return;
    this.#sweeping = this.#resolveAll(orphans).finally(() => {
      this.#sweeping = undefined;
    });
  }

  async #resolveAll(intents: readonly OpenIntent[]): Promise<void> {
    for (const intent of intents) {
      try {
        await this.resolve(intent);
        this.d.core.logger.info(
          { intent: intent.intentId, kind: intent.action.kind },
          'an interrupted cloud side effect was resolved',
        );
      } catch (err) {
        this.d.core.logger.error(
          { intent: intent.intentId, err: (err as Error).message },
          'an interrupted cloud side effect could not be resolved; the next start retries',
        );
      }
    }
  }

  /** Resolves once the start-up pass is over (at once when it never started). */
  recovered(): Promise<void> {
    return Promise.all([this.#recovery, this.#sweeping]).then(() => undefined);
  }
}
