import type { Config } from '../config.js';
import { systemMetadata } from '../core/events.js';
import type { Contexts } from './contexts.js';

/** What first start writes to `<data>/bootstrap.json` (mode 0600). */
export interface Bootstrap {
  address: string;
  runs: { user_token: string };
  secrets: { root_token: string };
  /** The embedded cloud's administrator key and endpoints (what the credentials engine talks to). */
  cloud: {
    access_key_id: string;
    secret_access_key: string;
    iam_endpoint: string;
    sts_endpoint: string;
    region: string;
  };
}

/** Mint tokens outside HTTP (`keel token`, for a lost bootstrap.json). */
export interface TokenMint {
  runsUserToken(username: string, description: string): string;
  secretsToken(policies: string[], ttlSeconds: number): string;
}

export function tokenMint({ identity, sys }: Contexts): TokenMint {
  return {
    runsUserToken(username, description) {
      const user = identity.queries.userByName(username);
      if (user === undefined) throw new Error(`no user named ${JSON.stringify(username)}`);
      return identity.commands.createTokenSync(
        {
          kind: 'user',
          ownerId: user.id,
          ownerName: user.username,
          organization: null,
          description,
          expiredAt: null,
          createdBy: null,
        },
        systemMetadata('keel token'),
      ).token;
    },
    secretsToken(policies, ttlSeconds) {
      return sys.commands.createTokenSync(
        { policies, displayName: 'token-cli', ttlSeconds, parentAccessor: null, meta: {} },
        systemMetadata('keel token'),
      ).token;
    },
  };
}

/** First start on an empty log: the admin user and its token, the root token, the default mounts. */
export function bootstrap(config: Config, contexts: Contexts): Bootstrap {
  const { identity, sys, engines, cloud } = contexts;
  const meta = systemMetadata('bootstrap');
  const admin = identity.commands.createUserSync(
    { username: 'admin', email: 'admin@keel.local', admin: true },
    meta,
  );
  const userToken = identity.commands.createTokenSync(
    {
      kind: 'user',
      ownerId: admin.id,
      ownerName: admin.username,
      organization: null,
      description: 'bootstrap',
      expiredAt: null,
      createdBy: null,
    },
    meta,
  );
  const root = sys.commands.createTokenSync(
    { policies: ['root'], displayName: 'root', ttlSeconds: 0, parentAccessor: null, meta: {} },
    meta,
  );
  for (const type of ['aws', 'pki']) {
    if (!engines.has(type)) continue;
    sys.commands.enableMountSync(
      {
        path: `${type}/`,
        type,
        description: `${type} secrets engine`,
        config: { default_lease_ttl: 0, max_lease_ttl: 0 },
      },
      () => sys.queries.mounts().map((m) => m.path),
      meta,
    );
  }
  const rootKey = cloud.bootstrapRoot();
  return {
    address: config.publicAddress,
    runs: { user_token: userToken.token },
    secrets: { root_token: root.token },
    cloud: {
      access_key_id: rootKey.accessKeyId,
      secret_access_key: rootKey.secretAccessKey,
      iam_endpoint: `${config.publicAddress}/cloud/iam`,
      sts_endpoint: `${config.publicAddress}/cloud/sts`,
      region: 'us-east-1',
    },
  };
}
