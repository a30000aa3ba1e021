import type { Db } from '../core/database.js';
import { ValidationError } from '../core/errors.js';
import type { AuditMetadata } from '../core/events.js';
import { redactSealed } from '../core/seal.js';
import type { EventRow } from '../core/chain.js';

/** Filters of the audit timeline; every one is optional and they combine with AND. */
export interface AuditFilter {
  stream?: string;
  /** Streams whose name starts with this (`run-`). */
  streamPrefix?: string;
  type?: string;
  /** Matches the actor's display name or token accessor exactly. */
  actor?: string;
  /** ISO times, inclusive. */
  since?: string;
  until?: string;
  /** Only events before this position: the cursor for the next (older) page. */
  before?: number;
  limit: number;
}

/** An event as the audit timeline shows it: sealed fields as `hmac:<hex>`. */
export interface AuditEvent {
  position: number;
  stream: string;
  version: number;
  type: string;
  time: string;
  actor: AuditMetadata['actor'];
  request_id: string | null;
  remote_address: string | null;
  data: unknown;
  hash: string;
}

export const MAX_LIMIT = 500;

const text = (q: Record<string, unknown>, key: string): string | undefined => {
  const v = q[key];
  const s = Array.isArray(v) ? (v[v.length - 1] as unknown) : v;
  if (s === undefined || s === '') return undefined;
  if (typeof s !== 'string') throw new ValidationError(`${key} must be a string`);
  return s;
};

const isoTime = (q: Record<string, unknown>, key: string): string | undefined => {
  const s = text(q, key);
  if (s === undefined) return undefined;
  const ms = Date.parse(s);
  if (Number.isNaN(ms)) throw new ValidationError(`${key} must be an ISO 8601 time, got "${s}"`);
  return new Date(ms).toISOString();
};

const positiveInt = (q: Record<string, unknown>, key: string): number | undefined => {
  const s = text(q, key);
  if (s === undefined) return undefined;
  if (!/^\d+$/.test(s) || Number(s) < 1)
    throw new ValidationError(`${key} must be a positive integer, got "${s}"`);
  return Number(s);
};

/** Read the timeline's filters from a query string; bad values are a validation error. */
export function parseAuditFilter(query: Record<string, unknown>): AuditFilter {
  const limit = positiveInt(query, 'limit') ?? 100;
  if (limit > MAX_LIMIT) throw new ValidationError(`limit must be at most ${MAX_LIMIT}`);
  const filter: AuditFilter = {
    stream: text(query, 'stream'),
    streamPrefix: text(query, 'stream_prefix'),
    type: text(query, 'type'),
    actor: text(query, 'actor'),
    since: isoTime(query, 'since'),
    until: isoTime(query, 'until'),
    before: positiveInt(query, 'before'),
    limit,
  };
  if (filter.since !== undefined && filter.until !== undefined && filter.since > filter.until)
    throw new ValidationError('since must not be after until');
  return filter;
}

/** The newest events matching the filter, newest first. */
export function queryAuditEvents(db: Db, f: AuditFilter): AuditEvent[] {
  const where: string[] = [];
  const params: (string | number)[] = [];
  if (f.stream !== undefined) {
    where.push('stream = ?');
    params.push(f.stream);
  }
  if (f.streamPrefix !== undefined) {
    where.push('stream >= ? AND stream < ?');
    params.push(f.streamPrefix, `${f.streamPrefix}\u{10ffff}`);
  }
  if (f.type !== undefined) {
    where.push('type = ?');
    params.push(f.type);
  }
  if (f.actor !== undefined) {
    where.push(
      "(json_extract(metadata, '$.actor.name') = ? OR json_extract(metadata, '$.actor.accessor') = ?)",
    );
    params.push(f.actor, f.actor);
  }
  if (f.since !== undefined) {
    where.push('time >= ?');
    params.push(f.since);
  }
  if (f.until !== undefined) {
    where.push('time <= ?');
    params.push(f.until);
  }
  if (f.before !== undefined) {
    where.push('position < ?');
    params.push(f.before);
  }
  const sql = `SELECT * FROM events ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY position DESC LIMIT ?`;
  return db
    .prepare<(string | number)[], EventRow>(sql)
    .all(...params, f.limit)
    .map((r) => {
      const meta = JSON.parse(r.metadata) as AuditMetadata;
      return {
        position: r.position,
        stream: r.stream,
        version: r.version,
        type: r.type,
        time: r.time,
        actor: meta.actor,
        request_id: meta.requestId,
        client_request_id: meta.clientRequestId ?? null,
        remote_address: meta.remoteAddress,
        data: redactSealed(JSON.parse(r.data) as unknown),
        hash: r.hash,
      };
    });
}
