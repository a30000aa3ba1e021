import { IAMClient } from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import type { Clock } from '../../core/clock.js';
import { ValidationError } from '../../core/errors.js';
import type { RootSettings } from './schema.js';

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

/** Endpoints used when the root configuration names none: Keel's embedded cloud, or real AWS. */
export interface ProviderDefaults {
  iamEndpoint?: string;
  stsEndpoint?: string;
  /** Credentials for the default endpoints when config/root has none (the embedded cloud's root key). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  env?: Readonly<Record<string, string | undefined>>;
  /** Requests are signed with this clock's time (Keel's injected clock), not the host's. */
  clock?: Clock;
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

/**
 * Root credentials by the spec's precedence: static keys from config/root, then (federation is
 * refused at write) the SDK's default chain, which reads environment variables, shared credential
 * files and instance or task roles. Region: config, `AWS_REGION`, `AWS_DEFAULT_REGION`, `us-east-1`.
 */
export function sdkClientFactory(defaults: ProviderDefaults = {}): AwsClientFactory {
  const env = defaults.env ?? process.env;
  return ({ settings, secretKey }) => {
    const s = settings;
    const region = s?.region || env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1';
    const staticKeys = s?.accessKey
      ? { accessKeyId: s.accessKey, secretAccessKey: secretKey }
      : undefined;
    const iamEndpoint = s?.iamEndpoint || defaults.iamEndpoint;
    const credentials =
      staticKeys ?? (iamEndpoint === defaults.iamEndpoint ? defaults.credentials : undefined);
    // -1 means the SDK default (3 attempts); otherwise retries + the first attempt.
    const maxAttempts = s === null || s.maxRetries < 0 ? undefined : s.maxRetries + 1;
    const common = {
      ...(credentials ? { credentials } : {}),
      ...(maxAttempts ? { maxAttempts } : {}),
    };
    let iam: IAMClient | undefined;
    let sts: Promise<STSClient> | undefined;
    return {
      iam() {
        iam ??= signAt(
          new IAMClient({ region, ...(iamEndpoint ? { endpoint: iamEndpoint } : {}), ...common }),
          defaults.clock,
        );
        return iam;
      },
      sts() {
        sts ??= pickSts(s, region, defaults, common).catch((e: unknown) => {
          sts = undefined;
          throw e;
        });
        return sts;
      },
    };
  };
}

async function pickSts(
  s: RootSettings | null,
  region: string,
  defaults: ProviderDefaults,
  common: object,
): Promise<STSClient> {
  const primary = s?.stsEndpoint || defaults.stsEndpoint;
  const candidates: { endpoint: string | undefined; region: string }[] = [
    { endpoint: primary, region: s?.stsRegion || region },
    ...(s?.stsFallbackEndpoints ?? []).map((endpoint, i) => ({
      endpoint,
      region: s?.stsFallbackRegions[i] ?? region,
    })),
  ];
  const make = (c: { endpoint: string | undefined; region: string }) =>
    signAt(
      new STSClient({
        region: c.region,
        ...(c.endpoint ? { endpoint: c.endpoint } : {}),
        ...common,
      }),
      defaults.clock,
    );
  // One endpoint needs no probe; with fallbacks, the first that answers GetCallerIdentity wins.
  if (candidates.length === 1) return make(candidates[0] as (typeof candidates)[number]);
  for (const c of candidates) {
    const client = make(c);
    try {
      await client.send(new GetCallerIdentityCommand({}));
      return client;
    } catch {
      client.destroy();
    }
  }
  throw new ValidationError('could not obtain sts client');
}
