import { chmodSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Statement as SqlStatement } from 'better-sqlite3';

/**
 * The emulator's own SQLite file. It is an external system to Keel's engines: nothing here
 * touches the event log, and the secrets it keeps (it must verify SigV4, so it needs them)
 * never leave this file.
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
  token TEXT NOT NULL, expiration TEXT NOT NULL, kind TEXT NOT NULL, arn TEXT NOT NULL,
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
  secret: string;
  token: string;
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
  seed: string;
  create_date: string;
  enable_date: string | null;
}

type Param = string | number | null;

/** A thin wrapper over the file: prepared-statement cache and typed one-line queries. */
export class CloudStore {
  readonly db: Database.Database;
  readonly #statements = new Map<string, SqlStatement<Param[]>>();

  constructor(path: string) {
    this.db = new Database(path);
    // The file holds usable secrets (SigV4 needs them): owner only, like the keyring. SQLite
    // gives the -wal and -shm files the database file's mode.
    if (path !== ':memory:' && path !== '') chmodSync(path, 0o600);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(SCHEMA);
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
