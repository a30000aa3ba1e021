import cluster from 'node:cluster';
import { SETPRIV } from '../runs/executor/command/process.js';
import type { CommandCall } from '../cli.js';
import { enginesOf } from '../config.js';
import { createLogger, logProcessWarnings } from '../core/logger.js';
import { startDaemon } from '../daemon.js';
import { startPrimary, type WorkerReady } from '../workers.js';
import { redactUrl } from '../core/store/url.js';

/** `keel serve`: run the daemon until SIGINT or SIGTERM, then finish in-flight requests. */
export async function serve({ config, io, deps }: CommandCall): Promise<number> {
  const logger = createLogger({ level: config.logLevel, destination: io.stdout });
  logProcessWarnings(logger);
  // Signals that arrive while starting are honoured as soon as the daemon is up.
  let signalled: string | null = null;
  let onSignal = (signal: string) => {
    signalled = signal;
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  const primary = config.workers > 1 && cluster.isPrimary;
  const worker = config.workers > 1 && cluster.isWorker;
  const running = primary
    ? await startPrimary(config, logger)
    : await startDaemon(config, { ...deps, logger }).then((d) => ({
        url: d.server.url,
        bootstrapPath: d.bootstrapPath,
        stop: () => d.stop(),
      }));
  if (running.bootstrapPath !== null && !worker) {
    logger.info(
      { bootstrap: running.bootstrapPath },
      'first start: tokens and endpoints written to bootstrap.json (mode 0600)',
    );
  }
  if (worker) {
    const ready: WorkerReady = {
      type: 'keel-worker-ready',
      url: running.url,
      bootstrapPath: running.bootstrapPath,
    };
    process.send?.(ready);
    logger.info({ address: running.url, pid: process.pid }, 'worker serving');
  } else {
    // Before the line that says the daemon serves, so whoever waits for that line has this too.
    const engines = Object.keys(enginesOf(config));
    if (engines.length > 0) {
      logger.warn(
        { engines },
        "execution engines run a workspace's configuration as this daemon's user: whoever may upload a configuration to a workspace using one can read what this daemon can (its data directory, its keyring); run the engine in a sandbox or as another user (docs/security.md, Command engines)",
      );
      if (SETPRIV === null)
        logger.warn(
          { engines },
          "setpriv (util-linux) is not installed: an engine's terraform outlives this daemon if it dies mid-phase, until the next daemon on this data directory starts and stops it (docs/operations.md)",
        );
    }
    logger.info(
      {
        address: running.url,
        data: config.dataDir,
        // The URL may hold a password: only its redacted form is ever printed.
        store: config.store.kind === 'sqlite' ? 'sqlite' : redactUrl(config.store.url),
        pid: process.pid,
        workers: config.workers,
      },
      'keel is serving',
    );
  }
  await new Promise<void>((done) => {
    onSignal = (signal: string) => {
      logger.info({ signal }, 'stopping: finishing in-flight requests');
      void running.stop().then(done);
    };
    if (signalled !== null) onSignal(signalled);
  });
  logger.info('stopped');
  // A worker's channel to its primary would keep it alive.
  if (worker) process.disconnect?.();
  return 0;
}
