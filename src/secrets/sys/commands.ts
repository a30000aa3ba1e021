import type { Decider } from '../../core/command-handler.js';
import { ForbiddenError, ValidationError } from '../../core/errors.js';
import type { AuditMetadata, StoredEvent } from '../../core/events.js';
import type { Core } from '../../context.js';
import { checkMountPath, checkPolicyName } from '../names.js';
import type { PathRule } from './acl.js';
import type {
  MountConfig,
  MountEnabled,
  SecretsTokenCreated,
  SysEvent,
  TokenRevocationReason,
  TokenRoleSettings,
} from './events.js';
import { mountStream, policyStream, tokenRoleStream, tokenStream } from './events.js';

/** Each sys stream only needs to know whether its subject currently exists. */
interface Exists {
  exists: boolean;
}

/** A decider that knows only whether its stream's subject exists now. */
export const existence = (
  created: SysEvent['type'][],
  removed: SysEvent['type'][],
): Decider<Exists, SysEvent> => ({
  initialState: () => ({ exists: false }),
  evolve: (s, e: StoredEvent<SysEvent>) =>
    created.includes(e.type) ? { exists: true } : removed.includes(e.type) ? { exists: false } : s,
});

export const tokenDecider = existence(['SecretsTokenCreated'], ['SecretsTokenRevoked']);
export const policyDecider = existence(['AclPolicyWritten'], ['AclPolicyDeleted']);
export const mountDecider = existence(['MountEnabled', 'MountMoved'], ['MountDisabled']);
export const tokenRoleDecider = existence(['TokenRoleWritten'], ['TokenRoleDeleted']);
export const authMountDecider = existence(['AuthMethodEnabled'], ['AuthMethodDisabled']);
export const appRoleDecider = existence(['AppRoleWritten'], ['AppRoleDeleted']);
export const jwtRoleDecider = existence(['JwtRoleWritten'], ['JwtRoleDeleted']);
export const jwtConfigDecider = existence(['JwtConfigWritten'], []);

/** A token's stream as its uses see it: whether it lives, and the uses left (0: unlimited). */
interface TokenUses {
  exists: boolean;
  usesLeft: number;
}
export const tokenUsesDecider: Decider<TokenUses, SysEvent> = {
  initialState: () => ({ exists: false, usesLeft: 0 }),
  evolve: (s, e: StoredEvent<SysEvent>) => {
    if (e.type === 'SecretsTokenCreated') return { exists: true, usesLeft: e.data.numUses ?? 0 };
    if (e.type === 'SecretsTokenUsed') return { ...s, usesLeft: e.data.usesLeft };
    if (e.type === 'SecretsTokenRevoked') return { ...s, exists: false };
    return s;
  },
};

export const RESERVED_MOUNT_PREFIXES = ['sys/', 'auth/', 'cubbyhole/', 'identity/'];

export interface CreatedToken {
  token: string;
  data: SecretsTokenCreated['data'];
}

/**
 * What a new token is made of: its event's data but for what is made here (the secret, kept
 * only as an HMAC, its accessor, and its expiry, from `ttlSeconds`).
 */
export type NewToken = Omit<SecretsTokenCreated['data'], 'accessor' | 'tokenHmac' | 'expiresAt'>;

/** The sys commands. Those named `…Sync` run only inside `core.handler.atomically`, or at bootstrap. */
export function createSysCommands(core: Core) {
  const { handler, ids, sealer, clock } = core;

  const newToken = (input: NewToken): CreatedToken => {
    const token = `hvs.${ids.secret(24)}`;
    const accessor = ids.secret(24);
    const data: SecretsTokenCreated['data'] = {
      accessor,
      tokenHmac: sealer.hmac(token),
      policies: [...new Set(input.policies)].sort(),
      displayName: input.displayName,
      expiresAt:
        input.ttlSeconds > 0
          ? new Date(clock.now().getTime() + input.ttlSeconds * 1000).toISOString()
          : null,
      ttlSeconds: input.ttlSeconds,
      parentAccessor: input.parentAccessor,
      meta: input.meta,
      renewable: (input.renewable ?? true) && input.ttlSeconds > 0,
      ...(input.explicitMaxTtl ? { explicitMaxTtl: input.explicitMaxTtl } : {}),
      ...(input.period ? { period: input.period } : {}),
      ...(input.role === undefined ? {} : { role: input.role }),
      ...(input.path === undefined ? {} : { path: input.path }),
      ...(input.authMount === undefined ? {} : { authMount: input.authMount }),
      ...(input.numUses ? { numUses: input.numUses } : {}),
      ...(input.boundCidrs?.length ? { boundCidrs: input.boundCidrs } : {}),
    };
    return { token, data };
  };
  const created = (data: SecretsTokenCreated['data']) => () => [
    { type: 'SecretsTokenCreated' as const, data },
  ];

  /** A mount path is free when nothing mounted is a prefix of it, or under it. */
  const checkFree = (
    path: string,
    existing: readonly string[],
    what: (clash: string) => string,
  ) => {
    const clash = existing.find((m) => path.startsWith(m) || m.startsWith(path));
    if (clash !== undefined) throw new ValidationError(what(clash));
  };
  const checkMountable = (path: string) => {
    checkMountPath(path);
    if (RESERVED_MOUNT_PREFIXES.some((p) => path.startsWith(p))) {
      throw new ValidationError(`cannot mount under reserved path "${path}"`);
    }
  };
  const mountEnabled =
    (
      input: {
        path: string;
        type: string;
        description: string;
        config: MountEnabled['data']['config'];
      },
      existing: () => readonly string[],
    ) =>
    () => {
      // Checked where it is decided: a mount enabled by a command earlier in the batch counts.
      checkFree(input.path, existing(), (clash) => `path is already in use at ${clash}`);
      return [
        {
          type: 'MountEnabled' as const,
          data: { ...input, accessor: `${input.type}_${ids.secret(8).toLowerCase()}` },
        },
      ];
    };

  return {
    /** A new token, appended now: inside `atomically` (with the command it belongs to), or at bootstrap. */
    createTokenSync(input: NewToken, metadata: AuditMetadata): CreatedToken {
      const t = newToken(input);
      handler.handleSync(tokenStream(t.data.accessor), tokenDecider, created(t.data), metadata);
      return t;
    },

    async createToken(input: NewToken, metadata: AuditMetadata): Promise<CreatedToken> {
      const t = newToken(input);
      await handler.handle(tokenStream(t.data.accessor), tokenDecider, created(t.data), metadata);
      return t;
    },

    /**
     * One use of a token with limited uses, decided against the uses left: answers those left
     * after it (-1: this was the last, and the caller revokes the token once it has answered).
     * A token used up, or revoked meanwhile, is refused as the reference refuses it.
     */
    async useToken(accessor: string, metadata: AuditMetadata): Promise<number> {
      const { state } = await handler.handle(
        tokenStream(accessor),
        tokenUsesDecider,
        (s) => {
          if (!s.exists || s.usesLeft < 0) throw new ForbiddenError('permission denied');
          if (s.usesLeft === 0) return [];
          const usesLeft = s.usesLeft === 1 ? -1 : s.usesLeft - 1;
          return [{ type: 'SecretsTokenUsed' as const, data: { accessor, usesLeft } }];
        },
        metadata,
      );
      return state.usesLeft;
    },

    /** Extends a live token's TTL; the caller (`tokens.ts`) has applied the caps. */
    async renewToken(
      accessor: string,
      ttlSeconds: number,
      metadata: AuditMetadata,
    ): Promise<string> {
      const now = clock.now();
      const expiresAt = new Date(now.getTime() + ttlSeconds * 1000).toISOString();
      await handler.handle(
        tokenStream(accessor),
        tokenDecider,
        (s) => {
          if (!s.exists) throw new ValidationError('invalid token');
          const data = { accessor, renewedAt: now.toISOString(), expiresAt, ttlSeconds };
          return [{ type: 'SecretsTokenRenewed' as const, data }];
        },
        metadata,
      );
      return expiresAt;
    },

    async writeTokenRole(
      name: string,
      settings: TokenRoleSettings,
      metadata: AuditMetadata,
    ): Promise<void> {
      await handler.handle(
        tokenRoleStream(name),
        tokenRoleDecider,
        () => [{ type: 'TokenRoleWritten' as const, data: { name, settings } }],
        metadata,
      );
    },

    async deleteTokenRole(name: string, metadata: AuditMetadata): Promise<void> {
      await handler.handle(
        tokenRoleStream(name),
        tokenRoleDecider,
        (s) => (s.exists ? [{ type: 'TokenRoleDeleted' as const, data: { name } }] : []),
        metadata,
      );
    },

    /**
     * Revokes one token, inside `atomically`; its descendants are the caller's (`tokens.ts`) to
     * revoke first, in the same function.
     */
    revokeTokenSync(
      accessor: string,
      metadata: AuditMetadata,
      reason: TokenRevocationReason = 'revoked',
      orphanChildren = false,
    ): void {
      handler.handleSync(
        tokenStream(accessor),
        tokenDecider,
        (s) =>
          s.exists
            ? [
                {
                  type: 'SecretsTokenRevoked' as const,
                  data: { accessor, reason, ...(orphanChildren ? { orphanChildren } : {}) },
                },
              ]
            : [],
        metadata,
      );
    },

    async writePolicy(
      name: string,
      policy: string,
      rules: PathRule[],
      metadata: AuditMetadata,
    ): Promise<void> {
      checkPolicyName(name);
      if (name === 'root') throw new ValidationError('cannot update "root" policy');
      await handler.handle(
        policyStream(name),
        policyDecider,
        () => [{ type: 'AclPolicyWritten' as const, data: { name, policy, rules } }],
        metadata,
      );
    },

    async deletePolicy(name: string, metadata: AuditMetadata): Promise<void> {
      if (name === 'root' || name === 'default')
        throw new ValidationError(`cannot delete "${name}" policy`);
      await handler.handle(
        policyStream(name),
        policyDecider,
        (s) => (s.exists ? [{ type: 'AclPolicyDeleted' as const, data: { name } }] : []),
        metadata,
      );
    },

    /** `existing` lists the mounted paths; it is read where the command is decided. */
    async enableMount(
      input: Parameters<typeof mountEnabled>[0],
      existing: () => readonly string[],
      metadata: AuditMetadata,
    ): Promise<void> {
      checkMountable(input.path);
      await handler.handle(
        mountStream(input.path),
        mountDecider,
        mountEnabled(input, existing),
        metadata,
      );
    },

    /** The same, appended now: at bootstrap, before anything is served. */
    enableMountSync(
      input: Parameters<typeof mountEnabled>[0],
      existing: () => readonly string[],
      metadata: AuditMetadata,
    ): void {
      checkMountable(input.path);
      handler.handleSync(
        mountStream(input.path),
        mountDecider,
        mountEnabled(input, existing),
        metadata,
      );
    },

    async tuneMount(
      path: string,
      settings: { description: string; config: MountConfig },
      metadata: AuditMetadata,
    ): Promise<void> {
      const { default_lease_ttl: def, max_lease_ttl: max } = settings.config;
      if (def > 0 && max > 0 && max < def)
        throw new ValidationError(
          `backend max lease TTL of ${max} would be less than backend default lease TTL of ${def}`,
        );
      await handler.handle(
        mountStream(path),
        mountDecider,
        (s) => {
          if (!s.exists) throw new ValidationError(`cannot fetch sysview for path "${path}"`);
          return [{ type: 'MountTuned' as const, data: { path, ...settings } }];
        },
        metadata,
      );
    },

    /**
     * `sys/remount`: the mount at `from` (its leases already revoked by the caller) moves to
     * `to`, checked as a new mount path would be.
     */
    async moveMount(
      from: MountEnabled['data'],
      to: string,
      existing: () => readonly string[],
      metadata: AuditMetadata,
    ): Promise<void> {
      checkMountPath(to);
      if (RESERVED_MOUNT_PREFIXES.some((p) => to.startsWith(p)))
        throw new ValidationError(`cannot remount to destination "${to}"`);
      if (to === from.path) throw new ValidationError(`path already in use at "${to}"`);
      await handler.handle(
        mountStream(to),
        mountDecider,
        () => {
          checkFree(
            to,
            existing().filter((m) => m !== from.path),
            (clash) => `path already in use at "${clash}"`,
          );
          return [{ type: 'MountMoved' as const, data: { ...from, path: to, from: from.path } }];
        },
        metadata,
      );
    },

    async disableMount(path: string, metadata: AuditMetadata): Promise<void> {
      await handler.handle(
        mountStream(path),
        mountDecider,
        (s) => (s.exists ? [{ type: 'MountDisabled' as const, data: { path } }] : []),
        metadata,
      );
    },
  };
}

export type SysCommands = ReturnType<typeof createSysCommands>;
