import type { Decider } from '../../core/command-handler.js';
import { ConflictError } from '../../core/errors.js';
import type { AuditMetadata, StoredEvent } from '../../core/events.js';
import type { Core } from '../../context.js';
import type { AuthTokenCreated, IdentityEvent, UserCreated } from './events.js';
import { authTokenStream, userStream } from './events.js';
import type { IdentityQueries } from './projection.js';

const existence: Decider<{ exists: boolean }, IdentityEvent> = {
  initialState: () => ({ exists: false }),
  evolve: (s, e: StoredEvent<IdentityEvent>) => {
    switch (e.type) {
      case 'UserCreated':
      case 'AuthTokenCreated':
        return { exists: true };
      case 'AuthTokenDeleted':
        return { exists: false };
      default:
        return s;
    }
  },
};

/** Tokens look like the reference's: `<14>.atlasv1.<67>` base62. */
export const newRunsToken = (core: Core): string =>
  `${core.ids.secret(14)}.atlasv1.${core.ids.secret(67)}`;

export function createIdentityCommands(core: Core, queries: IdentityQueries) {
  const commands = {
    /**
     * The synchronous forms, for use inside `core.handler.atomically` (where several streams must
     * change together) or before the daemon serves anything (bootstrap, offline preparation).
     */
    createUserSync(
      input: Omit<UserCreated['data'], 'id'>,
      metadata: AuditMetadata,
    ): UserCreated['data'] {
      if (queries.userByName(input.username) !== undefined) {
        throw new ConflictError(`username ${input.username} is already taken`);
      }
      const data = { id: core.ids.id('user'), ...input };
      core.handler.handleSync(
        userStream(data.id),
        existence,
        () => [{ type: 'UserCreated' as const, data }],
        metadata,
      );
      return data;
    },

    createTokenSync(
      input: Omit<AuthTokenCreated['data'], 'id' | 'tokenHmac'>,
      metadata: AuditMetadata,
    ): { token: string; data: AuthTokenCreated['data'] } {
      const token = newRunsToken(core);
      const data = { id: core.ids.id('at'), tokenHmac: core.sealer.hmac(token), ...input };
      core.handler.handleSync(
        authTokenStream(data.id),
        existence,
        () => [{ type: 'AuthTokenCreated' as const, data }],
        metadata,
      );
      return { token, data };
    },

    deleteTokenSync(id: string, metadata: AuditMetadata): boolean {
      const { events } = core.handler.handleSync(
        authTokenStream(id),
        existence,
        (s) => (s.exists ? [{ type: 'AuthTokenDeleted' as const, data: { id } }] : []),
        metadata,
      );
      return events.length > 0;
    },

    /** The username is checked again inside the batch, so two concurrent requests cannot both win. */
    createUser(
      input: Omit<UserCreated['data'], 'id'>,
      metadata: AuditMetadata,
    ): Promise<UserCreated['data']> {
      return core.handler.atomically(() => commands.createUserSync(input, metadata));
    },

    async createToken(
      input: Omit<AuthTokenCreated['data'], 'id' | 'tokenHmac'>,
      metadata: AuditMetadata,
    ): Promise<{ token: string; data: AuthTokenCreated['data'] }> {
      const token = newRunsToken(core);
      const data = { id: core.ids.id('at'), tokenHmac: core.sealer.hmac(token), ...input };
      await core.handler.handle(
        authTokenStream(data.id),
        existence,
        () => [{ type: 'AuthTokenCreated' as const, data }],
        metadata,
      );
      return { token, data };
    },

    /**
     * A new token for a team or organization that replaces any it had (the reference: "generates
     * a new token, replacing any existing token"). The old ones are deleted in the same
     * command, so no moment has both or neither.
     */
    replaceToken(
      input: Omit<AuthTokenCreated['data'], 'id' | 'tokenHmac'> & { kind: 'team' | 'organization' },
      metadata: AuditMetadata,
    ): Promise<{ token: string; data: AuthTokenCreated['data'] }> {
      return core.handler.atomically(() => {
        for (const old of queries.tokensOf(input.kind, input.ownerId))
          commands.deleteTokenSync(old.id, metadata);
        return commands.createTokenSync(input, metadata);
      });
    },

    async deleteToken(id: string, metadata: AuditMetadata): Promise<boolean> {
      const { events } = await core.handler.handle(
        authTokenStream(id),
        existence,
        (s) => (s.exists ? [{ type: 'AuthTokenDeleted' as const, data: { id } }] : []),
        metadata,
      );
      return events.length > 0;
    },
  };
  return commands;
}

export type IdentityCommands = ReturnType<typeof createIdentityCommands>;
