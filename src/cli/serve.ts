import type { CommandCall } from '../cli.js';
import { createLogger } from '../core/logger.js';
import { startDaemon } from '../daemon.js';

/** `keel serve`: run the daemon until SIGINT or SIGTERM, then finish in-flight requests. */
export async function serve({ config, io, deps }: CommandCall): Promise<number> {
  const logger = createLogger({ level: config.logLevel, destination: io.stdout });
  // Signals that arrive while starting are honoured as soon as the daemon is up.
  let signalled: string | null = null;
  let onSignal = (signal: string) => {
    signalled = signal;
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  const daemon = await startDaemon(config, { ...deps, logger });
  if (daemon.bootstrapPath !== null) {
    logger.info(
      { bootstrap: daemon.bootstrapPath },
      'first start: tokens and endpoints written to bootstrap.json (mode 0600)',
    );
  }
  logger.info(
    { address: daemon.server.url, data: config.dataDir, pid: process.pid },
    'keel is serving',
  );
  await new Promise<void>((done) => {
    onSignal = (signal: string) => {
      logger.info({ signal }, 'stopping: finishing in-flight requests');
      void daemon.stop().then(done);
    };
    if (signalled !== null) onSignal(signalled);
  });
  logger.info('stopped');
  return 0;
}
