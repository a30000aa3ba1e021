import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { homedir } from 'node:os';
import { rootCertificates } from 'node:tls';
import { join } from 'node:path';
import { IAMClient } from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { KeelError, ValidationError } from '../../core/errors.js';

/** The parts of `config/root` that decide how the engine reaches IAM and STS. */
export interface RootConfig {
  access_key?: string;
  secret_key?: string;
  region?: string;
  iam_endpoint?: string;
  sts_endpoint?: string;
  sts_region?: string;
  sts_fallback_endpoints?: readonly string[];
  sts_fallback_regions?: readonly string[];
  /** Retries for recoverable errors; -1 (or unset) keeps the SDK's default. */
  max_retries?: number;
  /** Keel's own HTTPS listener: endpoints at its origin are trusted under its certificates too. */
  listener?: ListenerTrust;
}

/** Keel's own address and the certificates a client of its HTTPS listener trusts. */
export interface ListenerTrust {
  /** `https://host:port`, as `URL.origin` spells it. */
  origin: string;
  /** PEM certificates: the CA of `--tls auto`, or the operator's `--tls-cert` chain. */
  ca: readonly string[];
}

/**
 * The SDK's request handler for an endpoint at Keel's own HTTPS address: the system's roots and
 * the listener's certificates. Any other endpoint keeps the SDK's default (the system's roots).
 */
export function requestHandlerFor(
  endpoint: string | undefined,
  listener: ListenerTrust | undefined,
): { requestHandler?: { httpsAgent: Agent } } {
  if (endpoint === undefined || listener === undefined || listener.ca.length === 0) return {};
  let origin: string;
  try {
    origin = new URL(endpoint).origin;
  } catch {
    return {}; // not a URL: not the listener's, so no trust of it (the SDK refuses the endpoint)
  }
  if (origin !== listener.origin) return {};
  return {
    requestHandler: {
      httpsAgent: new Agent({ keepAlive: true, ca: [...rootCertificates, ...listener.ca] }),
    },
  };
}

/** The process environment, passed in so callers (and tests) decide what it holds. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Credentials and where they came from. */
export interface ResolvedCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  source: 'config' | 'environment' | 'shared-file';
}

/** Reads a file's text, or returns null when it does not exist; injectable for tests. */
export type ReadText = (path: string) => string | null;

const readTextFile: ReadText = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null; // absent or unreadable counts as absent, as in the AWS SDK's own shared-file loader
  }
};

/** Parses an AWS shared credentials file into profiles of lower-cased keys. */
export function parseCredentialsFile(text: string): Map<string, Map<string, string>> {
  const profiles = new Map<string, Map<string, string>>();
  let current: Map<string, string> | null = null;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (section) {
      current = new Map();
      profiles.set(section[1] ?? '', current);
      continue;
    }
    const eq = line.indexOf('=');
    if (current && eq > 0)
      current.set(line.slice(0, eq).trim().toLowerCase(), line.slice(eq + 1).trim());
  }
  return profiles;
}

/**
 * The credential chain of the spec: static keys in config/root, then the environment
 * (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, with the older
 * `AWS_ACCESS_KEY`/`AWS_SECRET_KEY` spellings), then the shared credentials file
 * (`AWS_SHARED_CREDENTIALS_FILE` or `~/.aws/credentials`, profile `AWS_PROFILE` or `default`).
 */
export function resolveCredentials(
  config: RootConfig,
  env: Env,
  readText: ReadText = readTextFile,
): ResolvedCredentials {
  const key = config.access_key ?? '';
  const secret = config.secret_key ?? '';
  if (key !== '' || secret !== '') {
    if (key === '' || secret === '') {
      throw new ValidationError(
        "static AWS client credentials haven't been properly configured (the access key or secret key were provided but not both)",
      );
    }
    return { accessKeyId: key, secretAccessKey: secret, source: 'config' };
  }
  const envKey = env.AWS_ACCESS_KEY_ID ?? env.AWS_ACCESS_KEY;
  const envSecret = env.AWS_SECRET_ACCESS_KEY ?? env.AWS_SECRET_KEY;
  if (envKey && envSecret) {
    return {
      accessKeyId: envKey,
      secretAccessKey: envSecret,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
      source: 'environment',
    };
  }
  const file =
    env.AWS_SHARED_CREDENTIALS_FILE ?? join(env.HOME ?? homedir(), '.aws', 'credentials');
  const text = readText(file);
  const profile =
    text === null ? undefined : parseCredentialsFile(text).get(env.AWS_PROFILE ?? 'default');
  const fileKey = profile?.get('aws_access_key_id');
  const fileSecret = profile?.get('aws_secret_access_key');
  if (fileKey && fileSecret) {
    const token = profile?.get('aws_session_token');
    return {
      accessKeyId: fileKey,
      secretAccessKey: fileSecret,
      ...(token ? { sessionToken: token } : {}),
      source: 'shared-file',
    };
  }
  throw new ValidationError(
    'no AWS credentials found: set access_key and secret_key in config/root, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment, or a shared credentials file',
  );
}

/** Region: config, then `AWS_REGION`, then `AWS_DEFAULT_REGION`, then `us-east-1`. */
export const resolveRegion = (config: RootConfig, env: Env): string =>
  config.region || env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1';

/** SDK attempts for `max_retries`: -1 or unset keeps the SDK default (undefined). */
export function maxAttempts(maxRetries: number | undefined): number | undefined {
  if (maxRetries === undefined || maxRetries < 0) return undefined;
  return maxRetries + 1;
}

function common(config: RootConfig, env: Env, readText: ReadText) {
  const c = resolveCredentials(config, env, readText);
  const attempts = maxAttempts(config.max_retries);
  return {
    credentials: {
      accessKeyId: c.accessKeyId,
      secretAccessKey: c.secretAccessKey,
      ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}),
    },
    ...(attempts === undefined ? {} : { maxAttempts: attempts }),
  };
}

/** The IAM client for a root config (custom `iam_endpoint` when set). */
export function createIamClient(
  config: RootConfig,
  env: Env,
  readText: ReadText = readTextFile,
): IAMClient {
  return new IAMClient({
    ...common(config, env, readText),
    region: resolveRegion(config, env),
    ...(config.iam_endpoint ? { endpoint: config.iam_endpoint } : {}),
    ...requestHandlerFor(config.iam_endpoint, config.listener),
  });
}

/** STS endpoint candidates in order: the primary, then each fallback with its region. */
export function stsCandidates(
  config: RootConfig,
  env: Env,
): { endpoint?: string; region: string }[] {
  const endpoints = config.sts_fallback_endpoints ?? [];
  const regions = config.sts_fallback_regions ?? [];
  if (endpoints.length !== regions.length) {
    throw new ValidationError('number of regions does not match number of endpoints');
  }
  const primary = {
    ...(config.sts_endpoint ? { endpoint: config.sts_endpoint } : {}),
    region: config.sts_region || resolveRegion(config, env),
  };
  return [primary, ...endpoints.map((endpoint, i) => ({ endpoint, region: regions[i] ?? '' }))];
}

/** One STS client per candidate, not yet probed. */
export function createStsClients(
  config: RootConfig,
  env: Env,
  readText: ReadText = readTextFile,
): STSClient[] {
  const base = common(config, env, readText);
  return stsCandidates(config, env).map(
    (c) =>
      new STSClient({
        ...base,
        region: c.region,
        ...(c.endpoint ? { endpoint: c.endpoint } : {}),
        ...requestHandlerFor(c.endpoint, config.listener),
      }),
  );
}

/**
 * The first STS candidate that answers `GetCallerIdentity`, as Vault probes its endpoints.
 * Candidates that fail are destroyed; if none answers the error names the last cause.
 */
export async function createStsClient(
  config: RootConfig,
  env: Env,
  readText: ReadText = readTextFile,
): Promise<STSClient> {
  let lastError: unknown;
  for (const client of createStsClients(config, env, readText)) {
    try {
      await client.send(new GetCallerIdentityCommand({}));
      return client;
    } catch (err) {
      lastError = err;
      client.destroy();
    }
  }
  const why = lastError instanceof Error ? `: ${lastError.message}` : '';
  throw new KeelError('validation', `could not obtain sts client${why}`, {}, { cause: lastError });
}
