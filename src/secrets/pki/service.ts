import type { KeyObject } from 'node:crypto';
import { ValidationError } from '../../core/errors.js';
import type { Decider } from '../../core/command-handler.js';
import type { AuditMetadata, NewEvent } from '../../core/events.js';
import { NAME_PATTERN, type FieldData } from '../fields.js';
import type { Authority } from './authority.js';
import { hasCrlSign, newIssuerSettings } from './authority.js';
import { configDecider, issuerDecider, keyDecider, roleDecider } from './deciders.js';
import { streams, type IssuerSettings } from './events.js';
import type { CONFIG_ISSUERS, ISSUER } from './paths.js';
import type { ROLE_FIELDS } from './paths-role.js';
import type { IssuerRow, KeyRow } from './projection.js';
import { revokeIssuer } from './revoke.js';
import { roleFromInput, type Role } from './role.js';

const USAGES = ['read-only', 'issuing-certificates', 'crl-signing', 'ocsp-signing'];

/**
 * The certificate authority's commands on roles, issuers, keys and defaults: each validates, then
 * records its events through the command handler. Routes parse, call one of these, and present;
 * issuing, CA generation, revocation and tidy have their own modules (issue.ts, ca.ts, revoke.ts,
 * tidy.ts) and CRL and URL settings theirs (settings.ts).
 */
export class PkiService {
  constructor(readonly authority: Authority) {}

  private record<S, E extends NewEvent>(
    stream: string,
    decider: Decider<S, E>,
    event: E,
    meta: AuditMetadata,
  ): void {
    this.authority.append(stream, decider, () => [event], meta);
  }

  /** Writes a role: POST replaces it (from the defaults), PATCH merges into the stored one. */
  writeRole(
    mount: string,
    name: string,
    d: FieldData<typeof ROLE_FIELDS>,
    patch: boolean,
    meta: AuditMetadata,
  ): Promise<{ role: Role; warnings: string[] }> {
    return this.authority.run(() => {
      // POST replaces the role: the stored one is read only to be patched.
      const stored = patch ? (this.authority.q.role(mount, name) as Role | undefined) : undefined;
      if (patch && !stored) throw new ValidationError('Unable to fetch role entry to patch');
      const { role, warnings } = roleFromInput(d, stored);
      // Read before the append, which a role's event does not change (and the remembered
      // configuration is still there to answer it without a query).
      if (role.issuer_ref === 'default' && !this.authority.defaults(mount).defaultIssuer) {
        warnings.push(
          'Issuing Certificate was set to default, but no default issuing certificate (configurable at /config/issuers) is currently set',
        );
      }
      this.record(
        streams.role(mount, name),
        roleDecider,
        { type: 'PkiRoleWritten', data: { mount, name, role } },
        meta,
      );
      return { role, warnings };
    });
  }

  /** Deletes a role; deleting one that is not there does nothing. */
  deleteRole(mount: string, name: string, meta: AuditMetadata): Promise<void> {
    return this.authority.run(() => {
      if (!this.authority.q.role(mount, name)) return;
      this.record(
        streams.role(mount, name),
        roleDecider,
        { type: 'PkiRoleDeleted', data: { mount, name } },
        meta,
      );
    });
  }

  /** Updates an issuer's settings: POST replaces them (from the defaults), PATCH merges. */
  updateIssuer(
    mount: string,
    b: FieldData<typeof ISSUER.fields>,
    patch: boolean,
    meta: AuditMetadata,
  ): Promise<IssuerRow | undefined> {
    return this.authority.run(() => {
      const { authority } = this;
      const row = authority.resolveIssuer(mount, b.get('ref'));
      const base: IssuerSettings = patch
        ? row.settings
        : { ...newIssuerSettings(row.settings.name), name: row.settings.name };
      const pick = <T>(field: Parameters<typeof b.sent>[0], value: () => T, fallback: T): T =>
        b.sent(field) ? value() : fallback;
      const name = pick('issuer_name', () => b.get('issuer_name') ?? '', base.name);
      if (name === 'default') throw new ValidationError('reserved issuer name: default');
      if (name && !NAME_PATTERN.test(name))
        throw new ValidationError(`invalid issuer name ${JSON.stringify(name)}`);
      if (
        name &&
        authority.q
          .issuers(mount)
          .some((i) => i.settings.name === name && i.issuer_id !== row.issuer_id)
      ) {
        throw new ValidationError(`issuer name (${name}) already in use`);
      }
      const behavior = b.get('leaf_not_after_behavior') ?? base.leafNotAfterBehavior;
      if (behavior !== 'err' && behavior !== 'truncate' && behavior !== 'permit') {
        throw new ValidationError(
          'Unknown value for field `leaf_not_after_behavior`. Possible values are `err`, `truncate`, and `permit`.',
        );
      }
      const list = (
        field:
          | 'usage'
          | 'manual_chain'
          | 'issuing_certificates'
          | 'crl_distribution_points'
          | 'ocsp_servers',
        fallback: string[],
      ) => pick(field, () => b.get(field) ?? [], fallback);
      const usage = list('usage', base.usage);
      for (const u of usage)
        if (!USAGES.includes(u))
          throw new ValidationError(
            `unknown issuer usage ${JSON.stringify(u)}; must be one of ${USAGES.join(', ')}`,
          );
      const current = new Set(row.settings.usage);
      const changed = usage.length !== current.size || usage.some((u) => !current.has(u));
      if (changed && row.settings.revokedAt !== undefined && usage.includes('issuing-certificates'))
        throw new ValidationError(
          'This issuer was revoked; unable to modify its usage to include certificate signing again. Reissue this certificate (preferably with a new key) and modify that entry instead.',
        );
      if (changed && usage.includes('crl-signing') && !hasCrlSign(authority.parsed(row)))
        throw new ValidationError(
          "This issuer's underlying certificate lacks the CRLSign KeyUsage value; unable to set CRLSigningUsage on this issuer as a result.",
        );
      const manualChain = list('manual_chain', base.manualChain).map((ref) =>
        ref === 'self' ? row.issuer_id : authority.resolveIssuer(mount, ref).issuer_id,
      );
      const settings: IssuerSettings = {
        name,
        leafNotAfterBehavior: behavior,
        usage,
        manualChain,
        revocationSignatureAlgorithm:
          b.get('revocation_signature_algorithm') ?? base.revocationSignatureAlgorithm,
        issuingCertificates: list('issuing_certificates', base.issuingCertificates),
        crlDistributionPoints: list('crl_distribution_points', base.crlDistributionPoints),
        ocspServers: list('ocsp_servers', base.ocspServers),
        // Revocation is for good: an update keeps it.
        ...(row.settings.revokedAt === undefined ? {} : { revokedAt: row.settings.revokedAt }),
      };
      this.record(
        streams.issuer(mount, row.issuer_id),
        issuerDecider,
        { type: 'PkiIssuerUpdated', data: { mount, issuerId: row.issuer_id, ...settings } },
        meta,
      );
      return authority.q.issuer(mount, row.issuer_id);
    });
  }

  /** Revokes an issuer (its certificate goes on its signer's CRL); answers the updated row. */
  revokeIssuer(mount: string, ref: string, meta: AuditMetadata): Promise<IssuerRow | undefined> {
    return this.authority.run(() => {
      const row = this.authority.resolveIssuer(mount, ref);
      revokeIssuer(this.authority, mount, meta, row);
      return this.authority.q.issuer(mount, row.issuer_id);
    });
  }

  /** Deletes an issuer (nothing when there is none); answers the reference's warnings. */
  deleteIssuer(mount: string, ref: string, meta: AuditMetadata): Promise<string[]> {
    return this.authority.run(() => {
      let row: IssuerRow;
      try {
        row = this.authority.resolveIssuer(mount, ref);
      } catch (err) {
        // No such issuer: deleting it is nothing, as the reference answers. Anything else is thrown.
        if (err instanceof ValidationError) return [];
        throw err;
      }
      const warnings: string[] = [];
      this.authority.atomically(() => {
        this.issuerDeleted(mount, row.issuer_id, meta);
        const defaults = this.authority.defaults(mount);
        if (defaults.defaultIssuer === row.issuer_id) {
          this.setIssuerDefaults(mount, '', defaults.defaultFollowsLatestIssuer, meta);
          warnings.push(
            'Deleted issuer was the default issuer; a new default issuer has not been set',
          );
        }
      });
      return warnings;
    });
  }

  /** `config/issuers` and `root/replace` (whose issuer defaults to the one named `next`). */
  setDefaultIssuer(
    mount: string,
    b: FieldData<typeof CONFIG_ISSUERS.fields>,
    fallback: string,
    meta: AuditMetadata,
  ): Promise<{ defaultIssuer: string; follows: boolean }> {
    return this.authority.run(() => {
      const current = this.authority.defaults(mount);
      const ref = b.get('default') || fallback;
      const issuerId = ref
        ? this.authority.resolveIssuer(mount, ref).issuer_id
        : current.defaultIssuer;
      const follows = b.get('default_follows_latest_issuer') ?? current.defaultFollowsLatestIssuer;
      this.setIssuerDefaults(mount, issuerId, follows, meta);
      return { defaultIssuer: issuerId, follows };
    });
  }

  private setIssuerDefaults(
    mount: string,
    defaultIssuer: string,
    defaultFollowsLatestIssuer: boolean,
    meta: AuditMetadata,
  ): void {
    this.record(
      streams.config(mount),
      configDecider,
      { type: 'PkiIssuersConfigured', data: { mount, defaultIssuer, defaultFollowsLatestIssuer } },
      meta,
    );
  }

  /** `DELETE root`: every issuer and key of the mount, and the defaults cleared. */
  deleteRoot(mount: string, meta: AuditMetadata): Promise<void> {
    return this.authority.run(() => {
      const { authority } = this;
      authority.atomically(() => {
        for (const row of authority.q.issuers(mount)) {
          this.issuerDeleted(mount, row.issuer_id, meta);
        }
        for (const key of authority.q.keys(mount)) {
          this.keyDeleted(mount, key.key_id, meta);
        }
        this.setIssuerDefaults(
          mount,
          '',
          authority.defaults(mount).defaultFollowsLatestIssuer,
          meta,
        );
        this.setDefaultKeyId(mount, '', meta);
      });
    });
  }

  /** Stores a new CA key under a checked name; answers its id. */
  createKey(mount: string, key: KeyObject, name: string, meta: AuditMetadata): Promise<string> {
    return this.authority.run(() => {
      checkKeyName(name);
      return this.authority.createKey(mount, meta, key, name);
    });
  }

  /** Renames a key; answers the key as renamed. */
  renameKey(mount: string, ref: string, name: string, meta: AuditMetadata): Promise<KeyRow> {
    return this.authority.run(() => {
      const row = this.authority.resolveKey(mount, ref);
      checkKeyName(name);
      if (name === 'default') throw new ValidationError('reserved key name: default');
      if (
        name &&
        this.authority.q.keys(mount).some((k) => k.name === name && k.key_id !== row.key_id)
      )
        throw new ValidationError(`key name (${name}) already in use`);
      this.record(
        streams.key(mount, row.key_id),
        keyDecider,
        { type: 'PkiKeyRenamed', data: { mount, keyId: row.key_id, name } },
        meta,
      );
      return { ...row, name };
    });
  }

  /** Deletes a key no issuer uses (and clears the default key when it was). */
  deleteKey(mount: string, ref: string, meta: AuditMetadata): Promise<void> {
    return this.authority.run(() => {
      const row = this.authority.resolveKey(mount, ref);
      const users = this.authority.q.issuers(mount).filter((i) => i.key_id === row.key_id);
      if (users.length)
        throw new ValidationError(
          `unable to delete key: key is in use by issuers: ${users.map((i) => i.issuer_id).join(', ')}`,
        );
      this.authority.atomically(() => {
        this.keyDeleted(mount, row.key_id, meta);
        if (this.authority.defaultKey(mount) === row.key_id) this.setDefaultKeyId(mount, '', meta);
      });
    });
  }

  /** `config/keys`: the default key by name or id; answers its id. */
  setDefaultKey(mount: string, ref: string, meta: AuditMetadata): Promise<string> {
    return this.authority.run(() => {
      const row = this.authority.resolveKey(mount, ref);
      this.setDefaultKeyId(mount, row.key_id, meta);
      return row.key_id;
    });
  }

  private issuerDeleted(mount: string, issuerId: string, meta: AuditMetadata): void {
    this.record(
      streams.issuer(mount, issuerId),
      issuerDecider,
      { type: 'PkiIssuerDeleted', data: { mount, issuerId } },
      meta,
    );
  }

  private keyDeleted(mount: string, keyId: string, meta: AuditMetadata): void {
    this.record(
      streams.key(mount, keyId),
      keyDecider,
      { type: 'PkiKeyDeleted', data: { mount, keyId } },
      meta,
    );
  }

  private setDefaultKeyId(mount: string, defaultKey: string, meta: AuditMetadata): void {
    this.record(
      streams.config(mount),
      configDecider,
      { type: 'PkiKeysConfigured', data: { mount, defaultKey } },
      meta,
    );
  }
}

/** A key name: empty, or the reference's name pattern. */
export function checkKeyName(name: string): string {
  if (name && !NAME_PATTERN.test(name))
    throw new ValidationError(`invalid key name ${JSON.stringify(name)}`);
  return name;
}
