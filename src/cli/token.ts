import type { CommandCall } from '../cli.js';
import { requireLog } from './log.js';

/** `keel token runs|secrets`: mint a token by appending its events, without HTTP. */
export async function token({ config, options, positionals, fail, say }: CommandCall) {
  const kind = positionals[0];
  if (kind !== 'runs' && kind !== 'secrets')
    return fail('which token? keel token runs | keel token secrets (keel token --help)');
  // A secrets token names its powers: never a root token for want of a flag.
  const policies = kind === 'secrets' ? secretsPolicies(options) : [];
  if (policies === undefined)
    return fail(
      `keel token secrets needs --policy P[,P...] or --root, not both (keel token --help)`,
    );
  requireLog(config);
  const [{ createApp }, { createLogger }, { parseDuration }, { createTtl }] = await Promise.all([
    import('../app.js'),
    import('../core/logger.js'),
    import('../secrets/duration.js'),
    import('../secrets/sys/token-roles.js'),
  ]);
  // No directory lock: appends are safe beside a running daemon (optimistic versions).
  const app = createApp(config, { logger: createLogger({ level: 'warn' }) });
  try {
    if (kind === 'runs') {
      const user = typeof options.user === 'string' ? options.user : 'admin';
      say(app.tokens.runsUserToken(user, 'keel token'));
    } else {
      const asked = typeof options.ttl === 'string' ? parseDuration(options.ttl, 'ttl') : 0;
      // The TTL rules of auth/token/create: no TTL means the store's default, unless root.
      const isRoot = policies.includes('root');
      const ttl = createTtl(asked, { explicitMaxTtl: 0, period: 0, isRoot }, []);
      say(app.tokens.secretsToken(policies, ttl));
    }
    return 0;
  } finally {
    void app.close();
  }
}

/**
 * The policies of `keel token secrets`: exactly one of --root or --policy P[,P...], the latter
 * with `default` added as auth/token/create adds it; undefined when neither or both are given.
 */
function secretsPolicies(options: CommandCall['options']): string[] | undefined {
  const root = options.root === true;
  const named =
    typeof options.policy === 'string'
      ? options.policy
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p !== '')
      : [];
  if (root === named.length > 0) return undefined;
  if (root) return ['root'];
  if (named.includes('root')) return named;
  return [...new Set(['default', ...named])];
}
