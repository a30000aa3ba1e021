// `keel serve` with the test executor composed in: the runs e2e tests' daemon.
import { runCli } from '../../src/cli.js';
import { testExecutorContext } from './runs-test-executor.js';

process.exitCode = await runCli(
  process.argv.slice(2),
  { env: process.env, stdout: process.stdout, stderr: process.stderr },
  { extraContexts: (core) => [testExecutorContext(core)] },
);
