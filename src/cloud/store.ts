import { chmodSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Db, Statement as SqlStatement } from '../core/database.js';
import type { Sealer } from '../core/seal.js';
import { LOG_LOCK, PostgresDatabase } from '../core/store/postgres.js';

/**
 * Where the cloud keeps its tables: its own SQLite file (or `:memory:`), or, when Keel's log is
 * on PostgreSQL, the same database in a schema of its own (`keel_cloud`), so every node serves
 * the same users, keys and sessions (ADR 0081).
 */
export type CloudLocation = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

/** The cloud's schema on a PostgreSQL store, and its transactions' lock (not the log's). */
const CLOUD_SCHEMA = 'keel_cloud';
const CLOUD_LOCK = LOG_LOCK + 1;

/**
 * The emulator's own SQLite file. It is an external system to Keel's engines: nothing here
 * touches the event log. The secrets it must use again (secret access keys for SigV4, MFA seeds
 * for TOTP) are sealed with Keel's keyring; session tokens are kept only as HMACs (ADR 0031).
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY COLLATE NOCASE, id TEXT NOT NULL UNIQUE,
  path TEXT NOT NULL, create_date TEXT NOT NULL, boundary_arn TEXT);
CREATE TABLE IF NOT EXISTS access_keys (id TEXT PRIMARY KEY, user_name TEXT NOT NULL COLLATE NOCASE,
  secret TEXT NOT NULL, status TEXT NOT NULL, create_date TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS user_policies (user_name TEXT NOT NULL COLLATE NOCASE, name TEXT NOT NULL,
  document TEXT NOT NULL, PRIMARY KEY (user_name, name));
CREATE TABLE IF NOT EXISTS user_attached (user_name TEXT NOT NULL COLLATE NOCASE, arn TEXT NOT NULL,
  PRIMARY KEY (user_name, arn));
CREATE TABLE IF NOT EXISTS user_tags (user_name TEXT NOT NULL COLLATE NOCASE, key TEXT NOT NULL,
  value TEXT NOT NULL, PRIMARY KEY (user_name, key));
CREATE TABLE IF NOT EXISTS groups (name TEXT PRIMARY KEY COLLATE NOCASE, id TEXT NOT NULL UNIQUE,
  path TEXT NOT NULL, create_date TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS group_members (group_name TEXT NOT NULL COLLATE NOCASE,
  user_name TEXT NOT NULL COLLATE NOCASE, PRIMARY KEY (group_name, user_name));
CREATE TABLE IF NOT EXISTS group_policies (group_name TEXT NOT NULL COLLATE NOCASE, name TEXT NOT NULL,
  document TEXT NOT NULL, PRIMARY KEY (group_name, name));
CREATE TABLE IF NOT EXISTS group_attached (group_name TEXT NOT NULL COLLATE NOCASE, arn TEXT NOT NULL,
  PRIMARY KEY (group_name, arn));
CREATE TABLE IF NOT EXISTS roles (name TEXT PRIMARY KEY COLLATE NOCASE, id TEXT NOT NULL UNIQUE,
  path TEXT NOT NULL, create_date TEXT NOT NULL, trust TEXT NOT NULL, max_session INTEGER NOT NULL,
  description TEXT);
CREATE TABLE IF NOT EXISTS role_policies (role_name TEXT NOT NULL COLLATE NOCASE, name TEXT NOT NULL,
  document TEXT NOT NULL, PRIMARY KEY (role_name, name));
CREATE TABLE IF NOT EXISTS role_attached (role_name TEXT NOT NULL COLLATE NOCASE, arn TEXT NOT NULL,
  PRIMARY KEY (role_name, arn));
CREATE TABLE IF NOT EXISTS policies (arn TEXT PRIMARY KEY, name TEXT NOT NULL, id TEXT NOT NULL,
  path TEXT NOT NULL, document TEXT NOT NULL, description TEXT, create_date TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (access_key_id TEXT PRIMARY KEY, secret TEXT NOT NULL,
  token_hmac TEXT NOT NULL, expiration TEXT NOT NULL, kind TEXT NOT NULL, arn TEXT NOT NULL,
  user_id TEXT NOT NULL, user_name TEXT, role_name TEXT, policy TEXT, policy_arns TEXT NOT NULL,
  create_date TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS mfa_devices (serial TEXT PRIMARY KEY, name TEXT NOT NULL,
  user_name TEXT COLLATE NOCASE, seed TEXT NOT NULL, create_date TEXT NOT NULL, enable_date TEXT);
`;

/** Row shapes. */
export interface UserRow {
  name: string;
  id: string;
  path: string;
  create_date: string;
  boundary_arn: string | null;
}
export interface KeyRow {
  id: string;
  user_name: string;
  /** Sealed (`CloudStore.unseal`). */
  secret: string;
  status: 'Active' | 'Inactive';
  create_date: string;
}
export interface GroupRow {
  name: string;
  id: string;
  path: string;
  create_date: string;
}
export interface RoleRow {
  name: string;
  id: string;
  path: string;
  create_date: string;
  trust: string;
  max_session: number;
  description: string | null;
}
export interface PolicyRow {
  arn: string;
  name: string;
  id: string;
  path: string;
  document: string;
  description: string | null;
  create_date: string;
}
/** Temporary credentials handed out by STS. */
export interface SessionRow {
  access_key_id: string;
  /** Sealed (`CloudStore.unseal`). */
  secret: string;
  /** HMAC of the session token (`CloudStore.tokenMatches`); the token itself is never kept. */
  token_hmac: string;
  expiration: string;
  kind: 'assumed-role' | 'federated-user' | 'session';
  arn: string;
  user_id: string;
  user_name: string | null;
  role_name: string | null;
  policy: string | null;
  policy_arns: string;
  create_date: string;
}
export interface MfaRow {
  serial: string;
  name: string;
  user_name: string | null;
  /** Sealed (`CloudStore.unseal`). */
  seed: string;
  create_date: string;
  enable_date: string | null;
}

type Param = string | number | null;

/** A thin wrapper over the file: prepared-statement cache and typed one-line queries. */
export class CloudStore {
  readonly db: Db;
  readonly #statements = new Map<string, SqlStatement<Param[]>>();
  readonly #sealer: Sealer;

  constructor(location: CloudLocation, sealer: Sealer) {
    this.#sealer = sealer;
    this.db =
      location.kind === 'sqlite'
        ? openSqlite(location.path)
        : new PostgresDatabase(location.url, { schema: CLOUD_SCHEMA, lock: CLOUD_LOCK });
    this.tx(() => this.db.exec(SCHEMA));
    this.#sealClearSecrets(location.kind === 'sqlite');
  }

  /** A secret as this file keeps it (AES-256-GCM under the keyring). */
  seal(plain: string): string {
    return this.#sealer.encrypt(plain);
  }

  unseal(sealed: string): string {
    return this.#sealer.decrypt(sealed);
  }

  /** What the file keeps of a secret it never hands out again (a session token). */
  tokenHmac(token: string): string {
    return this.#sealer.hmac(token);
  }

  /** Constant-time check of a presented token against its stored HMAC. */
  tokenMatches(token: string, storedHmac: string): boolean {
    return this.#sealer.matches(token, storedHmac);
  }

  /**
   * A file written before secrets were sealed is sealed in place, once, in one transaction:
   * secrets encrypted, the session-token column replaced by HMACs. (A PostgreSQL store is newer
   * than that: it never had the old column.)
   */
  #sealClearSecrets(sqlite: boolean): void {
    if (this.meta('secrets') === 'sealed') return;
    this.tx(() => {
      const columns = sqlite
        ? this.all<{ name: string }>("SELECT name FROM pragma_table_info('sessions')")
        : [];
      if (columns.some((c) => c.name === 'token')) {
        this.db.exec('ALTER TABLE sessions RENAME COLUMN token TO token_hmac');
        for (const r of this.all<{ k: string; t: string }>(
          'SELECT access_key_id AS k, token_hmac AS t FROM sessions',
        )) {
          this.run(
            'UPDATE sessions SET token_hmac = ? WHERE access_key_id = ?',
            this.tokenHmac(r.t),
            r.k,
          );
        }
      }
      const clear = (table: string, column: string, id: string): void => {
        for (const r of this.all<{ id: string; v: string }>(
          `SELECT ${id} AS id, ${column} AS v FROM ${table}`,
        )) {
          this.run(`UPDATE ${table} SET ${column} = ? WHERE ${id} = ?`, this.seal(r.v), r.id);
        }
      };
      clear('access_keys', 'secret', 'id');
      clear('sessions', 'secret', 'access_key_id');
      clear('mfa_devices', 'seed', 'serial');
      this.setMeta('secrets', 'sealed');
    });
  }

  #prepare(sql: string): SqlStatement<Param[]> {
    let st = this.#statements.get(sql);
    if (!st) {
      st = this.db.prepare<Param[]>(sql);
      this.#statements.set(sql, st);
    }
    return st;
  }

  get<T>(sql: string, ...params: Param[]): T | undefined {
    return this.#prepare(sql).get(...params) as T | undefined;
  }

  all<T>(sql: string, ...params: Param[]): T[] {
    return this.#prepare(sql).all(...params) as T[];
  }

  run(sql: string, ...params: Param[]): number {
    return this.#prepare(sql).run(...params).changes;
  }

  /**
   * Runs `fn` in one transaction, so a multi-row change is all or nothing; it holds the write lock
   * from its start, as another process (`--workers`) may share the file.
   */
  tx<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  meta(key: string): string | undefined {
    return this.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', key)?.value;
  }

  setMeta(key: string, value: string): void {
    this.run('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)', key, value);
  }

  user(name: string): UserRow | undefined {
    return this.get<UserRow>('SELECT * FROM users WHERE name = ?', name);
  }

  group(name: string): GroupRow | undefined {
    return this.get<GroupRow>('SELECT * FROM groups WHERE name = ?', name);
  }

  role(name: string): RoleRow | undefined {
    return this.get<RoleRow>('SELECT * FROM roles WHERE name = ?', name);
  }

  policy(arn: string): PolicyRow | undefined {
    return this.get<PolicyRow>('SELECT * FROM policies WHERE arn = ?', arn);
  }

  close(): void {
    this.db.close();
  }
}

function openSqlite(path: string): Db {
  const db = new Database(path);
  // The file holds usable secrets (SigV4 needs them): owner only, like the keyring. SQLite
  // gives the -wal and -shm files the database file's mode.
  if (path !== ':memory:' && path !== '') chmodSync(path, 0o600);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // Freed pages are zeroed: a deleted key or a secret sealed in place leaves no copy behind.
  db.pragma('secure_delete = ON');
  return db;
}
