import { canonicalJson } from '../../../core/canonical.js';
import type { Db } from '../../../core/database.js';
import type { StoredEvent } from '../../../core/events.js';
import type { Projection } from '../../../core/projections.js';
import { SCHEDULE_TABLE, scheduleProjection, scheduleRows } from '../../../core/schedule.js';
import { mountRows } from '../mount-rows.js';
import type { AcmeChallengeRef } from '../../../../machines/acme-challenge.machine.js';
import { ACME_EVENT_TYPES, type AcmeEvent, type AcmeIdentifier } from './events.js';

/** The schedule kind of a challenge validation that is due. */
export const ACME_VALIDATE = 'pki-acme-validate';
const validateKey = (mount: string, authzId: string, type: string) =>
  `pki-acme/${mount}/${authzId}/${type}`;
/** The schedule kind of an order's expiry. */
export const ACME_EXPIRE = 'pki-acme-expire';
const expireKey = (mount: string, orderId: string) => `pki-acme-order/${mount}/${orderId}`;

const TABLES = [
  'pki_acme_config',
  'pki_acme_eab',
  'pki_acme_accounts',
  'pki_acme_orders',
  'pki_acme_authzs',
  'pki_acme_challenges',
] as const;
const OWN = new Set<string>(ACME_EVENT_TYPES);

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS pki_acme_config (mount TEXT NOT NULL, kind TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (mount, kind));
  CREATE TABLE IF NOT EXISTS pki_acme_eab (mount TEXT NOT NULL, eab_id TEXT NOT NULL, key TEXT NOT NULL, directory TEXT NOT NULL,
    created_on TEXT NOT NULL, account_id TEXT NOT NULL, PRIMARY KEY (mount, eab_id));
  CREATE TABLE IF NOT EXISTS pki_acme_accounts (mount TEXT NOT NULL, account_id TEXT NOT NULL, thumbprint TEXT NOT NULL, jwk TEXT NOT NULL,
    contact TEXT NOT NULL, directory TEXT NOT NULL, eab_id TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (mount, account_id));
  CREATE INDEX IF NOT EXISTS pki_acme_accounts_key ON pki_acme_accounts (mount, thumbprint);
  CREATE TABLE IF NOT EXISTS pki_acme_orders (mount TEXT NOT NULL, order_id TEXT NOT NULL, account_id TEXT NOT NULL, directory TEXT NOT NULL,
    status TEXT NOT NULL, identifiers TEXT NOT NULL, authorizations TEXT NOT NULL, not_before TEXT NOT NULL, not_after TEXT NOT NULL,
    expires TEXT NOT NULL, error TEXT NOT NULL, serial TEXT NOT NULL, certificate TEXT NOT NULL, cert_not_after TEXT NOT NULL,
    position INTEGER NOT NULL, PRIMARY KEY (mount, order_id));
  CREATE INDEX IF NOT EXISTS pki_acme_orders_account ON pki_acme_orders (mount, account_id, position);
  CREATE INDEX IF NOT EXISTS pki_acme_orders_serial ON pki_acme_orders (mount, serial);
  CREATE TABLE IF NOT EXISTS pki_acme_authzs (mount TEXT NOT NULL, authz_id TEXT NOT NULL, order_id TEXT NOT NULL, account_id TEXT NOT NULL,
    identifier TEXT NOT NULL, wildcard INTEGER NOT NULL, token TEXT NOT NULL, expires TEXT NOT NULL, status TEXT NOT NULL,
    error TEXT NOT NULL, PRIMARY KEY (mount, authz_id));
  CREATE TABLE IF NOT EXISTS pki_acme_challenges (mount TEXT NOT NULL, authz_id TEXT NOT NULL, type TEXT NOT NULL, status TEXT NOT NULL,
    key_authorization TEXT NOT NULL, attempts INTEGER NOT NULL, validated TEXT NOT NULL, error TEXT NOT NULL,
    PRIMARY KEY (mount, authz_id, type));
`;

export interface AcmeAccountRow {
  mount: string;
  account_id: string;
  thumbprint: string;
  jwk: string;
  contact: string;
  directory: string;
  eab_id: string;
  status: string;
  created_at: string;
}

export interface AcmeOrderRow {
  order_id: string;
  account_id: string;
  directory: string;
  status: string;
  identifiers: string;
  authorizations: string;
  not_before: string;
  not_after: string;
  expires: string;
  error: string;
  serial: string;
  certificate: string;
  cert_not_after: string;
}

export interface AcmeAuthzRow {
  authz_id: string;
  order_id: string;
  account_id: string;
  identifier: string;
  wildcard: number;
  token: string;
  expires: string;
  status: string;
  error: string;
}

export interface AcmeChallengeRow {
  authz_id: string;
  type: string;
  status: string;
  key_authorization: string;
  attempts: number;
  validated: string;
  error: string;
}

export interface EabRow {
  eab_id: string;
  key: string;
  directory: string;
  created_on: string;
  account_id: string;
}

/** The ACME read models of every certificate authority mount, and the due validations. */
export const acmeProjection: Projection = {
  name: 'pki-acme',
  version: 1,
  tables: TABLES,
  guarded: TABLES,
  events: ACME_EVENT_TYPES,
  setup(db: Db) {
    db.exec(SCHEMA);
    const schedule = scheduleRows(db, 'pki-acme');
    const p = (sql: string) => db.prepare(sql);
    const s = {
      config: p(
        'INSERT INTO pki_acme_config (mount, kind, value) VALUES (?, ?, ?) ON CONFLICT (mount, kind) DO UPDATE SET value = excluded.value',
      ),
      eab: p(
        "INSERT INTO pki_acme_eab (mount, eab_id, key, directory, created_on, account_id) VALUES (?, ?, ?, ?, ?, '')",
      ),
      eabUsed: p('UPDATE pki_acme_eab SET account_id = ? WHERE mount = ? AND eab_id = ?'),
      eabDel: p('DELETE FROM pki_acme_eab WHERE mount = ? AND eab_id = ?'),
      account: p(
        "INSERT INTO pki_acme_accounts (mount, account_id, thumbprint, jwk, contact, directory, eab_id, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'valid', ?)",
      ),
      accountContact: p(
        'UPDATE pki_acme_accounts SET contact = ? WHERE mount = ? AND account_id = ?',
      ),
      accountKey: p(
        'UPDATE pki_acme_accounts SET jwk = ?, thumbprint = ? WHERE mount = ? AND account_id = ?',
      ),
      accountStatus: p(
        'UPDATE pki_acme_accounts SET status = ? WHERE mount = ? AND account_id = ?',
      ),
      order: p(
        `INSERT INTO pki_acme_orders (mount, order_id, account_id, directory, status, identifiers, authorizations, not_before, not_after,
          expires, error, serial, certificate, cert_not_after, position) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, '', '', '', '', ?)`,
      ),
      orderStatus: p(
        'UPDATE pki_acme_orders SET status = ?, error = ? WHERE mount = ? AND order_id = ?',
      ),
      orderIssued: p(
        "UPDATE pki_acme_orders SET status = 'valid', serial = ?, certificate = ?, cert_not_after = ? WHERE mount = ? AND order_id = ?",
      ),
      authz: p(
        `INSERT INTO pki_acme_authzs (mount, authz_id, order_id, account_id, identifier, wildcard, token, expires, status, error)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', '')`,
      ),
      authzStatus: p(
        'UPDATE pki_acme_authzs SET status = ?, error = ? WHERE mount = ? AND authz_id = ?',
      ),
      challenge: p(
        `INSERT INTO pki_acme_challenges (mount, authz_id, type, status, key_authorization, attempts, validated, error)
          VALUES (?, ?, ?, 'pending', '', 0, '', '')`,
      ),
      challengeStarted: p(
        "UPDATE pki_acme_challenges SET status = 'processing', key_authorization = ? WHERE mount = ? AND authz_id = ? AND type = ?",
      ),
      challengeAttempt: p(
        'UPDATE pki_acme_challenges SET attempts = ?, error = ? WHERE mount = ? AND authz_id = ? AND type = ?',
      ),
      challengeDone: p(
        'UPDATE pki_acme_challenges SET status = ?, validated = ?, error = ? WHERE mount = ? AND authz_id = ? AND type = ?',
      ),
    };
    /** A validation falls due (first try, or a retry after a failed attempt). */
    const due = (d: AcmeChallengeRef, dueAt: string) =>
      schedule.put({
        key: validateKey(d.mount, d.authorizationId, d.challengeType),
        kind: ACME_VALIDATE,
        dueAt,
        data: { mount: d.mount, authorizationId: d.authorizationId, type: d.challengeType },
        mount: d.mount,
      });
    return (stored: StoredEvent) => {
      if (!OWN.has(stored.type)) return;
      const e = stored as StoredEvent<AcmeEvent>;
      switch (e.type) {
        case 'PkiClusterConfigured':
          s.config.run(e.data.mount, 'cluster', canonicalJson(e.data.config));
          break;
        case 'PkiAcmeConfigured':
          s.config.run(e.data.mount, 'acme', canonicalJson(e.data.config));
          break;
        case 'AcmeEabKeyCreated': {
          const d = e.data;
          s.eab.run(d.mount, d.eabId, canonicalJson(d.key), d.directory, d.createdOn);
          break;
        }
        case 'AcmeEabKeyUsed':
          s.eabUsed.run(e.data.accountId, e.data.mount, e.data.eabId);
          break;
        case 'AcmeEabKeyDeleted':
          s.eabDel.run(e.data.mount, e.data.eabId);
          break;
        case 'AcmeAccountCreated': {
          const d = e.data;
          s.account.run(
            d.mount,
            d.accountId,
            d.thumbprint,
            canonicalJson(d.jwk),
            canonicalJson(d.contact),
            d.directory,
            d.eabId,
            d.createdAt,
          );
          break;
        }
        case 'AcmeAccountUpdated':
          s.accountContact.run(canonicalJson(e.data.contact), e.data.mount, e.data.accountId);
          break;
        case 'AcmeAccountKeyChanged':
          s.accountKey.run(
            canonicalJson(e.data.jwk),
            e.data.thumbprint,
            e.data.mount,
            e.data.accountId,
          );
          break;
        case 'AcmeAccountDeactivated':
          s.accountStatus.run('deactivated', e.data.mount, e.data.accountId);
          break;
        case 'AcmeOrderCreated': {
          const d = e.data;
          s.order.run(
            d.mount,
            d.orderId,
            d.accountId,
            d.directory,
            canonicalJson(d.identifiers),
            canonicalJson(d.authorizationIds),
            d.notBefore,
            d.notAfter,
            d.expires,
            e.position,
          );
          schedule.put({
            key: expireKey(d.mount, d.orderId),
            kind: ACME_EXPIRE,
            dueAt: d.expires,
            data: { mount: d.mount, orderId: d.orderId },
            mount: d.mount,
          });
          break;
        }
        case 'AcmeOrderReady':
          s.orderStatus.run('ready', '', e.data.mount, e.data.orderId);
          break;
        case 'AcmeOrderIssued': {
          const d = e.data;
          s.orderIssued.run(d.serial, d.certificate, d.notAfter, d.mount, d.orderId);
          schedule.remove(expireKey(d.mount, d.orderId));
          break;
        }
        case 'AcmeOrderInvalidated':
          s.orderStatus.run('invalid', e.data.reason, e.data.mount, e.data.orderId);
          schedule.remove(expireKey(e.data.mount, e.data.orderId));
          break;
        case 'AcmeAuthorizationCreated': {
          const d = e.data;
          s.authz.run(
            d.mount,
            d.authorizationId,
            d.orderId,
            d.accountId,
            canonicalJson(d.identifier),
            d.wildcard ? 1 : 0,
            d.token,
            d.expires,
          );
          break;
        }
        case 'AcmeAuthorizationValidated':
          s.authzStatus.run('valid', '', e.data.mount, e.data.authorizationId);
          break;
        case 'AcmeAuthorizationInvalidated':
          s.authzStatus.run('invalid', e.data.reason, e.data.mount, e.data.authorizationId);
          break;
        case 'AcmeAuthorizationDeactivated':
          s.authzStatus.run('deactivated', '', e.data.mount, e.data.authorizationId);
          break;
        case 'AcmeChallengeOffered':
          s.challenge.run(e.data.mount, e.data.authorizationId, e.data.challengeType);
          break;
        case 'AcmeChallengeStarted': {
          const d = e.data;
          s.challengeStarted.run(d.keyAuthorization, d.mount, d.authorizationId, d.challengeType);
          due(d, d.dueAt);
          break;
        }
        case 'AcmeChallengeAttemptFailed': {
          const d = e.data;
          s.challengeAttempt.run(d.attempt, d.error, d.mount, d.authorizationId, d.challengeType);
          due(d, d.retryAt);
          break;
        }
        case 'AcmeChallengeValidated': {
          const d = e.data;
          s.challengeDone.run(
            'valid',
            d.validatedAt,
            '',
            d.mount,
            d.authorizationId,
            d.challengeType,
          );
          schedule.remove(validateKey(d.mount, d.authorizationId, d.challengeType));
          break;
        }
        case 'AcmeChallengeFailed': {
          const d = e.data;
          s.challengeDone.run('invalid', '', d.error, d.mount, d.authorizationId, d.challengeType);
          schedule.remove(validateKey(d.mount, d.authorizationId, d.challengeType));
          break;
        }
        default: {
          const never: never = e;
          void never;
        }
      }
    };
  },
};

/** Read-model queries of the ACME tables. */
export class AcmeQueries {
  readonly config: <T>(mount: string, kind: 'acme' | 'cluster') => T | undefined;
  readonly eab: (mount: string, id: string) => EabRow | undefined;
  readonly account: (mount: string, id: string) => AcmeAccountRow | undefined;
  readonly accountByKey: (mount: string, thumbprint: string) => AcmeAccountRow | undefined;
  readonly order: (mount: string, id: string) => AcmeOrderRow | undefined;
  readonly orderBySerial: (mount: string, serial: string) => AcmeOrderRow | undefined;
  readonly authz: (mount: string, id: string) => AcmeAuthzRow | undefined;
  /** When a processing challenge's next validation attempt is due (its schedule row). */
  readonly validationDue: (mount: string, authzId: string, type: string) => string | undefined;
  readonly #s;

  constructor(db: Db) {
    db.exec(SCHEMA);
    const rows = mountRows(db);
    this.config = rows.json('pki_acme_config');
    this.eab = rows.one('pki_acme_eab', 'eab_id');
    this.account = rows.one('pki_acme_accounts', 'account_id');
    this.accountByKey = rows.one('pki_acme_accounts', 'thumbprint');
    this.order = rows.one('pki_acme_orders', 'order_id');
    this.orderBySerial = rows.one('pki_acme_orders', 'serial');
    this.authz = rows.one('pki_acme_authzs', 'authz_id');
    scheduleProjection.setup(db);
    const due = db.prepare<[string], { due_at: string }>(
      `SELECT due_at FROM ${SCHEDULE_TABLE} WHERE key = ?`,
    );
    this.validationDue = (mount, authzId, type) =>
      due.get(validateKey(mount, authzId, type))?.due_at;
    this.#s = {
      eabs: db.prepare<[string], EabRow>(
        'SELECT * FROM pki_acme_eab WHERE mount = ? ORDER BY eab_id',
      ),
      orders: db.prepare<[string, string], { order_id: string }>(
        'SELECT order_id FROM pki_acme_orders WHERE mount = ? AND account_id = ? ORDER BY position',
      ),
      challenges: db.prepare<[string, string], AcmeChallengeRow>(
        'SELECT * FROM pki_acme_challenges WHERE mount = ? AND authz_id = ? ORDER BY type',
      ),
    };
  }

  eabs = (mount: string): EabRow[] => this.#s.eabs.all(mount);
  orders = (mount: string, accountId: string): string[] =>
    this.#s.orders.all(mount, accountId).map((r) => r.order_id);
  challenges = (mount: string, authzId: string): AcmeChallengeRow[] =>
    this.#s.challenges.all(mount, authzId);
}

/** An identifier column as its value. */
export const identifierOf = (row: { identifier: string }): AcmeIdentifier =>
  JSON.parse(row.identifier) as AcmeIdentifier;
