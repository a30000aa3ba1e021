import { createHmac } from 'node:crypto';
import type { Core } from '../../context.js';
import type { Decider } from '../../core/command-handler.js';
import { systemMetadata, type AuditMetadata, type StoredEvent } from '../../core/events.js';
import { stateName } from '../../core/machine-decider.js';
import type { Reactor } from '../../core/reactors.js';
import type { ScheduleEntry, Timer } from '../../core/schedule.js';
import type { RunsModel } from '../model.js';
import { runDecider } from '../run/commands.js';
import type { RunEvent } from '../events.js';
import type {
  NotificationDeliveryAttempted,
  NotificationEvent,
  NotificationTrigger,
} from './events.js';
import { RETRY_TIMER, type RetryData } from './projection.js';
import type { NotificationConfigRow, NotificationQueries } from './projection.js';

type AttemptTrigger = NotificationDeliveryAttempted['data']['trigger'];

/**
 * Delivery of generic webhooks: the reference's payload (version 1), signed with HMAC-SHA512 of
 * the body under the configuration's token in `X-TFE-Notification-Signature`, each attempt
 * recorded. A reactor reads run events, so a delivery never holds a run up; a failed attempt is
 * tried again after a backoff ({@link retryDelaysOf}), up to {@link MAX_ATTEMPTS} in all: the
 * delivery log's read model puts the retry on the schedule and {@link notificationRetryTimer}
 * sends it when it falls due.
 */

export { MAX_ATTEMPTS, RETRY_TIMER, retryDelaysOf } from './projection.js';
/** How long one attempt waits for an answer. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** How much of an answer's body the delivery log keeps. */
const BODY_KEPT = 1024;
export const SIGNATURE_HEADER = 'X-TFE-Notification-Signature';

/** The trigger and message of a run's move from one status to another, if it notifies. */
export function triggerOf(
  before: string,
  after: string,
): { trigger: NotificationTrigger; message: string } | null {
  if (before === after) return null;
  switch (after) {
    case 'pending':
      return { trigger: 'run:created', message: 'Run Created' };
    case 'planning':
      return { trigger: 'run:planning', message: 'Run Planning' };
    case 'planned':
    case 'policy_override':
      return { trigger: 'run:needs_attention', message: 'Run Needs Attention' };
    case 'applying':
      return { trigger: 'run:applying', message: 'Run Applying' };
    case 'applied':
      return { trigger: 'run:completed', message: 'Run Applied' };
    case 'planned_and_finished':
      return { trigger: 'run:completed', message: 'Run Planned and Finished' };
    case 'planned_and_saved':
      return { trigger: 'run:completed', message: 'Run Planned and Saved' };
    case 'errored':
      return { trigger: 'run:errored', message: 'Run Errored' };
    case 'canceled':
    case 'force_canceled':
      return { trigger: 'run:errored', message: 'Run Canceled' };
    default:
      return null;
  }
}

/** A configuration's stream exists until it is deleted. */
const existence: Decider<{ live: boolean }, NotificationEvent> = {
  initialState: () => ({ live: false }),
  evolve: (s, e) =>
    e.type === 'NotificationConfigurationCreated'
      ? { live: true }
      : e.type === 'NotificationConfigurationDeleted'
        ? { live: false }
        : s,
};
export { existence as notificationDecider };

export interface Sent {
  code: number | null;
  body: string;
  successful: boolean;
}

/** POST one payload; never throws (a failure is an answer to record). */
export async function post(url: string, payload: string, token: string | null): Promise<Sent> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'Keel-Notifications/1',
  };
  if (token !== null && token !== '')
    headers[SIGNATURE_HEADER] = createHmac('sha512', token).update(payload).digest('hex');
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers,
      body: payload,
      redirect: 'manual',
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
    const body = (await res.text()).slice(0, BODY_KEPT);
    return { code: res.status, body, successful: res.status >= 200 && res.status < 300 };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return {
      code: null,
      body: `no answer: ${(err as Error).message}${cause === undefined ? '' : ` (${cause})`}`,
      successful: false,
    };
  }
}

/** Send and record one attempt on the configuration's stream (nothing if it was deleted). */
export async function attempt(
  core: Core,
  config: NotificationConfigRow,
  input: Pick<
    NotificationDeliveryAttempted['data'],
    'delivery' | 'attempt' | 'trigger' | 'payload'
  >,
  metadata: AuditMetadata,
): Promise<void> {
  const sentAt = core.clock.now().toISOString();
  const token = config.token === null ? null : core.sealer.open(config.token);
  const sent = await post(config.url, input.payload, token);
  await core.handler.handle(
    config.id,
    existence,
    (s): NotificationEvent[] =>
      s.live
        ? [
            {
              type: 'NotificationDeliveryAttempted',
              data: { id: config.id, url: config.url, sentAt, ...input, ...sent },
            },
          ]
        : [],
    metadata,
  );
}

/** The reference's payload for a run notification, or for a verify action (`run` null). */
export function payloadOf(
  model: RunsModel,
  config: NotificationConfigRow,
  notification: { message: string; trigger: NotificationTrigger | 'verification'; at: string },
  run: { id: string; status: string } | null,
): string {
  const ws = model.workspaces.get(config.workspaceId);
  const row = run === null ? null : model.runs.get(run.id);
  const creator =
    row?.attrs.createdBy?.kind === 'user' ? model.userName(row.attrs.createdBy.id) : null;
  const base = model.core.config.publicAddress.replace(/\/$/, '');
  return JSON.stringify({
    payload_version: 1,
    notification_configuration_id: config.id,
    run_url:
      row === null || ws === null
        ? null
        : `${base}/app/${ws.organization}/${ws.name}/runs/${row.id}`,
    run_id: row?.id ?? null,
    run_message: row?.attrs.message ?? null,
    run_created_at: row?.createdAt ?? null,
    run_created_by: creator,
    workspace_id: config.workspaceId,
    workspace_name: ws?.name ?? null,
    organization_name: config.organization,
    notifications: [
      {
        message: notification.message,
        trigger: notification.trigger,
        run_status: run?.status ?? null,
        run_updated_at: run === null ? null : notification.at,
        run_updated_by: run === null ? null : creator,
      },
    ],
  });
}

/** The run's status before and after one of its events (folding its stream up to it). */
function statusesAround(core: Core, event: StoredEvent): { before: string; after: string } {
  let state = runDecider.initialState();
  let before = stateName(state.value);
  for (const e of core.store.readStream(event.stream)) {
    if (e.version > event.version) break;
    before = stateName(state.value);
    state = runDecider.evolve(state, e as StoredEvent<RunEvent>);
  }
  return { before, after: stateName(state.value) };
}

/**
 * A failed attempt's retry, when its backoff is over: the next attempt, whose record moves the
 * schedule's row on (or removes it). A configuration deleted or disabled meanwhile has had its
 * rows removed by the read model; one found so anyway is not delivered to.
 */
export function notificationRetryTimer(model: RunsModel, queries: NotificationQueries): Timer {
  const metadata = systemMetadata('notifications');
  return {
    kind: RETRY_TIMER,
    async fire(entry: ScheduleEntry) {
      const { id, delivery, attempt: failed } = entry.data as RetryData;
      const config = queries.get(id);
      const tried = queries.attempts(id, delivery);
      const last = tried.find((a) => a.attempt === failed);
      if (config === null || !config.enabled || last === undefined) return;
      if (last.successful || tried.some((a) => a.attempt > failed)) return;
      await attempt(
        model.core,
        config,
        {
          delivery,
          attempt: failed + 1,
          trigger: last.trigger as AttemptTrigger,
          payload: last.payload,
        },
        metadata,
      );
    },
  };
}

/** The reactor: run events become deliveries (their retries are timers). */
export function notificationReactor(model: RunsModel, queries: NotificationQueries): Reactor {
  const { core } = model;
  const metadata = systemMetadata('notifications');
  return {
    name: 'runs-notifications',
    types: ['Run*'],
    async react(event: StoredEvent) {
      await Promise.resolve();
      if (!queries.anyEnabled()) return;
      const run = model.runs.get(event.stream);
      if (run === null) return;
      const configs = queries
        .ofWorkspace(run.workspaceId)
        .filter((c) => c.enabled && c.triggers.length > 0);
      if (configs.length === 0) return;
      const { before, after } = statusesAround(core, event);
      const notifies = triggerOf(before, after);
      if (notifies === null) return;
      const delivery = `${run.id}:${event.version}`;
      for (const config of configs) {
        if (!config.triggers.includes(notifies.trigger)) continue;
        if (queries.attempts(config.id, delivery).length > 0) continue;
        const payload = payloadOf(
          model,
          config,
          { ...notifies, at: event.time },
          { id: run.id, status: after },
        );
        await attempt(
          core,
          config,
          { delivery, attempt: 1, trigger: notifies.trigger, payload },
          metadata,
        );
      }
    },
  };
}
