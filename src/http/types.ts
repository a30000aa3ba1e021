/** Who is calling the runs API (resolved from the bearer token). */
export interface RunsPrincipal {
  kind: 'user' | 'team' | 'organization';
  /** User id, team id or organization name. */
  id: string;
  /** The token's id (`at-…`); the audit accessor. */
  tokenId: string;
  /** Display name: the username, team name or organization name. */
  name: string;
  /** For team and organization tokens: the organization they belong to. */
  organization: string | null;
  /** Site administrators see every organization. */
  admin: boolean;
}

/** A secrets-API token as the ACL sees it. */
export interface SecretsToken {
  accessor: string;
  displayName: string;
  policies: readonly string[];
  /** ISO time it stops working, or null for no expiry. */
  expiresAt: string | null;
  /** Whether it was made with a number of uses (fixed at creation), each request spending one. */
  usesLimited: boolean;
}

/** A secrets engine mounted at a path. */
export interface Mount {
  /** With the trailing slash, e.g. `pki/`. */
  path: string;
  type: string;
  accessor: string;
  description: string;
}

declare module 'koa' {
  interface DefaultState {
    requestId: string;
    /** The client's own `X-Request-Id`, when well formed (see http/request-id.ts). */
    clientRequestId?: string;
    /** Set on `/v1` for `LIST` requests and for `GET ?list=true`. */
    list?: boolean;
    token?: SecretsToken;
    /** On `/v1`: the token holds sudo on the routed path (root always does). */
    sudo?: boolean;
    /** On `/v1`'s open system paths: this process stands by (another leads; ADR 0080). */
    standby?: boolean;
    mount?: Mount;
    principal?: RunsPrincipal;
  }
  interface Request {
    /** The parsed body (JSON, JSON:API, or a form on `/v1`); validate before use. */
    body?: unknown;
    rawBody?: Buffer;
  }
}
