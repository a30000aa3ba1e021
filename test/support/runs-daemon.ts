// `keel serve` with the test executor in place of the real one: the runs e2e tests' daemon. Both
// reacting to the same queued run would race, and which one recorded the plan would depend on
// timing.
import { runCli } from '../../src/cli.js';
import { testExecutorContext } from './runs-test-executor.js';

process.exitCode = await runCli(
  process.argv.slice(2),
  { env: process.env, stdout: process.stdout, stderr: process.stderr },
  { executor: false, extraContexts: (core) => [testExecutorContext(core)] },
);
