import type { Db } from '../../core/database.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import { hmacLookupRange, safeEqual } from '../../core/seal.js';
import { statements } from '../../core/sql.js';
import type { AuthTokenCreated, IdentityEvent } from './events.js';

/**
 * Users and tokens. `changed` runs after every event that changes them, inside the append's
 * transaction (the principal memo is cleared by it).
 */
/** The event types the identity read model applies. */
export const IDENTITY_PROJECTION_EVENTS = [
  'UserCreated',
  'AuthTokenCreated',
  'AuthTokenDeleted',
] as const satisfies IdentityEvent['type'][];

export const identityProjection = (changed: () => void = () => undefined): Projection => ({
  name: 'runs-identity',
  version: 1,
  tables: ['users', 'auth_tokens'],
  guarded: ['users', 'auth_tokens'],
  events: IDENTITY_PROJECTION_EVENTS,
  setup(db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS users (
        id TEXT PRIMARY KEY, username TEXT NOT NULL UNIQUE, email TEXT NOT NULL, admin INTEGER NOT NULL,
        created_at TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS auth_tokens (
        id TEXT PRIMARY KEY, token_hmac TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, owner_id TEXT NOT NULL,
        owner_name TEXT NOT NULL, organization TEXT, description TEXT, expired_at TEXT, created_by TEXT,
        created_at TEXT NOT NULL, last_used_at TEXT);
      CREATE INDEX IF NOT EXISTS auth_tokens_owner ON auth_tokens (kind, owner_id);
    `);
    const s = {
      user: db.prepare('INSERT INTO users VALUES (?, ?, ?, ?, ?)'),
      token: db.prepare('INSERT INTO auth_tokens VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)'),
      drop: db.prepare('DELETE FROM auth_tokens WHERE id = ?'),
    };
    return (event) => {
      const e = event as StoredEvent<IdentityEvent>;
      switch (e.type) {
        case 'UserCreated':
          s.user.run(e.data.id, e.data.username, e.data.email, e.data.admin ? 1 : 0, e.time);
          break;
        case 'AuthTokenCreated': {
          const d = e.data;
          s.token.run(
            d.id,
            d.tokenHmac,
            d.kind,
            d.ownerId,
            d.ownerName,
            d.organization,
            d.description,
            d.expiredAt,
            d.createdBy,
            e.time,
          );
          break;
        }
        case 'AuthTokenDeleted':
          s.drop.run(e.data.id);
          break;
        default:
          return;
      }
      changed();
    };
  },
});

export interface UserRow {
  id: string;
  username: string;
  email: string;
  admin: boolean;
  createdAt: string;
}

/** A token as lists show it: everything its creation recorded but the secret's hmac. */
export type AuthTokenRow = Omit<AuthTokenCreated['data'], 'tokenHmac'> & { createdAt: string };

interface RawToken {
  id: string;
  token_hmac: string;
  kind: AuthTokenRow['kind'];
  owner_id: string;
  owner_name: string;
  organization: string | null;
  description: string | null;
  expired_at: string | null;
  created_by: string | null;
  created_at: string;
}

const toToken = (r: RawToken): AuthTokenRow => ({
  id: r.id,
  kind: r.kind,
  ownerId: r.owner_id,
  ownerName: r.owner_name,
  organization: r.organization,
  description: r.description,
  expiredAt: r.expired_at,
  createdBy: r.created_by,
  createdAt: r.created_at,
});

type RawUser = { id: string; username: string; email: string; admin: number; created_at: string };

const toUser = (r: RawUser | undefined): UserRow | undefined =>
  r === undefined
    ? undefined
    : {
        id: r.id,
        username: r.username,
        email: r.email,
        admin: r.admin === 1,
        createdAt: r.created_at,
      };

export function identityQueries(db: Db) {
  const sql = statements(db);
  return {
    tokenByHmac: (hmac: string): AuthTokenRow | undefined => {
      const r = sql<[string, string], RawToken>(
        'SELECT * FROM auth_tokens WHERE token_hmac >= ? AND token_hmac < ?',
      )
        .all(...hmacLookupRange(hmac))
        .find((row) => safeEqual(row.token_hmac, hmac));
      return r === undefined ? undefined : toToken(r);
    },
    token: (id: string): AuthTokenRow | undefined => {
      const r = sql<[string], RawToken>('SELECT * FROM auth_tokens WHERE id = ?').get(id);
      return r === undefined ? undefined : toToken(r);
    },
    tokensOf: (kind: AuthTokenRow['kind'], ownerId: string): AuthTokenRow[] =>
      sql<[string, string], RawToken>(
        'SELECT * FROM auth_tokens WHERE kind = ? AND owner_id = ? ORDER BY created_at, id',
      )
        .all(kind, ownerId)
        .map(toToken),
    user: (id: string): UserRow | undefined =>
      toUser(sql<[string], RawUser>('SELECT * FROM users WHERE id = ?').get(id)),
    userByName: (username: string): UserRow | undefined =>
      toUser(sql<[string], RawUser>('SELECT * FROM users WHERE username = ?').get(username)),
    /** The first user (by creation) with the email address, compared without case. */
    userByEmail: (email: string): UserRow | undefined =>
      toUser(
        sql<[string], RawUser>(
          'SELECT * FROM users WHERE lower(email) = lower(?) ORDER BY created_at, id LIMIT 1',
        ).get(email),
      ),
  };
}

export type IdentityQueries = ReturnType<typeof identityQueries>;
