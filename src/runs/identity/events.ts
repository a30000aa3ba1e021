import { streamName } from '../../core/streams.js';
export interface UserCreated {
  type: 'UserCreated';
  data: { id: string; username: string; email: string; admin: boolean };
}

/** An API token for the runs API; only an HMAC of the token is kept. */
export interface AuthTokenCreated {
  type: 'AuthTokenCreated';
  data: {
    id: string;
    tokenHmac: string;
    kind: 'user' | 'team' | 'organization';
    /** User id, team id or organization name. */
    ownerId: string;
    ownerName: string;
    /** For team and organization tokens. */
    organization: string | null;
    description: string | null;
    /** ISO time the token stops working, or null. */
    expiredAt: string | null;
    createdBy: string | null;
  };
}

export interface AuthTokenDeleted {
  type: 'AuthTokenDeleted';
  data: { id: string };
}

export type IdentityEvent = UserCreated | AuthTokenCreated | AuthTokenDeleted;

export const userStream = streamName`user-${'userId'}`;
export const authTokenStream = streamName`auth-token-${'tokenId'}`;
