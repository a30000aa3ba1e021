import { canonicalJson } from '../../core/canonical.js';
import type { Db } from '../../core/database.js';
import type { StreamFold } from '../../core/command-handler.js';
import type { StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import { scheduleRows } from '../../core/schedule.js';
import { mountRows } from './mount-rows.js';
import {
  crlShapeChanged,
  DEFAULT_CRL_CONFIG,
  PKI_EVENT_TYPES,
  type AutoTidyConfig,
  type CrlConfig,
  type IssuerSettings,
  type PkiEvent,
} from './events.js';

/** The schedule kind of automatic CRL rebuilds. */
export const CRL_REBUILD = 'pki-crl-rebuild';
/** Schedule kinds: a started tidy waiting to run, and the next auto-tidy. */
export const PKI_TIDY = 'pki-tidy';
export const PKI_AUTO_TIDY = 'pki-auto-tidy';
const tidyKey = (mount: string) => `pki-tidy/${mount}`;
const autoTidyKey = (mount: string) => `pki-auto-tidy/${mount}`;
const crlRebuildKey = (mount: string, issuerId: string) => `pki-crl/${mount}/${issuerId}`;

const TABLES = [
  'pki_roles',
  'pki_keys',
  'pki_issuers',
  'pki_config',
  'pki_certs',
  'pki_crls',
  'pki_delta_crls',
  'pki_crl_shapes',
] as const;
const OWN = new Set<string>(PKI_EVENT_TYPES);

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS pki_roles (mount TEXT NOT NULL, name TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (mount, name));
  CREATE TABLE IF NOT EXISTS pki_keys (mount TEXT NOT NULL, key_id TEXT NOT NULL, name TEXT NOT NULL, key_type TEXT NOT NULL,
    key_bits INTEGER NOT NULL, private_key TEXT NOT NULL, public_key TEXT NOT NULL, position INTEGER NOT NULL, PRIMARY KEY (mount, key_id));
  CREATE TABLE IF NOT EXISTS pki_issuers (mount TEXT NOT NULL, issuer_id TEXT NOT NULL, name TEXT NOT NULL, key_id TEXT NOT NULL,
    certificate TEXT NOT NULL, serial TEXT NOT NULL, not_after TEXT NOT NULL, public_key TEXT NOT NULL, settings TEXT NOT NULL,
    position INTEGER NOT NULL, PRIMARY KEY (mount, issuer_id));
  CREATE TABLE IF NOT EXISTS pki_config (mount TEXT NOT NULL, kind TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (mount, kind));
  CREATE TABLE IF NOT EXISTS pki_certs (mount TEXT NOT NULL, serial TEXT NOT NULL, issuer_id TEXT NOT NULL, certificate TEXT NOT NULL,
    not_after TEXT NOT NULL, common_name TEXT NOT NULL, is_ca INTEGER NOT NULL, stored INTEGER NOT NULL,
    revoked_at TEXT, reason INTEGER, position INTEGER NOT NULL, revoked_position INTEGER,
    lease_id TEXT, lease_token TEXT, leased_at TEXT, lease_revoked_at TEXT, PRIMARY KEY (mount, serial));
  CREATE UNIQUE INDEX IF NOT EXISTS pki_certs_lease ON pki_certs (lease_id) WHERE lease_id IS NOT NULL;
  CREATE INDEX IF NOT EXISTS pki_certs_lease_token ON pki_certs (lease_token) WHERE lease_token IS NOT NULL;
  CREATE INDEX IF NOT EXISTS pki_certs_revoked ON pki_certs (mount, issuer_id, revoked_at) WHERE revoked_at IS NOT NULL;
  CREATE INDEX IF NOT EXISTS pki_certs_revoked_position ON pki_certs (mount, issuer_id, revoked_position) WHERE revoked_at IS NOT NULL;
  CREATE TABLE IF NOT EXISTS pki_crls (mount TEXT NOT NULL, issuer_id TEXT NOT NULL, number INTEGER NOT NULL, this_update TEXT NOT NULL,
    next_update TEXT NOT NULL, crl TEXT NOT NULL, as_of INTEGER NOT NULL, version INTEGER NOT NULL,
    PRIMARY KEY (mount, issuer_id));
  CREATE TABLE IF NOT EXISTS pki_delta_crls (mount TEXT NOT NULL, issuer_id TEXT NOT NULL, number INTEGER NOT NULL,
    base_number INTEGER NOT NULL, this_update TEXT NOT NULL, next_update TEXT NOT NULL, crl TEXT NOT NULL,
    as_of INTEGER NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (mount, issuer_id));
  CREATE TABLE IF NOT EXISTS pki_crl_shapes (mount TEXT NOT NULL PRIMARY KEY, position INTEGER NOT NULL, changed_at TEXT NOT NULL);
`;

/** Events that touch only certificates and CRLs, never a role, key, issuer or configuration. */
export const CERTIFICATE_ONLY: ReadonlySet<string> = new Set<string>([
  'CertificateIssued',
  'CertificateRevoked',
  'CertificateDeleted',
  'PkiCrlBuilt',
  'PkiDeltaCrlBuilt',
  'PkiLeaseRevoked',
]);

/**
 * The read models of every certificate authority mount. `onChanged` (given the event) lets
 * in-memory caches of roles, keys, issuers, configuration and what derives from them (chains)
 * drop what any other event made stale.
 */
export const pkiProjection = (
  onChanged: (event: StoredEvent) => void = () => undefined,
): Projection => ({
  name: 'pki',
  version: 8,
  tables: TABLES,
  // What issuance reads; certificates and CRLs are what it wrote (and CRLs are signed).
  guarded: ['pki_roles', 'pki_keys', 'pki_issuers', 'pki_config'],
  events: PKI_EVENT_TYPES,
  setup(db: Db) {
    db.exec(SCHEMA);
    const schedule = scheduleRows(db, 'pki');
    const crlConfig = db.prepare<[string], { value: string }>(
      "SELECT value FROM pki_config WHERE mount = ? AND kind = 'crl'",
    );
    const configRow = db.prepare<[string, string], { value: string }>(
      'SELECT value FROM pki_config WHERE mount = ? AND kind = ?',
    );
    const configOf = <T>(mount: string, kind: string): T | undefined => {
      const row = configRow.get(mount, kind);
      return row ? (JSON.parse(row.value) as T) : undefined;
    };
    /** The next auto-tidy, an interval after `from`, while auto-tidy is enabled. */
    const scheduleAutoTidy = (mount: string, from: string) => {
      const auto = configOf<AutoTidyConfig>(mount, 'auto-tidy');
      if (auto?.enabled)
        schedule.put({
          key: autoTidyKey(mount),
          kind: PKI_AUTO_TIDY,
          dueAt: new Date(Date.parse(from) + auto.interval_duration * 1000).toISOString(),
          data: { mount },
          mount,
        });
      else schedule.remove(autoTidyKey(mount));
    };
    const s = {
      putRole: db.prepare(
        'INSERT INTO pki_roles (mount, name, role) VALUES (?, ?, ?) ON CONFLICT (mount, name) DO UPDATE SET role = excluded.role',
      ),
      delRole: db.prepare('DELETE FROM pki_roles WHERE mount = ? AND name = ?'),
      putKey: db.prepare(
        'INSERT INTO pki_keys (mount, key_id, name, key_type, key_bits, private_key, public_key, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      renameKey: db.prepare('UPDATE pki_keys SET name = ? WHERE mount = ? AND key_id = ?'),
      delKey: db.prepare('DELETE FROM pki_keys WHERE mount = ? AND key_id = ?'),
      putIssuer: db.prepare(
        'INSERT INTO pki_issuers (mount, issuer_id, name, key_id, certificate, serial, not_after, public_key, settings, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      updIssuer: db.prepare(
        'UPDATE pki_issuers SET name = ?, settings = ? WHERE mount = ? AND issuer_id = ?',
      ),
      linkIssuer: db.prepare('UPDATE pki_issuers SET key_id = ? WHERE mount = ? AND issuer_id = ?'),
      delIssuer: db.prepare('DELETE FROM pki_issuers WHERE mount = ? AND issuer_id = ?'),
      delIssuerCrl: db.prepare('DELETE FROM pki_crls WHERE mount = ? AND issuer_id = ?'),
      delIssuerDelta: db.prepare('DELETE FROM pki_delta_crls WHERE mount = ? AND issuer_id = ?'),
      putDelta: db.prepare(
        `INSERT INTO pki_delta_crls (mount, issuer_id, number, base_number, this_update, next_update, crl, as_of, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (mount, issuer_id) DO UPDATE SET number = excluded.number, base_number = excluded.base_number,
           this_update = excluded.this_update, next_update = excluded.next_update, crl = excluded.crl, as_of = excluded.as_of,
           version = excluded.version`,
      ),
      delConfig: db.prepare('DELETE FROM pki_config WHERE mount = ? AND kind = ?'),
      putShape: db.prepare(
        `INSERT INTO pki_crl_shapes (mount, position, changed_at) VALUES (?, ?, ?)
         ON CONFLICT (mount) DO UPDATE SET position = excluded.position, changed_at = excluded.changed_at`,
      ),
      putConfig: db.prepare(
        'INSERT INTO pki_config (mount, kind, value) VALUES (?, ?, ?) ON CONFLICT (mount, kind) DO UPDATE SET value = excluded.value',
      ),
      putCert: db.prepare(
        'INSERT INTO pki_certs (mount, serial, issuer_id, certificate, not_after, common_name, is_ca, stored, position, lease_id, lease_token, leased_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      revokeCert: db.prepare(
        `INSERT INTO pki_certs (mount, serial, issuer_id, certificate, not_after, common_name, is_ca, stored, revoked_at, reason, position, revoked_position)
         VALUES (?, ?, ?, ?, ?, '', 0, 1, ?, ?, ?, ?)
         ON CONFLICT (mount, serial) DO UPDATE SET revoked_at = excluded.revoked_at, reason = excluded.reason, stored = 1,
           revoked_position = excluded.revoked_position,
           certificate = CASE WHEN pki_certs.certificate = '' THEN excluded.certificate ELSE pki_certs.certificate END`,
      ),
      delCert: db.prepare('DELETE FROM pki_certs WHERE mount = ? AND serial = ?'),
      endLease: db.prepare(
        'UPDATE pki_certs SET lease_revoked_at = ? WHERE mount = ? AND serial = ?',
      ),
      putCrl: db.prepare(
        `INSERT INTO pki_crls (mount, issuer_id, number, this_update, next_update, crl, as_of, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (mount, issuer_id) DO UPDATE SET number = excluded.number, this_update = excluded.this_update,
           next_update = excluded.next_update, crl = excluded.crl, as_of = excluded.as_of, version = excluded.version`,
      ),
    };
    return (stored: StoredEvent) => {
      if (!OWN.has(stored.type)) return;
      const e = stored as StoredEvent<PkiEvent>;
      if (!CERTIFICATE_ONLY.has(e.type)) onChanged(stored);
      switch (e.type) {
        case 'PkiRoleWritten':
          s.putRole.run(e.data.mount, e.data.name, canonicalJson(e.data.role));
          break;
        case 'PkiRoleDeleted':
          s.delRole.run(e.data.mount, e.data.name);
          break;
        case 'PkiKeyCreated': {
          const d = e.data;
          s.putKey.run(
            d.mount,
            d.keyId,
            d.name,
            d.keyType,
            d.keyBits,
            canonicalJson(d.privateKey),
            d.publicKey,
            e.position,
          );
          break;
        }
        case 'PkiKeyRenamed':
          s.renameKey.run(e.data.name, e.data.mount, e.data.keyId);
          break;
        case 'PkiKeyDeleted':
          s.delKey.run(e.data.mount, e.data.keyId);
          break;
        case 'PkiIssuerCreated': {
          const { mount, issuerId, keyId, certificate, serial, notAfter, publicKey, ...rest } =
            e.data;
          const settings: IssuerSettings = rest;
          s.putIssuer.run(
            mount,
            issuerId,
            settings.name,
            keyId,
            certificate,
            serial,
            notAfter,
            publicKey,
            canonicalJson(settings),
            e.position,
          );
          break;
        }
        case 'PkiIssuerUpdated': {
          const { mount, issuerId, ...settings } = e.data;
          s.updIssuer.run(settings.name, canonicalJson(settings), mount, issuerId);
          break;
        }
        case 'PkiIssuerKeyLinked':
          s.linkIssuer.run(e.data.keyId, e.data.mount, e.data.issuerId);
          break;
        case 'PkiIssuerDeleted':
          s.delIssuer.run(e.data.mount, e.data.issuerId);
          s.delIssuerCrl.run(e.data.mount, e.data.issuerId);
          s.delIssuerDelta.run(e.data.mount, e.data.issuerId);
          schedule.remove(crlRebuildKey(e.data.mount, e.data.issuerId));
          break;
        case 'PkiUrlsConfigured':
          s.putConfig.run(e.data.mount, 'urls', canonicalJson(e.data.urls));
          break;
        case 'PkiCrlConfigured': {
          // A change every CRL shows: a CRL that read the log before it is built again.
          const before = configOf<CrlConfig>(e.data.mount, 'crl');
          if (crlShapeChanged({ ...DEFAULT_CRL_CONFIG, ...before }, e.data.config))
            s.putShape.run(e.data.mount, e.position, e.time);
          s.putConfig.run(e.data.mount, 'crl', canonicalJson(e.data.config));
          break;
        }
        case 'PkiIssuersConfigured':
          s.putConfig.run(
            e.data.mount,
            'issuers',
            canonicalJson({
              defaultIssuer: e.data.defaultIssuer,
              defaultFollowsLatestIssuer: e.data.defaultFollowsLatestIssuer,
            }),
          );
          break;
        case 'PkiKeysConfigured':
          s.putConfig.run(e.data.mount, 'keys', canonicalJson({ defaultKey: e.data.defaultKey }));
          break;
        case 'PkiTidyStarted': {
          const { mount, ...run } = e.data;
          s.putConfig.run(mount, 'tidy-run', canonicalJson(run));
          // The run is due at once; the auto-tidy row comes back when it finishes.
          schedule.put({
            key: tidyKey(mount),
            kind: PKI_TIDY,
            dueAt: run.startedAt,
            data: { mount },
            mount,
          });
          schedule.remove(autoTidyKey(mount));
          break;
        }
        case 'PkiTidied': {
          const { mount, ...result } = e.data;
          s.putConfig.run(mount, 'tidy', canonicalJson(result));
          s.delConfig.run(mount, 'tidy-run');
          schedule.remove(tidyKey(mount));
          scheduleAutoTidy(mount, result.finishedAt);
          break;
        }
        case 'PkiExternalPolicyConfigured':
          s.putConfig.run(e.data.mount, 'external-policy', canonicalJson(e.data.config));
          break;
        case 'PkiExternalPolicyConsulted':
          if (e.data.outcome === 'approved')
            s.putConfig.run(e.data.mount, 'external-policy-success', canonicalJson({ at: e.time }));
          break;
        case 'PkiAutoTidyConfigured': {
          s.putConfig.run(e.data.mount, 'auto-tidy', canonicalJson(e.data.config));
          if (configOf(e.data.mount, 'tidy-run') === undefined)
            scheduleAutoTidy(e.data.mount, e.time);
          break;
        }
        case 'CertificateIssued': {
          const d = e.data;
          s.putCert.run(
            d.mount,
            d.serial,
            d.issuerId,
            d.certificate,
            d.notAfter,
            d.commonName,
            d.isCa ? 1 : 0,
            d.stored ? 1 : 0,
            e.position,
            d.leaseId ?? null,
            d.leaseToken ?? null,
            d.leaseId === undefined ? null : e.time,
          );
          break;
        }
        case 'CertificateRevoked': {
          const d = e.data;
          s.revokeCert.run(
            d.mount,
            d.serial,
            d.issuerId,
            d.certificate ?? '',
            d.notAfter,
            d.revokedAt,
            d.reason ?? null,
            e.position,
            e.position,
          );
          break;
        }
        case 'CertificateDeleted':
          s.delCert.run(e.data.mount, e.data.serial);
          break;
        case 'PkiLeaseRevoked':
          s.endLease.run(e.data.revokedAt, e.data.mount, e.data.serial);
          break;
        case 'PkiDeltaCrlBuilt': {
          const d = e.data;
          s.putDelta.run(
            d.mount,
            d.issuerId,
            d.number,
            d.baseNumber,
            d.thisUpdate,
            d.nextUpdate,
            d.crl,
            // A CRL built inside its revocation's command (before `asOf`) saw all before it.
            d.asOf ?? e.position,
            e.version,
          );
          break;
        }
        case 'PkiCrlBuilt': {
          const d = e.data;
          s.putCrl.run(
            d.mount,
            d.issuerId,
            d.number,
            d.thisUpdate,
            d.nextUpdate,
            d.crl,
            d.asOf ?? e.position,
            e.version,
          );
          // With auto_rebuild, the next build is due a grace period before this CRL expires.
          const row = crlConfig.get(d.mount);
          const config = row
            ? (JSON.parse(row.value) as {
                auto_rebuild?: boolean;
                auto_rebuild_grace_period?: number;
              })
            : {};
          const key = crlRebuildKey(d.mount, d.issuerId);
          if (config.auto_rebuild) {
            const dueAt = new Date(
              Date.parse(d.nextUpdate) - (config.auto_rebuild_grace_period ?? 12 * 3600) * 1000,
            ).toISOString();
            schedule.put({
              key,
              kind: CRL_REBUILD,
              dueAt,
              data: { mount: d.mount, issuerId: d.issuerId },
              mount: d.mount,
            });
          } else {
            schedule.remove(key);
          }
          break;
        }
        default: {
          const _never: never = e;
          throw new Error(`unhandled pki event ${canonicalJson(_never)}`);
        }
      }
    };
  },
});

/** A stored CA key row. */
export interface KeyRow {
  key_id: string;
  name: string;
  key_type: 'rsa' | 'ec' | 'ed25519';
  key_bits: number;
  /** JSON of the sealed PKCS#8 PEM */
  private_key: string;
  public_key: string;
}

/** A stored issuer row with its settings parsed. */
export interface IssuerRow {
  issuer_id: string;
  name: string;
  key_id: string;
  certificate: string;
  serial: string;
  not_after: string;
  public_key: string;
  settings: IssuerSettings;
  position: number;
}

/** A stored certificate row. */
export interface CertRow {
  serial: string;
  issuer_id: string;
  certificate: string;
  not_after: string;
  common_name: string;
  is_ca: number;
  stored: number;
  revoked_at: string | null;
  reason: number | null;
}

/**
 * An issuer whose CRL is behind its revocations or its mount's `config/crl`, or missing. `complete`
 * 1: the complete CRL is to be built (it is missing, or the configuration changed since it read the
 * log); 0: the revocations alone, built as a revocation would.
 */
export interface CrlBehind {
  mount: string;
  issuer_id: string;
  complete: number;
}

/** A certificate issued with a lease (`generate_lease`), as its row holds the lease. */
export interface LeaseRow {
  mount: string;
  serial: string;
  lease_id: string;
  lease_token: string | null;
  leased_at: string;
  not_after: string;
}

/** A stored CRL row. */
export interface CrlRow {
  issuer_id: string;
  number: number;
  this_update: string;
  next_update: string;
  crl: string;
  /** the log's position the CRL's list was read at: every revocation up to it is on the CRL */
  as_of: number;
}

/** Queries over the read models; built after the projection has created its tables. */
export class PkiQueries {
  readonly key: (mount: string, id: string) => KeyRow | undefined;
  readonly config: <T>(mount: string, kind: string) => T | undefined;
  readonly cert: (mount: string, serial: string) => CertRow | undefined;
  readonly crl: (mount: string, issuerId: string) => CrlRow | undefined;
  readonly deltaCrl: (mount: string, issuerId: string) => CrlRow | undefined;
  readonly #s;

  constructor(db: Db) {
    db.exec(SCHEMA);
    const rows = mountRows(db);
    this.key = rows.one('pki_keys', 'key_id');
    this.config = rows.json('pki_config');
    this.cert = rows.one('pki_certs', 'serial');
    this.crl = rows.one('pki_crls', 'issuer_id');
    this.deltaCrl = rows.one('pki_delta_crls', 'issuer_id');
    this.#s = {
      role: db.prepare<[string, string], { role: string }>(
        'SELECT role FROM pki_roles WHERE mount = ? AND name = ?',
      ),
      roles: db.prepare<[string], { name: string }>(
        'SELECT name FROM pki_roles WHERE mount = ? ORDER BY name',
      ),
      keys: db.prepare<[string], KeyRow>(
        'SELECT * FROM pki_keys WHERE mount = ? ORDER BY position',
      ),
      issuer: db.prepare<[string, string], IssuerRow & { settings: string }>(
        'SELECT * FROM pki_issuers WHERE mount = ? AND issuer_id = ?',
      ),
      issuers: db.prepare<[string], IssuerRow & { settings: string }>(
        'SELECT * FROM pki_issuers WHERE mount = ? ORDER BY position',
      ),
      certs: db.prepare<[string], { serial: string }>(
        'SELECT serial FROM pki_certs WHERE mount = ? AND stored = 1 ORDER BY position',
      ),
      storedCerts: db.prepare<[string], CertRow>(
        'SELECT * FROM pki_certs WHERE mount = ? AND stored = 1 ORDER BY position',
      ),
      revoked: db.prepare<[string], { serial: string }>(
        'SELECT serial FROM pki_certs WHERE mount = ? AND revoked_at IS NOT NULL ORDER BY position',
      ),
      revokedOf: db
        .prepare<[string, string], string>(
          `SELECT ${CRL_LINE} FROM pki_certs WHERE mount = ? AND issuer_id = ? AND revoked_at IS NOT NULL`,
        )
        .pluck(),
      revokedSince: db
        .prepare<[string, string, string], string>(
          `SELECT ${CRL_LINE} FROM pki_certs WHERE mount = ? AND issuer_id = ? AND revoked_at IS NOT NULL AND revoked_at >= ?`,
        )
        .pluck(),
      crlFold: db.prepare<[string, string, string, string], { number: number; version: number }>(
        `SELECT number, version FROM pki_crls WHERE mount = ? AND issuer_id = ?
         UNION ALL SELECT number, version FROM pki_delta_crls WHERE mount = ? AND issuer_id = ?
         ORDER BY version DESC LIMIT 1`,
      ),
      crlHead: db.prepare<[string, string], { number: number; this_update: string; as_of: number }>(
        'SELECT number, this_update, as_of FROM pki_crls WHERE mount = ? AND issuer_id = ?',
      ),
      crlsBehind: db.prepare<[string, string, string], CrlBehind>(
        `SELECT i.mount, i.issuer_id,
             CASE WHEN c.issuer_id IS NULL OR (k.position > c.as_of AND k.changed_at <= ?) THEN 1 ELSE 0 END AS complete
           FROM pki_issuers i
           LEFT JOIN pki_crls c ON c.mount = i.mount AND c.issuer_id = i.issuer_id
           LEFT JOIN pki_delta_crls d ON d.mount = i.mount AND d.issuer_id = i.issuer_id
           LEFT JOIN pki_crl_shapes k ON k.mount = i.mount
         WHERE c.issuer_id IS NULL OR (k.position > c.as_of AND k.changed_at <= ?) OR EXISTS (SELECT 1 FROM pki_certs x
           WHERE x.mount = i.mount AND x.issuer_id = i.issuer_id AND x.revoked_at IS NOT NULL
             AND x.revoked_position > CASE WHEN d.as_of > c.as_of THEN d.as_of ELSE c.as_of END
             AND x.revoked_at <= ?)
         ORDER BY i.mount, i.position`,
      ),
      lease: db.prepare<[string, string], LeaseRow>(
        `SELECT mount, serial, lease_id, lease_token, leased_at, not_after FROM pki_certs
         WHERE lease_id = ? AND lease_revoked_at IS NULL AND not_after > ?`,
      ),
      leasesFrom: db.prepare<[number, string, string], LeaseRow>(
        `SELECT mount, serial, lease_id, lease_token, leased_at, not_after FROM pki_certs
         WHERE lease_id IS NOT NULL AND substr(lease_id, 1, ?) = ? AND lease_revoked_at IS NULL
           AND not_after > ? ORDER BY lease_id`,
      ),
      leasesOfToken: db.prepare<[string, string], LeaseRow>(
        `SELECT mount, serial, lease_id, lease_token, leased_at, not_after FROM pki_certs
         WHERE lease_token = ? AND lease_revoked_at IS NULL AND not_after > ? ORDER BY lease_id`,
      ),
      expired: db.prepare<[string, string], CertRow>(
        'SELECT * FROM pki_certs WHERE mount = ? AND not_after < ? AND is_ca = 0',
      ),
    };
  }

  role(mount: string, name: string): unknown {
    const row = this.#s.role.get(mount, name);
    return row ? (JSON.parse(row.role) as unknown) : undefined;
  }
  roleNames = (mount: string): string[] => this.#s.roles.all(mount).map((r) => r.name);
  keys = (mount: string): KeyRow[] => this.#s.keys.all(mount);
  issuer(mount: string, id: string): IssuerRow | undefined {
    const row = this.#s.issuer.get(mount, id);
    return row ? { ...row, settings: JSON.parse(row.settings) as IssuerSettings } : undefined;
  }
  issuers = (mount: string): IssuerRow[] =>
    this.#s.issuers
      .all(mount)
      .map((row) => ({ ...row, settings: JSON.parse(row.settings) as IssuerSettings }));
  storedSerials = (mount: string): string[] => this.#s.certs.all(mount).map((r) => r.serial);
  /** The stored certificates of a mount, in the order they were issued. */
  storedCerts = (mount: string): CertRow[] => this.#s.storedCerts.all(mount);
  revokedSerials = (mount: string): string[] => this.#s.revoked.all(mount).map((r) => r.serial);
  /**
   * The issuer's revoked certificates as CRL lines (`crlEntry`); with `since`, only those revoked
   * at or after it (a delta CRL's, read through the revoked index rather than filtered from all).
   */
  revokedOf = (mount: string, issuerId: string, since?: string): string[] =>
    since === undefined
      ? this.#s.revokedOf.all(mount, issuerId)
      : this.#s.revokedSince.all(mount, issuerId, since);
  expiredBefore = (mount: string, time: string): CertRow[] => this.#s.expired.all(mount, time);
  /** A certificate's lease, while it lasts (not revoked itself, not past its `notAfter`). */
  lease = (leaseId: string, now: string): LeaseRow | undefined => this.#s.lease.get(leaseId, now);
  /** The leases that last at `now` whose ids start with `prefix`, by id. */
  leasesWithPrefix = (prefix: string, now: string): LeaseRow[] =>
    this.#s.leasesFrom.all(prefix.length, prefix, now);
  /** The leases that last at `now` obtained with the token of this accessor. */
  leasesOfToken = (accessor: string, now: string): LeaseRow[] =>
    this.#s.leasesOfToken.all(accessor, now);
  /**
   * Issuers whose CRL misses a revocation or a `config/crl` change made at or before `madeBy` (one
   * recorded after the position the CRL's list was read at), or that have no CRL: what a CRL build
   * a process did not finish leaves behind. Without `madeBy`, any revocation or change.
   */
  crlsBehind = (madeBy = '9999-12-31T23:59:59.999Z'): CrlBehind[] =>
    this.#s.crlsBehind.all(madeBy, madeBy, madeBy);
  /**
   * The fold of the issuer's CRL stream (`crlDecider`) as the CRL rows hold it: the number of the
   * latest CRL, complete or delta, at its event's version. A cold fold then reads the CRLs after
   * it, not every CRL the issuer ever signed (megabytes each at 100,000 revoked).
   */
  crlFold(mount: string, issuerId: string): StreamFold<{ number: number }> | undefined {
    const row = this.#s.crlFold.get(mount, issuerId, mount, issuerId);
    return row && { state: { number: row.number }, version: row.version };
  }
  /** The issuer's complete CRL without its bytes: its number, when it was built, what it read. */
  crlHead = (mount: string, issuerId: string) => this.#s.crlHead.get(mount, issuerId);
}

/**
 * A revoked certificate as one line of text, `serial revoked_at reason` (the reason empty when
 * none): one string a row, so a long list reaches the CRL thread as an array of strings.
 */
const CRL_LINE = `serial || ' ' || revoked_at || ' ' || COALESCE(CAST(reason AS TEXT), '')`;
