import type { CommandCall } from '../cli.js';
import { requireLog } from './log.js';

/** `keel token runs|secrets`: mint a token by appending its events, without HTTP. */
export async function token({ config, options, positionals, fail, say }: CommandCall) {
  const kind = positionals[0];
  if (kind !== 'runs' && kind !== 'secrets')
    return fail('which token? keel token runs | keel token secrets (keel token --help)');
  requireLog(config);
  const [{ createApp }, { createLogger }, { parseDuration }] = await Promise.all([
    import('../app.js'),
    import('../core/logger.js'),
    import('../secrets/duration.js'),
  ]);
  // No directory lock: appends are safe beside a running daemon (optimistic versions).
  const app = createApp(config, { logger: createLogger({ level: 'warn' }) });
  try {
    if (kind === 'runs') {
      const user = typeof options.user === 'string' ? options.user : 'admin';
      say(app.tokens.runsUserToken(user, 'keel token'));
    } else {
      const policies = typeof options.policy === 'string' ? options.policy.split(',') : ['root'];
      const ttl = typeof options.ttl === 'string' ? parseDuration(options.ttl, 'ttl') : 0;
      say(app.tokens.secretsToken(policies, ttl));
    }
    return 0;
  } finally {
    void app.close();
  }
}
