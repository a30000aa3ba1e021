#!/usr/bin/env node
import { runCli } from './cli.js';

// Whatever Keel creates (the data directory, databases and their WAL, logs, keys) is the owner's
// alone; startDaemon also tightens what an older version left behind.
process.umask(0o077);

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
});
