// `keel serve` with the test ledger context composed in: the e2e tests' daemon.
import { runCli } from '../../src/cli.js';
import { ledgerContext } from './ledger/context.js';

process.exitCode = await runCli(
  process.argv.slice(2),
  { env: process.env, stdout: process.stdout, stderr: process.stderr },
  { extraContexts: (core) => [ledgerContext(core)] },
);
