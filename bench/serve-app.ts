// The bench's server process: the whole app, rate limits off, reporting its address over IPC.
import { createApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { silentLogger } from '../src/core/logger.js';
import { listen } from '../src/http/server.js';

const dataDir = process.argv[2];
if (dataDir === undefined) throw new Error('usage: serve-app.ts DATA_DIR');
const app = createApp(
  testConfig(dataDir, { rateLimit: { enabled: false, perSecond: 30, runListsPerMinute: 30 } }),
  {
    logger: silentLogger(),
    sealKey: Buffer.alloc(32, 9),
    // As keel serve runs (ADR 0006).
    backgroundCheckpoints: true,
  },
);
const boot = app.bootstrap();
if (boot === null) throw new Error('the bench server needs a fresh data directory');
app.start();
const server = await listen(app.callback, '127.0.0.1', 0);
process.send?.({
  url: server.url,
  runsToken: boot.runs.user_token,
  rootToken: boot.secrets.root_token,
});
process.on('SIGTERM', () => {
  void server
    .close()
    .then(() => app.close())
    .then(() => process.exit(0));
});
