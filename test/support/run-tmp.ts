import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Gives the test run a temporary directory of its own and makes it the run's TMPDIR: every data
 * directory, work directory, socket and profile a test or a process it spawns makes under
 * `tmpdir()` lands there. The run removes it as it exits, unless the run failed (it is then kept,
 * and its path printed, for what the failed tests left) or KEEL_KEEP_TMP is set.
 *
 * Called once, from vitest.config.ts, in vitest's main process: its workers and the processes they
 * start inherit the variable.
 */
export function runTemporaryDirectory(): void {
  const dir = mkdtempSync(join(tmpdir(), 'keel-suite-'));
  // As /tmp itself: other users (a PostgreSQL cluster's own) make their files in it too.
  chmodSync(dir, 0o1777);
  process.env.TMPDIR = dir;
  process.on('exit', (code) => {
    if (code !== 0 || process.env.KEEL_KEEP_TMP !== undefined) {
      console.error(`the run's temporary files are kept in ${dir}`);
      return;
    }
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch (err) {
      console.error(
        `the run's temporary files could not all be removed from ${dir}: ${(err as Error).message}`,
      );
    }
  });
}
