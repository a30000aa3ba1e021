import { streamName } from '../../core/streams.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Decider } from '../../core/command-handler.js';
import type { AuditMetadata, StoredEvent } from '../../core/events.js';
import type { Core } from '../../context.js';
import type { IdentityCommands } from '../identity/index.js';

/**
 * `terraform login`'s authorization codes (OAuth 2 authorization code grant with PKCE, RFC 6749 and
 * RFC 7636). A code is issued when a signed-in user approves the request on the authorize page,
 * and redeemed once, with the verifier and the same redirect_uri, for a new user token. Only an
 * HMAC of the code's secret part is kept.
 */
export interface LoginCodeIssued {
  type: 'LoginCodeIssued';
  data: {
    id: string;
    codeHmac: string;
    userId: string;
    username: string;
    clientId: string;
    redirectUri: string;
    /** The S256 code_challenge: base64url(sha256(verifier)). */
    challenge: string;
    /** ISO time after which the code is refused. */
    expiresAt: string;
  };
}

export interface LoginCodeRedeemed {
  type: 'LoginCodeRedeemed';
  data: { id: string; userId: string };
}

export type LoginCodeEvent = LoginCodeIssued | LoginCodeRedeemed;

export const loginCodeStream = streamName`login-code-${'codeId'}`;

/** How long an approved request may wait for the CLI to exchange its code. */
export const LOGIN_CODE_TTL_MS = 5 * 60 * 1000;

type CodeState =
  | { status: 'none' }
  | { status: 'issued'; issued: LoginCodeIssued['data'] }
  | { status: 'redeemed'; userId: string; username: string };

const codeDecider: Decider<CodeState, LoginCodeEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (s, e: StoredEvent<LoginCodeEvent>) => {
    switch (e.type) {
      case 'LoginCodeIssued':
        return { status: 'issued', issued: e.data };
      case 'LoginCodeRedeemed':
        return {
          status: 'redeemed',
          userId: e.data.userId,
          username: s.status === 'issued' ? s.issued.username : '',
        };
      default: {
        const _never: never = e;
        throw new Error(`unknown event ${JSON.stringify(_never)}`);
      }
    }
  },
  accepts: (s, e) => (e.type === 'LoginCodeIssued' ? s.status === 'none' : s.status === 'issued'),
  describe: (s) => s.status,
};

/** An OAuth error answer: `error` is one of RFC 6749 §5.2's codes. */
export class OAuthError extends Error {
  constructor(
    readonly error:
      'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unsupported_grant_type',
    message: string,
  ) {
    super(message);
    this.name = 'OAuthError';
  }
}

export const s256 = (verifier: string): string =>
  createHash('sha256').update(verifier).digest('base64url');

const sameText = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

export function createLoginCodes(core: Core, identity: IdentityCommands) {
  return {
    /** Issue a code for an approved request; returns the code to hand to the redirect. */
    async issue(
      input: Omit<LoginCodeIssued['data'], 'id' | 'codeHmac' | 'expiresAt'>,
      metadata: AuditMetadata,
    ): Promise<string> {
      const id = core.ids.id('lc');
      const secret = core.ids.secret(43);
      const data: LoginCodeIssued['data'] = {
        id,
        codeHmac: core.sealer.hmac(secret),
        ...input,
        expiresAt: new Date(core.clock.now().getTime() + LOGIN_CODE_TTL_MS).toISOString(),
      };
      await core.handler.handle(
        loginCodeStream(id),
        codeDecider,
        () => [{ type: 'LoginCodeIssued' as const, data }],
        metadata,
      );
      return `${id}.${secret}`;
    },

    /**
     * Exchange a code, its verifier and the redirect_uri it was issued for, for a new user token.
     * Any mismatch refuses with `invalid_grant` and changes nothing; a code works once.
     */
    redeem(
      input: { code: string; verifier: string; redirectUri: string; clientId: string },
      metadata: AuditMetadata,
    ): Promise<{ token: string; username: string }> {
      const dot = input.code.indexOf('.');
      const id = dot < 0 ? '' : input.code.slice(0, dot);
      const secret = input.code.slice(dot + 1);
      if (!/^lc-[A-Za-z0-9]+$/.test(id))
        return Promise.reject(
          new OAuthError('invalid_grant', 'the authorization code is not valid'),
        );
      // The code is spent and the token made in one command: both, or neither.
      return core.handler.atomically(() => {
        const { state } = core.handler.handleSync(
          loginCodeStream(id),
          codeDecider,
          (s) => {
            if (s.status !== 'issued' || !sameText(s.issued.codeHmac, core.sealer.hmac(secret)))
              throw new OAuthError('invalid_grant', 'the authorization code is not valid');
            const c = s.issued;
            if (Date.parse(c.expiresAt) <= core.clock.now().getTime())
              throw new OAuthError('invalid_grant', 'the authorization code has expired');
            if (c.redirectUri !== input.redirectUri)
              throw new OAuthError(
                'invalid_grant',
                'redirect_uri is not the one the code was issued for',
              );
            if (c.clientId !== input.clientId)
              throw new OAuthError('invalid_grant', 'the code was issued to another client');
            if (!sameText(c.challenge, s256(input.verifier)))
              throw new OAuthError('invalid_grant', 'code_verifier does not match code_challenge');
            return [{ type: 'LoginCodeRedeemed' as const, data: { id, userId: c.userId } }];
          },
          metadata,
        );
        const spent = state as Extract<CodeState, { status: 'redeemed' }>;
        const created = identity.createTokenSync(
          {
            kind: 'user',
            ownerId: spent.userId,
            ownerName: spent.username,
            organization: null,
            description: 'terraform login',
            expiredAt: null,
            createdBy: spent.userId,
          },
          metadata,
        );
        return { token: created.token, username: spent.username };
      });
    },
  };
}

export type LoginCodes = ReturnType<typeof createLoginCodes>;
