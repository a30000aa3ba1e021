import type { IAMClient } from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import type { STSClient } from '@aws-sdk/client-sts';
import type { Clock } from '../../core/clock.js';
import { KeelError } from '../../core/errors.js';
import type { Env, ListenerTrust, RootConfig } from './provider.js';
import { createIamClient, createStsClients } from './provider.js';
import { endpointUrl, type RootSettings } from './schema.js';

/**
 * How the engine reaches IAM and STS for one mount: built from the root configuration each time
 * it changes. The engine never talks to the provider any other way.
 */
export interface AwsClients {
  iam(): IAMClient;
  /** The first STS endpoint (primary, then fallbacks) that answers GetCallerIdentity. */
  sts(): Promise<STSClient>;
}

/** The root configuration as the client factory needs it, with the secret already unsealed. */
export interface RootCredentials {
  settings: RootSettings | null;
  secretKey: string;
}

/** Builds clients for a mount's root configuration. */
export type AwsClientFactory = (root: RootCredentials) => AwsClients;

type DefaultKey = { accessKeyId: string; secretAccessKey: string };

/** Endpoints used when the root configuration names none: Keel's embedded cloud, or real AWS. */
export interface ProviderDefaults {
  iamEndpoint?: string;
  stsEndpoint?: string;
  /** Credentials for the default endpoints when config/root has none (the embedded cloud's root key). */
  credentials?: DefaultKey | (() => DefaultKey);
  env?: Env;
  /** Requests are signed with this clock's time (Keel's injected clock), not the host's. */
  clock?: Clock;
  /**
   * Keel's HTTPS listener, read at each client build: the embedded cloud at Keel's own address
   * is reached trusting its certificates (the listener CA), whatever endpoint config/root names.
   */
  listener?: () => ListenerTrust;
}

/** Signs every request of `client` at `clock`'s time: SigV4 dates follow Keel's clock. */
export function signAt<C extends IAMClient | STSClient>(client: C, clock: Clock | undefined): C {
  if (!clock) return client;
  const config = client.config as { systemClockOffset: number };
  // Both clients share the middleware stack's shape; only the input and output types differ.
  type Handler = (args: unknown) => Promise<unknown>;
  const stack = client.middlewareStack as unknown as {
    addRelativeTo(
      mw: (next: Handler) => Handler,
      options: { relation: 'before'; toMiddleware: string; name: string },
    ): void;
  };
  // Right before signing (after the retry middleware), so retries are signed at Keel's time too.
  stack.addRelativeTo(
    (next) => (args) => {
      config.systemClockOffset = clock.now().getTime() - Date.now();
      return next(args);
    },
    { relation: 'before', toMiddleware: 'httpSigningMiddleware', name: 'keelClock' },
  );
  return client;
}

/** The provider's view of a mount's root settings, with Keel's defaults filled in. */
export function rootConfigOf(
  { settings: s, secretKey }: RootCredentials,
  defaults: ProviderDefaults,
): RootConfig {
  const iamEndpoint = s?.iamEndpoint ? endpointUrl(s.iamEndpoint) : defaults.iamEndpoint;
  const stsEndpoint = s?.stsEndpoint ? endpointUrl(s.stsEndpoint) : defaults.stsEndpoint;
  // The embedded cloud's key is used only against the embedded cloud, and only without static keys.
  const useDefaultKey = !s?.accessKey && iamEndpoint === defaults.iamEndpoint;
  const key = !useDefaultKey
    ? undefined
    : typeof defaults.credentials === 'function'
      ? defaults.credentials()
      : defaults.credentials;
  return {
    ...(s?.accessKey ? { access_key: s.accessKey, secret_key: secretKey } : {}),
    ...(useDefaultKey && key
      ? { access_key: key.accessKeyId, secret_key: key.secretAccessKey }
      : {}),
    ...(s?.region ? { region: s.region } : {}),
    ...(iamEndpoint ? { iam_endpoint: iamEndpoint } : {}),
    ...(stsEndpoint ? { sts_endpoint: stsEndpoint } : {}),
    ...(s?.stsRegion ? { sts_region: s.stsRegion } : {}),
    sts_fallback_endpoints: (s?.stsFallbackEndpoints ?? []).map(endpointUrl),
    sts_fallback_regions: s?.stsFallbackRegions ?? [],
    max_retries: s?.maxRetries ?? -1,
    ...(defaults.listener ? { listener: defaults.listener() } : {}),
  };
}

/**
 * Clients by the spec's credential precedence (`provider.ts`: static keys from config/root, the
 * environment, shared credential files), at the configured or default endpoints, signed at
 * Keel's clock. With fallback STS endpoints, the first that answers GetCallerIdentity wins.
 */
export function sdkClientFactory(defaults: ProviderDefaults = {}): AwsClientFactory {
  const env = defaults.env ?? process.env;
  return (root) => {
    let iam: IAMClient | undefined;
    let sts: Promise<STSClient> | undefined;
    return {
      iam() {
        iam ??= signAt(createIamClient(rootConfigOf(root, defaults), env), defaults.clock);
        return iam;
      },
      sts() {
        sts ??= pickSts(rootConfigOf(root, defaults), env, defaults.clock).catch((e: unknown) => {
          sts = undefined;
          throw e;
        });
        return sts;
      },
    };
  };
}

async function pickSts(config: RootConfig, env: Env, clock: Clock | undefined): Promise<STSClient> {
  const clients = createStsClients(config, env).map((c) => signAt(c, clock));
  // One endpoint needs no probe; with fallbacks, the first that answers GetCallerIdentity wins.
  if (clients.length === 1) return clients[0] as STSClient;
  let lastError: unknown;
  for (const client of clients) {
    try {
      await client.send(new GetCallerIdentityCommand({}));
      return client;
    } catch (e) {
      lastError = e;
      client.destroy();
    }
  }
  const why = lastError instanceof Error ? `: ${lastError.message}` : '';
  throw new KeelError('validation', `could not obtain sts client${why}`, {}, { cause: lastError });
}
