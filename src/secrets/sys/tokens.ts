import type Router from '@koa/router';
import { multierror } from '../../http/errors.js';
import type { Context } from 'koa';
import { KeelError, ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import { systemMetadata } from '../../core/events.js';
import type { Timer } from '../../core/schedule.js';
import type { SecretsToken } from '../../http/types.js';
import { requestData, sendVault } from '../../http/vault.js';
import { formatGoDuration } from '../duration.js';
import { CONTROL_CHARACTER, checkPolicyName } from '../names.js';
import type { SysCommands } from './commands.js';
import type { TokenRevocationReason } from './events.js';
import { TIMER_TOKEN_EXPIRY } from './events.js';
import type { SysQueries, TokenRow } from './projection.js';
import type { SysRouteDeps } from './routes.js';
import { parseFields } from '../fields.js';
import {
  TOKEN_CREATE,
  TOKEN_LOOKUP,
  TOKEN_LOOKUP_ACCESSOR,
  TOKEN_REVOKE,
  TOKEN_REVOKE_ACCESSOR,
  TOKEN_REVOKE_ORPHAN,
} from './paths.js';

/**
 * Token hierarchy, as the reference keeps it (docs/security.md, "Token hierarchy"): a child
 * never outlives its parent (its TTL is capped by the parent's remaining TTL, and revoking or
 * expiring a token revokes its descendants first, deepest first); orphans need root or sudo.
 * The leases a token obtained are revoked by the engines' reactors on `SecretsTokenRevoked`.
 */
export function tokenHierarchy(commands: SysCommands, queries: SysQueries) {
  return {
    /** Revoke a token and every descendant (each before its parent), or make its children orphans. */
    revoke(
      accessor: string,
      metadata: AuditMetadata,
      reason: TokenRevocationReason,
      orphanChildren = false,
    ): void {
      if (!orphanChildren)
        for (const child of queries.descendants(accessor))
          commands.revokeToken(child, metadata, 'parent revoked');
      commands.revokeToken(accessor, metadata, reason, orphanChildren);
    },
  };
}

export type TokenHierarchy = ReturnType<typeof tokenHierarchy>;

/** The expiry timer: a token whose TTL ran out is revoked with its descendants. */
export const tokenExpiryTimer = (hierarchy: TokenHierarchy): Timer => ({
  kind: TIMER_TOKEN_EXPIRY,
  fire: (entry) => {
    const { accessor } = entry.data as { accessor: string };
    hierarchy.revoke(accessor, systemMetadata('token expiry'), 'expired');
    return Promise.resolve();
  },
});

/** The reference's limits on custom metadata (sdk/helper/custommetadata). */
export const META_LIMITS = { keys: 64, keyBytes: 128, valueBytes: 512 } as const;

/** `meta`: a map of printable strings within the reference's limits. */
export function parseMeta(v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (
    typeof v !== 'object' ||
    Array.isArray(v) ||
    !Object.values(v).every((x) => typeof x === 'string')
  )
    throw new ValidationError(
      'Field validation failed: error converting input for field "meta": expected a map of strings',
    );
  const meta = v as Record<string, string>;
  const problems: string[] = [];
  const keys = Object.keys(meta);
  if (keys.length > META_LIMITS.keys)
    problems.push(`meta has ${keys.length} keys; at most ${META_LIMITS.keys} are allowed`);
  for (const [k, value] of Object.entries(meta)) {
    const shown = JSON.stringify(k.length > 32 ? `${k.slice(0, 32)}…` : k);
    if (k === '') problems.push('meta keys must not be empty');
    if (Buffer.byteLength(k) > META_LIMITS.keyBytes)
      problems.push(`meta key ${shown} is longer than ${META_LIMITS.keyBytes} bytes`);
    if (Buffer.byteLength(value) > META_LIMITS.valueBytes)
      problems.push(`meta value of ${shown} is longer than ${META_LIMITS.valueBytes} bytes`);
    if (CONTROL_CHARACTER.test(k) || CONTROL_CHARACTER.test(value))
      problems.push(`meta key ${shown} or its value holds a control character`);
  }
  if (problems.length > 0) throw new ValidationError(problems.slice(0, 5).join('; '));
  return meta;
}

/** `auth/token/*`: create (child or orphan), look up and revoke. */
export function tokenRoutes(r: Router, deps: SysRouteDeps): void {
  const { core, commands, queries, hierarchy } = deps;

  const tokenView = (t: TokenRow, id?: string) => {
    const ttl =
      t.expiresAt === null
        ? 0
        : Math.max(0, Math.floor((Date.parse(t.expiresAt) - core.clock.now().getTime()) / 1000));
    return {
      accessor: t.accessor,
      creation_time: Math.floor(Date.parse(t.createdAt) / 1000),
      creation_ttl: t.ttlSeconds,
      display_name: t.displayName,
      entity_id: '',
      expire_time: t.expiresAt,
      explicit_max_ttl: 0,
      ...(id === undefined ? {} : { id }),
      issue_time: t.createdAt,
      meta: Object.keys(t.meta).length === 0 ? null : t.meta,
      num_uses: 0,
      orphan: t.parentAccessor === null,
      path: 'auth/token/create',
      policies: t.policies,
      renewable: false,
      ttl,
      type: 'service',
    };
  };

  /** The TTL a child gets: what it asked for, never past its parent's expiry. */
  const childTtl = (parent: SecretsToken, requested: number, warnings: string[]): number => {
    if (parent.expiresAt === null) return requested;
    const left = Math.floor((Date.parse(parent.expiresAt) - core.clock.now().getTime()) / 1000);
    if (left < 1) throw new ValidationError('the parent token expires in less than a second');
    if (requested > 0 && requested <= left) return requested;
    if (requested > 0)
      warnings.push(
        `TTL of "${formatGoDuration(requested)}" exceeded the parent token's remaining TTL; capped to "${formatGoDuration(left)}"`,
      );
    return left;
  };

  const create = (orphanPath: boolean) => (ctx: Context) => {
    const parent = ctx.state.token!;
    const fields = parseFields(TOKEN_CREATE, requestData(ctx));
    const requested = fields.get('policies') ?? [...parent.policies];
    requested.forEach(checkPolicyName);
    const parentIsRoot = parent.policies.includes('root');
    if (!parentIsRoot) {
      const extra = requested.filter((p) => p !== 'default' && !parent.policies.includes(p));
      if (extra.length > 0) throw new ValidationError('child policies must be subset of parent');
    }
    // create-orphan needs sudo on its own path (checked with the ACL); no_parent needs it here.
    const orphan = orphanPath || fields.get('no_parent');
    if (orphan && !orphanPath && !parentIsRoot && ctx.state.sudo !== true)
      throw new ValidationError('root or sudo privileges required to create orphan token');
    const policies =
      requested.includes('root') || fields.get('no_default_policy')
        ? requested
        : ['default', ...requested];
    const warnings: string[] = [];
    const asked = fields.get('ttl') ?? 0;
    const ttlSeconds = orphan ? asked : childTtl(parent, asked, warnings);
    const displayName = fields.get('display_name');
    const meta = parseMeta(fields.get('meta'));
    const created = commands.createToken(
      {
        policies,
        displayName:
          displayName === undefined || displayName === '' ? 'token' : `token-${displayName}`,
        ttlSeconds,
        parentAccessor: orphan ? null : parent.accessor,
        meta,
      },
      deps.metadata(ctx),
    );
    sendVault(ctx, null, {
      warnings: [...warnings, ...fields.warnings],
      auth: {
        client_token: created.token,
        accessor: created.data.accessor,
        policies: created.data.policies,
        token_policies: created.data.policies,
        metadata: Object.keys(meta).length === 0 ? null : meta,
        lease_duration: ttlSeconds,
        renewable: ttlSeconds > 0,
        entity_id: '',
        token_type: 'service',
        orphan: created.data.parentAccessor === null,
        mfa_requirement: null,
        num_uses: 0,
      },
    });
  };
  // LIST auth/token/accessors (sudo): every live token's accessor, never the tokens themselves.
  r.get('/auth/token/accessors', (ctx) => {
    if (ctx.state.list !== true)
      throw new KeelError('unsupported', multierror('unsupported operation'));
    sendVault(ctx, { keys: queries.accessors() });
  });
  r.post('/auth/token/create', create(false));
  r.post('/auth/token/create-orphan', create(true));

  const self = (ctx: Context): TokenRow => {
    const row = queries.tokenByAccessor(ctx.state.token!.accessor);
    if (row === undefined) throw new ValidationError('bad token');
    return row;
  };
  const lookupSelf = (ctx: Context) => sendVault(ctx, tokenView(self(ctx), presentedToken(ctx)));
  r.get('/auth/token/lookup-self', lookupSelf);
  r.post('/auth/token/lookup-self', lookupSelf);
  const tokenOf = (ctx: Context, path: typeof TOKEN_LOOKUP, missing: string): string => {
    const token = parseFields(path, requestData(ctx)).get('token');
    if (token === undefined || token === '') throw new ValidationError(missing);
    return token;
  };
  const byToken = (token: string): TokenRow | undefined =>
    queries.tokenByHmac(core.sealer.hmac(token));
  r.post('/auth/token/lookup', (ctx) => {
    const token = tokenOf(ctx, TOKEN_LOOKUP, 'missing token to look up');
    const row = byToken(token);
    if (row === undefined) throw new ValidationError('bad token');
    sendVault(ctx, tokenView(row, token));
  });
  const byAccessor = (ctx: Context, path: typeof TOKEN_LOOKUP_ACCESSOR): TokenRow => {
    const accessor = parseFields(path, requestData(ctx)).get('accessor');
    const row = accessor === undefined ? undefined : queries.tokenByAccessor(accessor);
    if (row === undefined) throw new ValidationError('invalid accessor');
    return row;
  };
  r.post('/auth/token/lookup-accessor', (ctx) =>
    sendVault(ctx, tokenView(byAccessor(ctx, TOKEN_LOOKUP_ACCESSOR))),
  );
  r.post('/auth/token/revoke-self', (ctx) => {
    hierarchy.revoke(ctx.state.token!.accessor, deps.metadata(ctx), 'revoked');
    sendVault(ctx, undefined);
  });
  r.post('/auth/token/revoke', (ctx) => {
    const row = byToken(tokenOf(ctx, TOKEN_REVOKE, 'missing token'));
    if (row !== undefined) hierarchy.revoke(row.accessor, deps.metadata(ctx), 'revoked');
    sendVault(ctx, undefined);
  });
  r.post('/auth/token/revoke-accessor', (ctx) => {
    hierarchy.revoke(
      byAccessor(ctx, TOKEN_REVOKE_ACCESSOR).accessor,
      deps.metadata(ctx),
      'revoked',
    );
    sendVault(ctx, undefined);
  });
  // Needs sudo (surface.ts): the children live on as orphans.
  r.post('/auth/token/revoke-orphan', (ctx) => {
    const row = byToken(tokenOf(ctx, TOKEN_REVOKE_ORPHAN, 'missing token'));
    if (row !== undefined) hierarchy.revoke(row.accessor, deps.metadata(ctx), 'revoked', true);
    sendVault(ctx, undefined);
  });
}

/** The token as the caller sent it (lookup-self shows it back as `id`). */
export function presentedToken(ctx: Context): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'))?.[1];
  return ctx.get('x-secrets-token') || ctx.get('x-vault-token') || bearer || undefined;
}
