import { canonicalJson } from '../../core/canonical.js';
import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import { scheduleRows } from '../../core/schedule.js';
import type { Sealed } from '../../core/seal.js';
import { statements } from '../../core/sql.js';
import type { WorkspaceDeleted } from '../events.js';
import type { NotificationEvent, NotificationTrigger } from './events.js';

/** Notification configurations and their delivery log, and the retries it puts on the schedule. */

/** Attempts made to deliver one notification, at most. */
export const MAX_ATTEMPTS = 3;
/**
 * How long after failed attempt n (1-based) attempt n + 1 is made, from the configured first
 * delay (`KEEL_NOTIFICATION_RETRY_MS`, 30 s by default): each waits four times the one before.
 */
export const retryDelaysOf = (firstMs: number): readonly number[] =>
  Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => firstMs * 4 ** i);
/** The schedule's kind for a retry. */
export const RETRY_TIMER = 'notification-retry';
/** What a retry's schedule row holds: the configuration, the notification and the failed attempt. */
export interface RetryData {
  id: string;
  delivery: string;
  attempt: number;
}
const retryKey = (id: string, delivery: string) => `${RETRY_TIMER}:${id}:${delivery}`;

const T = {
  configs: 'runs_notification_configs',
  deliveries: 'runs_notification_deliveries',
} as const;

export interface NotificationConfigRow {
  id: string;
  organization: string;
  workspaceId: string;
  name: string;
  url: string;
  enabled: boolean;
  triggers: NotificationTrigger[];
  token: Sealed | null;
  createdAt: string;
  updatedAt: string;
}

export interface DeliveryRow {
  configId: string;
  delivery: string;
  attempt: number;
  trigger: string;
  url: string;
  payload: string;
  sentAt: string;
  code: number | null;
  body: string;
  successful: boolean;
}

interface ConfigDb {
  id: string;
  organization: string;
  workspace_id: string;
  name: string;
  url: string;
  enabled: number;
  triggers: string;
  token: string | null;
  created_at: string;
  updated_at: string;
}
interface DeliveryDb {
  config_id: string;
  delivery: string;
  attempt: number;
  trigger: string;
  url: string;
  payload: string;
  sent_at: string;
  code: number | null;
  body: string;
  successful: number;
}

const toConfig = (r: ConfigDb): NotificationConfigRow => ({
  id: r.id,
  organization: r.organization,
  workspaceId: r.workspace_id,
  name: r.name,
  url: r.url,
  enabled: r.enabled === 1,
  triggers: JSON.parse(r.triggers) as NotificationTrigger[],
  token: r.token === null ? null : (JSON.parse(r.token) as Sealed),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
const toDelivery = (r: DeliveryDb): DeliveryRow => ({
  configId: r.config_id,
  delivery: r.delivery,
  attempt: r.attempt,
  trigger: r.trigger,
  url: r.url,
  payload: r.payload,
  sentAt: r.sent_at,
  code: r.code,
  body: r.body,
  successful: r.successful === 1,
});

export const notificationProjection = (retryFirstMs: number): Projection => ({
  name: 'runs-notifications',
  version: 2,
  tables: [T.configs, T.deliveries],
  events: [
    'NotificationConfigurationCreated',
    'NotificationConfigurationUpdated',
    'NotificationConfigurationDeleted',
    'NotificationDeliveryAttempted',
    'WorkspaceDeleted',
  ] satisfies (NotificationEvent | WorkspaceDeleted)['type'][],
  setup(db: Db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${T.configs} (id TEXT PRIMARY KEY, organization TEXT NOT NULL,
        workspace_id TEXT NOT NULL, name TEXT NOT NULL, url TEXT NOT NULL, enabled INTEGER NOT NULL,
        triggers TEXT NOT NULL, token TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ${T.deliveries} (config_id TEXT NOT NULL, delivery TEXT NOT NULL,
        attempt INTEGER NOT NULL, trigger TEXT NOT NULL, url TEXT NOT NULL, payload TEXT NOT NULL,
        sent_at TEXT NOT NULL, code INTEGER, body TEXT NOT NULL, successful INTEGER NOT NULL,
        position INTEGER NOT NULL, PRIMARY KEY (config_id, delivery, attempt));
    `);
    const s = {
      insert:
        db.prepare(`INSERT INTO ${T.configs} (id, organization, workspace_id, name, url, enabled, triggers, token, created_at, updated_at)
        VALUES (@id, @organization, @workspace_id, @name, @url, @enabled, @triggers, @token, @at, @at)`),
      update:
        db.prepare(`UPDATE ${T.configs} SET name = COALESCE(@name, name), url = COALESCE(@url, url),
        enabled = COALESCE(@enabled, enabled), triggers = COALESCE(@triggers, triggers),
        token = CASE WHEN @set_token = 1 THEN @token ELSE token END, updated_at = @at WHERE id = @id`),
      remove: db.prepare(`DELETE FROM ${T.configs} WHERE id = ?`),
      removeDeliveries: db.prepare(`DELETE FROM ${T.deliveries} WHERE config_id = ?`),
      workspaceGone: db.prepare(`SELECT id FROM ${T.configs} WHERE workspace_id = ?`),
      deliveries: db.prepare(`SELECT DISTINCT delivery FROM ${T.deliveries} WHERE config_id = ?`),
      delivery: db.prepare(`INSERT OR IGNORE INTO ${T.deliveries}
        (config_id, delivery, attempt, trigger, url, payload, sent_at, code, body, successful, position)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    };
    const schedule = scheduleRows(db, 'runs-notifications');
    const delays = retryDelaysOf(retryFirstMs);
    /** No retry of the configuration's notifications is due any more. */
    const noRetries = (id: string) => {
      for (const { delivery } of s.deliveries.all(id) as { delivery: string }[])
        schedule.remove(retryKey(id, delivery));
    };
    return (event: StoredEvent) => {
      if (event.type === 'WorkspaceDeleted') {
        const ws = (event as StoredEvent<WorkspaceDeleted>).data.id;
        for (const { id } of s.workspaceGone.all(ws) as { id: string }[]) {
          noRetries(id);
          s.remove.run(id);
          s.removeDeliveries.run(id);
        }
        return;
      }
      if (!event.type.startsWith('Notification')) return;
      const e = event as StoredEvent<NotificationEvent>;
      switch (e.type) {
        case 'NotificationConfigurationCreated':
          s.insert.run({
            id: e.data.id,
            organization: e.data.organization,
            workspace_id: e.data.workspaceId,
            name: e.data.name,
            url: e.data.url,
            enabled: e.data.enabled ? 1 : 0,
            triggers: JSON.stringify(e.data.triggers),
            token: e.data.token === null ? null : canonicalJson(e.data.token),
            at: e.time,
          });
          return;
        case 'NotificationConfigurationUpdated':
          s.update.run({
            id: e.data.id,
            name: e.data.name ?? null,
            url: e.data.url ?? null,
            enabled: e.data.enabled === undefined ? null : e.data.enabled ? 1 : 0,
            triggers: e.data.triggers === undefined ? null : JSON.stringify(e.data.triggers),
            set_token: e.data.token === undefined ? 0 : 1,
            token:
              e.data.token === undefined || e.data.token === null
                ? null
                : canonicalJson(e.data.token),
            at: e.time,
          });
          if (e.data.enabled === false) noRetries(e.data.id);
          return;
        case 'NotificationConfigurationDeleted':
          noRetries(e.data.id);
          s.remove.run(e.data.id);
          s.removeDeliveries.run(e.data.id);
          return;
        case 'NotificationDeliveryAttempted': {
          const d = e.data;
          s.delivery.run(
            d.id,
            d.delivery,
            d.attempt,
            d.trigger,
            d.url,
            d.payload,
            d.sentAt,
            d.code,
            d.body,
            d.successful ? 1 : 0,
            e.position,
          );
          if (d.successful || d.attempt >= MAX_ATTEMPTS)
            schedule.remove(retryKey(d.id, d.delivery));
          else {
            const data: RetryData = { id: d.id, delivery: d.delivery, attempt: d.attempt };
            schedule.put({
              key: retryKey(d.id, d.delivery),
              kind: RETRY_TIMER,
              dueAt: new Date(Date.parse(e.time) + (delays[d.attempt - 1] ?? 0)).toISOString(),
              data,
            });
          }
          return;
        }
        default: {
          const _never: never = e;
          return _never;
        }
      }
    };
  },
});

/** Read access to notification configurations and deliveries. */
export class NotificationQueries {
  /** Statements are prepared on first use and kept (see core/sql.ts). */
  private readonly sql: ReturnType<typeof statements>;

  constructor(db: Db) {
    this.sql = statements(db);
  }

  get(id: string): NotificationConfigRow | null {
    const r = this.sql(`SELECT * FROM ${T.configs} WHERE id = ?`).get(id) as ConfigDb | undefined;
    return r === undefined ? null : toConfig(r);
  }

  /**
   * Whether any workspace has an enabled configuration with a trigger: until one has, no run event
   * notifies, and the reactor reads nothing more.
   */
  anyEnabled(): boolean {
    return (
      this.sql(
        `SELECT 1 AS one FROM ${T.configs} WHERE enabled = 1 AND triggers <> '[]' LIMIT 1`,
      ).get() !== undefined
    );
  }

  ofWorkspace(workspaceId: string): NotificationConfigRow[] {
    return (
      this.sql(`SELECT * FROM ${T.configs} WHERE workspace_id = ? ORDER BY created_at, id`).all(
        workspaceId,
      ) as ConfigDb[]
    ).map(toConfig);
  }

  /** The latest attempts of a configuration, newest first. */
  recent(configId: string, limit = 10): DeliveryRow[] {
    return (
      this.sql(
        `SELECT * FROM ${T.deliveries} WHERE config_id = ? ORDER BY position DESC LIMIT ?`,
      ).all(configId, limit) as DeliveryDb[]
    ).map(toDelivery);
  }

  /** The attempts made for one notification, by attempt. */
  attempts(configId: string, delivery: string): DeliveryRow[] {
    return (
      this.sql(
        `SELECT * FROM ${T.deliveries} WHERE config_id = ? AND delivery = ? ORDER BY attempt`,
      ).all(configId, delivery) as DeliveryDb[]
    ).map(toDelivery);
  }

  /** How many verify actions a configuration has had (names the next one). */
  verifications(configId: string): number {
    return (
      this.sql(
        `SELECT COUNT(DISTINCT delivery) AS n FROM ${T.deliveries} WHERE config_id = ? AND delivery LIKE 'verify:%'`,
      ).get(configId) as { n: number }
    ).n;
  }
}
