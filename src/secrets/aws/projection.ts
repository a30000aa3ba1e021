import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import { scheduleRows } from '../../core/schedule.js';
import { canonicalJson } from '../../core/canonical.js';
import { rotationRetryDelaySeconds } from '../../../machines/static-role.machine.js';
import type { AwsEvent, MountRef } from './events.js';
import {
  AWS_EVENT_TYPES,
  leaseStream,
  staticRoleStream,
  TIMER_LEASE_EXPIRY,
  TIMER_ROOT_ROTATION,
  TIMER_STATIC_ROTATION,
} from './events.js';
import type { RoleEntry } from './role-schema.js';
import type { RootSettings } from './schema.js';
import { parseCron } from './cron.js';

/**
 * JSON columns are canonical (sorted keys), so rows written live and rows replayed from the log
 * (which stores canonical events) are byte-identical.
 *
 * Read models of the engine, and its schedule rows: static-role rotations, lease expiries and
 * scheduled root rotations are due times in the core schedule, written here in the same
 * transaction as the events that set them. Dropping the tables and replaying rebuilds them.
 */

const TABLES = ['aws_config', 'aws_roles', 'aws_static_roles', 'aws_leases'] as const;

const staticKey = (accessor: string, name: string) => `aws-static:${accessor}:${name}`;
const leaseKey = (leaseId: string) => `aws-lease:${leaseId}`;
const rootKey = (accessor: string) => `aws-root:${accessor}`;
const plus = (iso: string, seconds: number) =>
  new Date(new Date(iso).getTime() + seconds * 1000).toISOString();

/** The next scheduled root rotation after `from`, or null when none is configured. */
export function nextRootRotation(s: RootSettings, from: string): string | null {
  if (s.disableAutomatedRotation || s.accessKey === '') return null;
  if (s.rotationPeriod > 0) return plus(from, s.rotationPeriod);
  if (s.rotationSchedule !== '')
    return parseCron(s.rotationSchedule).next(new Date(from)).toISOString();
  return null;
}

/** The engine's projection: tables, schedule rows, and the apply function. */
export function awsProjection(): Projection {
  return {
    name: 'aws',
    // 2: the token that obtained each lease.
    version: 3,
    tables: TABLES,
    // What issuing credentials reads: the engine's configuration and its roles.
    guarded: ['aws_config', 'aws_roles'],
    events: AWS_EVENT_TYPES,
    setup(db: Db) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS aws_config (accessor TEXT PRIMARY KEY, mount_path TEXT NOT NULL,
          settings TEXT, secret_key TEXT, lease INTEGER, lease_max INTEGER);
        CREATE TABLE IF NOT EXISTS aws_roles (accessor TEXT NOT NULL, name TEXT NOT NULL, mount_path TEXT NOT NULL,
          role TEXT NOT NULL, PRIMARY KEY (accessor, name));
        CREATE TABLE IF NOT EXISTS aws_static_roles (accessor TEXT NOT NULL, name TEXT NOT NULL, mount_path TEXT NOT NULL,
          username TEXT NOT NULL, user_id TEXT NOT NULL, rotation_period INTEGER NOT NULL, assume_role_arn TEXT NOT NULL,
          assume_role_session_name TEXT NOT NULL, external_id TEXT NOT NULL, state TEXT NOT NULL, access_key TEXT,
          secret_key TEXT, expiration TEXT, failures INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (accessor, name));
        CREATE TABLE IF NOT EXISTS aws_leases (lease_id TEXT PRIMARY KEY, accessor TEXT NOT NULL, mount_path TEXT NOT NULL,
          role TEXT NOT NULL, kind TEXT NOT NULL, username TEXT NOT NULL, access_key_id TEXT NOT NULL, issued_at TEXT NOT NULL,
          expires_at TEXT NOT NULL, max_expires_at TEXT NOT NULL, renewable INTEGER NOT NULL, state TEXT NOT NULL,
          failures INTEGER NOT NULL DEFAULT 0, token_accessor TEXT, last_renewal TEXT);
        CREATE INDEX IF NOT EXISTS aws_leases_token ON aws_leases (token_accessor);
      `);
      const schedule = scheduleRows(db, 'aws');
      const q = {
        configUpsert: db.prepare(
          `INSERT INTO aws_config (accessor, mount_path) VALUES (?, ?) ON CONFLICT(accessor) DO NOTHING`,
        ),
        configSettings: db.prepare(
          `UPDATE aws_config SET settings = ?, secret_key = ? WHERE accessor = ?`,
        ),
        configLease: db.prepare(
          `UPDATE aws_config SET lease = ?, lease_max = ? WHERE accessor = ?`,
        ),
        configGet: db.prepare(`SELECT settings FROM aws_config WHERE accessor = ?`),
        roleUpsert: db.prepare(
          `INSERT INTO aws_roles (accessor, name, mount_path, role) VALUES (?, ?, ?, ?)
           ON CONFLICT(accessor, name) DO UPDATE SET role = excluded.role`,
        ),
        roleDelete: db.prepare(`DELETE FROM aws_roles WHERE accessor = ? AND name = ?`),
        staticInsert: db.prepare(
          `INSERT OR REPLACE INTO aws_static_roles (accessor, name, mount_path, username, user_id, rotation_period,
           assume_role_arn, assume_role_session_name, external_id, state, failures) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'adopting', 0)`,
        ),
        staticGet: db.prepare(
          `SELECT accessor, name, mount_path, expiration FROM aws_static_roles WHERE accessor = ? AND name = ?`,
        ),
        staticUpdate: db.prepare(
          `UPDATE aws_static_roles SET username = ?, user_id = ?, rotation_period = ?, expiration = ? WHERE accessor = ? AND name = ?`,
        ),
        staticKey: db.prepare(
          `UPDATE aws_static_roles SET state = 'active', access_key = ?, secret_key = ?, expiration = ?, failures = 0
           WHERE accessor = ? AND name = ?`,
        ),
        staticState: db.prepare(
          `UPDATE aws_static_roles SET state = ? WHERE accessor = ? AND name = ?`,
        ),
        staticFailed: db.prepare(
          `UPDATE aws_static_roles SET state = 'rotation_failed', failures = failures + 1 WHERE accessor = ? AND name = ?`,
        ),
        staticDelete: db.prepare(`DELETE FROM aws_static_roles WHERE accessor = ? AND name = ?`),
        leaseInsert: db.prepare(
          `INSERT OR REPLACE INTO aws_leases (lease_id, accessor, mount_path, role, kind, username, access_key_id,
           issued_at, expires_at, max_expires_at, renewable, state, failures, token_accessor)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'issued', 0, ?)`,
        ),
        leaseRenew: db.prepare(
          `UPDATE aws_leases SET expires_at = ?, state = 'renewed', last_renewal = ? WHERE lease_id = ?`,
        ),
        leaseState: db.prepare(`UPDATE aws_leases SET state = ? WHERE lease_id = ?`),
        leaseFailed: db.prepare(`UPDATE aws_leases SET failures = failures + 1 WHERE lease_id = ?`),
        leaseDelete: db.prepare(`DELETE FROM aws_leases WHERE lease_id = ?`),
      };
      const mountOfStream = (stream: string) =>
        staticRoleStream.parse(stream) ?? { accessor: '', name: '' };
      const leaseIdOf = (stream: string) => leaseStream.parse(stream)?.leaseId ?? '';
      const ensureConfig = (m: MountRef) => q.configUpsert.run(m.accessor, m.path);
      const rescheduleRoot = (m: MountRef, settings: RootSettings, from: string) => {
        const next = nextRootRotation(settings, from);
        if (next === null) schedule.remove(rootKey(m.accessor));
        else
          schedule.put({
            key: rootKey(m.accessor),
            kind: TIMER_ROOT_ROTATION,
            dueAt: next,
            data: { mount: m },
            mount: m.accessor,
          });
      };

      return (stored: StoredEvent) => {
        const e = stored as unknown as StoredEvent<AwsEvent>;
        switch (e.type) {
          case 'AwsRootConfigured':
            ensureConfig(e.data.mount);
            q.configSettings.run(
              canonicalJson(e.data.settings),
              e.data.secretKey ? canonicalJson(e.data.secretKey) : null,
              e.data.mount.accessor,
            );
            rescheduleRoot(e.data.mount, e.data.settings, e.time);
            break;
          case 'AwsRootRotated': {
            const row = q.configGet.get(e.data.mount.accessor) as
              { settings: string | null } | undefined;
            const settings = {
              ...(JSON.parse(row?.settings ?? 'null') as RootSettings),
              accessKey: e.data.accessKey,
            };
            q.configSettings.run(
              canonicalJson(settings),
              canonicalJson(e.data.secretKey),
              e.data.mount.accessor,
            );
            rescheduleRoot(e.data.mount, settings, e.data.rotatedAt);
            break;
          }
          case 'AwsRootRotationFailed':
            schedule.put({
              key: rootKey(e.data.mount.accessor),
              kind: TIMER_ROOT_ROTATION,
              dueAt: e.data.retryAt,
              data: { mount: e.data.mount },
              mount: e.data.mount.accessor,
            });
            break;
          case 'AwsRootRotationSkipped':
            schedule.put({
              key: rootKey(e.data.mount.accessor),
              kind: TIMER_ROOT_ROTATION,
              dueAt: e.data.nextAt,
              data: { mount: e.data.mount },
              mount: e.data.mount.accessor,
            });
            break;
          case 'AwsLeaseConfigured':
            ensureConfig(e.data.mount);
            q.configLease.run(e.data.lease, e.data.leaseMax, e.data.mount.accessor);
            break;
          case 'AwsRoleWritten':
            q.roleUpsert.run(
              e.data.mount.accessor,
              e.data.name,
              e.data.mount.path,
              canonicalJson(e.data.role satisfies RoleEntry),
            );
            break;
          case 'AwsRoleDeleted':
            q.roleDelete.run(e.data.mount.accessor, e.data.name);
            break;
          case 'StaticRoleAdopted': {
            const d = e.data;
            q.staticInsert.run(
              d.mount.accessor,
              d.name,
              d.mount.path,
              d.username,
              d.userId,
              d.rotationPeriod,
              d.assumeRoleArn,
              d.assumeRoleSessionName,
              d.externalId,
            );
            // Should the process die before the first key is recorded, the schedule resumes the adoption.
            schedule.put({
              key: staticKey(d.mount.accessor, d.name),
              kind: TIMER_STATIC_ROTATION,
              dueAt: plus(e.time, 60),
              data: { accessor: d.mount.accessor, name: d.name },
              mount: d.mount.accessor,
            });
            break;
          }
          case 'StaticRoleUpdated': {
            const { accessor, name } = mountOfStream(e.stream);
            q.staticUpdate.run(
              e.data.username,
              e.data.userId,
              e.data.rotationPeriod,
              e.data.nextRotationAt,
              accessor,
              name,
            );
            schedule.put({
              key: staticKey(accessor, name),
              kind: TIMER_STATIC_ROTATION,
              dueAt: e.data.nextRotationAt,
              data: { accessor, name },
              mount: accessor,
            });
            break;
          }
          case 'StaticRoleKeyIssued': {
            const { accessor, name } = mountOfStream(e.stream);
            q.staticKey.run(
              e.data.accessKeyId,
              canonicalJson(e.data.secretAccessKey),
              e.data.expiresAt,
              accessor,
              name,
            );
            schedule.put({
              key: staticKey(accessor, name),
              kind: TIMER_STATIC_ROTATION,
              dueAt: e.data.expiresAt,
              data: { accessor, name },
              mount: accessor,
            });
            break;
          }
          case 'StaticRoleRotationStarted': {
            const { accessor, name } = mountOfStream(e.stream);
            q.staticState.run('rotating', accessor, name);
            // If the attempt never reports back (the process died), the schedule resumes it.
            schedule.put({
              key: staticKey(accessor, name),
              kind: TIMER_STATIC_ROTATION,
              dueAt: e.data.resumeAt,
              data: { accessor, name },
              mount: accessor,
            });
            break;
          }
          case 'StaticRoleRotationFailed': {
            const { accessor, name } = mountOfStream(e.stream);
            q.staticFailed.run(accessor, name);
            schedule.put({
              key: staticKey(accessor, name),
              kind: TIMER_STATIC_ROTATION,
              dueAt: e.data.retryAt,
              data: { accessor, name },
              mount: accessor,
            });
            break;
          }
          case 'StaticRoleDeleted': {
            const { accessor, name } = mountOfStream(e.stream);
            q.staticDelete.run(accessor, name);
            schedule.remove(staticKey(accessor, name));
            break;
          }
          case 'LeaseIssued': {
            const d = e.data;
            q.leaseInsert.run(
              d.leaseId,
              d.mount.accessor,
              d.mount.path,
              d.role,
              d.kind,
              d.username,
              d.accessKeyId,
              d.issuedAt,
              d.expiresAt,
              d.maxExpiresAt,
              d.renewable ? 1 : 0,
              d.tokenAccessor ?? null,
            );
            schedule.put({
              key: leaseKey(d.leaseId),
              kind: TIMER_LEASE_EXPIRY,
              dueAt: d.expiresAt,
              data: { leaseId: d.leaseId },
            });
            break;
          }
          case 'LeaseRenewed': {
            const id = leaseIdOf(e.stream);
            q.leaseRenew.run(e.data.expiresAt, e.data.renewedAt, id);
            schedule.put({
              key: leaseKey(id),
              kind: TIMER_LEASE_EXPIRY,
              dueAt: e.data.expiresAt,
              data: { leaseId: id },
            });
            break;
          }
          case 'LeaseRevocationRequested': {
            const id = leaseIdOf(e.stream);
            q.leaseState.run('revoking', id);
            // Cleanup is driven by the same timer kind: due now, retried on failure.
            schedule.put({
              key: leaseKey(id),
              kind: TIMER_LEASE_EXPIRY,
              dueAt: e.data.requestedAt,
              data: { leaseId: id },
            });
            break;
          }
          case 'LeaseRevocationFailed': {
            const id = leaseIdOf(e.stream);
            q.leaseFailed.run(id);
            schedule.put({
              key: leaseKey(id),
              kind: TIMER_LEASE_EXPIRY,
              dueAt: e.data.retryAt,
              data: { leaseId: id },
            });
            break;
          }
          case 'LeaseRevoked': {
            const id = leaseIdOf(e.stream);
            q.leaseDelete.run(id);
            schedule.remove(leaseKey(id));
            break;
          }
          default:
            break;
        }
      };
    },
  };
}

/** Backoff shared by retries that the projection schedules. */
export const retryAt = (now: Date, attempt: number): string =>
  new Date(now.getTime() + rotationRetryDelaySeconds(attempt) * 1000).toISOString();
