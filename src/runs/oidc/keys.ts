import { createHash, createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import type { Core } from '../../context.js';
import { canonicalJson } from '../../core/canonical.js';
import type { Decider } from '../../core/command-handler.js';
import { ConcurrencyError } from '../../core/errors.js';
import { systemMetadata, type StoredEvent } from '../../core/events.js';
import type { Projection } from '../../core/projections.js';
import type { Sealed } from '../../core/seal.js';
import { statements } from '../../core/sql.js';

/**
 * Keel as an OpenID Connect issuer of workload identity tokens: its signing keys (RSA 2048,
 * RS256), each made once and kept in the log with the private half sealed, the discovery document
 * and the JWKS that publish them, and the signature of a token.
 */

export const OIDC_KEYS_STREAM = 'oidc-signing-keys';
const TABLE = 'runs_oidc_keys';

export type OidcSigningKeyCreated = {
  type: 'OidcSigningKeyCreated';
  data: { kid: string; publicJwk: Record<string, string>; privateKey: Sealed };
};

/** The claims a workload identity token carries (see `claims.ts`). */
export type Claims = Record<string, string | number>;

const keysDecider: Decider<{ kids: string[] }, OidcSigningKeyCreated> = {
  initialState: () => ({ kids: [] }),
  evolve: (s, e) => ({ kids: [...s.kids, e.data.kid] }),
};

export const oidcKeyProjection: Projection = {
  name: 'runs-oidc-keys',
  version: 1,
  tables: [TABLE],
  // The keys workload identity tokens are signed with, and the JWKS that vouches for them.
  guarded: [TABLE],
  events: ['OidcSigningKeyCreated'] satisfies OidcSigningKeyCreated['type'][],
  setup(db) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (kid TEXT PRIMARY KEY, public_jwk TEXT NOT NULL,
      private_key TEXT NOT NULL, position INTEGER NOT NULL, created_at TEXT NOT NULL)`);
    const insert = db.prepare(
      `INSERT INTO ${TABLE} (kid, public_jwk, private_key, position, created_at) VALUES (?, ?, ?, ?, ?)`,
    );
    return (event: StoredEvent) => {
      if (event.type !== 'OidcSigningKeyCreated') return;
      const { data } = event as StoredEvent<OidcSigningKeyCreated>;
      insert.run(
        data.kid,
        // Canonical, as the log holds them: a replay writes the same bytes.
        canonicalJson(data.publicJwk),
        canonicalJson(data.privateKey),
        event.position,
        event.time,
      );
    };
  },
};

const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** RFC 7638: the SHA-256 thumbprint of an RSA public key's required members. */
const thumbprint = (jwk: Record<string, string>) =>
  createHash('sha256')
    .update(JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n }))
    .digest('base64url');

/** The issuer's keys, discovery document, JWKS, and signing. */
export class OidcIssuer {
  private readonly sql: ReturnType<typeof statements>;
  /** The key being made and recorded, so concurrent first signatures make one. */
  private making: Promise<void> | null = null;

  constructor(private readonly core: Core) {
    this.sql = statements(core.db);
  }

  /** The issuer: Keel's public address, as the tokens' `iss` and the discovery document name it. */
  get issuer(): string {
    return this.core.config.publicAddress.replace(/\/$/, '');
  }

  /**
   * Make the first signing key if there is none: when the first token is signed, not at start (an
   * RSA key takes up to a second to make, and a JWKS is read only to check a token already made).
   * A second process finds it made.
   */
  async ensureKey(): Promise<void> {
    if (this.newest() !== null) return;
    this.making ??= this.makeKey().finally(() => {
      this.making = null;
    });
    await this.making;
  }

  private async makeKey(): Promise<void> {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = publicKey.export({ format: 'jwk' }) as Record<string, string>;
    const publicJwk = { kty: 'RSA', n: jwk.n!, e: jwk.e!, alg: 'RS256', use: 'sig' };
    const kid = thumbprint(publicJwk);
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    try {
      await this.core.handler.handle(
        OIDC_KEYS_STREAM,
        keysDecider,
        (s): OidcSigningKeyCreated[] =>
          s.kids.length > 0
            ? []
            : [
                {
                  type: 'OidcSigningKeyCreated',
                  data: {
                    kid,
                    publicJwk: { ...publicJwk, kid },
                    privateKey: this.core.sealer.seal(pem),
                  },
                },
              ],
        systemMetadata('oidc'),
      );
    } catch (err) {
      // Another process made it between our read and our append: its key is the one.
      if (!(err instanceof ConcurrencyError)) throw err;
    }
  }

  private newest(): { kid: string; privateKey: Sealed } | null {
    const r = this.sql(
      `SELECT kid, private_key FROM ${TABLE} ORDER BY position DESC LIMIT 1`,
    ).get() as { kid: string; private_key: string } | undefined;
    return r === undefined ? null : { kid: r.kid, privateKey: JSON.parse(r.private_key) as Sealed };
  }

  /** `/.well-known/jwks`: every signing key's public half. */
  jwks(): { keys: Record<string, string>[] } {
    return {
      keys: (
        this.sql(`SELECT public_jwk FROM ${TABLE} ORDER BY position`).all() as {
          public_jwk: string;
        }[]
      ).map((r) => JSON.parse(r.public_jwk) as Record<string, string>),
    };
  }

  /** `/.well-known/openid-configuration`. */
  discovery() {
    return {
      issuer: this.issuer,
      jwks_uri: `${this.issuer}/.well-known/jwks`,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      scopes_supported: ['openid'],
      claims_supported: [
        'sub',
        'aud',
        'exp',
        'iat',
        'nbf',
        'iss',
        'jti',
        'terraform_organization_name',
        'terraform_project_id',
        'terraform_project_name',
        'terraform_workspace_id',
        'terraform_workspace_name',
        'terraform_full_workspace',
        'terraform_run_id',
        'terraform_run_phase',
      ],
    };
  }

  /** A compact JWS (RS256) of the claims under the newest key, made first if there is none. */
  async sign(claims: Claims): Promise<string> {
    await this.ensureKey();
    const key = this.newest();
    if (key === null) throw new Error('the OIDC issuer has no signing key');
    const header = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: key.kid }));
    const body = b64url(JSON.stringify(claims));
    const signature = sign(
      'sha256',
      Buffer.from(`${header}.${body}`),
      createPrivateKey(this.core.sealer.open(key.privateKey)),
    );
    return `${header}.${body}.${b64url(signature)}`;
  }
}
