import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningDaemon } from '../../support/daemon.js';
import { startDaemon } from '../../support/daemon.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./hvac_suites.py', import.meta.url));

/**
 * The cases of hvac's own suites that Keel answers differently on purpose, each with the reason
 * (docs/api/secrets-sys.md lists them too).
 */
const DEVIATIONS: Record<string, Record<string, string>> = {
  aws: {
    // Keel's engine spec requires role_arns for assumed_role roles at write time.
    create_or_update_role_assumed_role_with_policy_document:
      'error(s) validating supplied role data',
  },
};

let daemon: RunningDaemon;
let results: Record<string, Record<string, string>>;
beforeAll(async () => {
  daemon = await startDaemon({ args: ['--tls', 'auto'] });
  const { stdout } = await run(
    '/usr/bin/python3',
    [
      SCRIPT,
      daemon.url,
      daemon.bootstrap().secrets.root_token,
      join(daemon.dataDir, 'tls', 'ca.pem'),
    ],
    { timeout: 120_000 },
  );
  results = JSON.parse(stdout) as Record<string, Record<string, string>>;
}, 150_000);
afterAll(async () => {
  await daemon.stop();
});

describe("hvac's own integration cases against the real daemon over --tls auto", () => {
  for (const suite of ['token', 'policy', 'lease', 'mount', 'aws', 'approle', 'keel']) {
    it(`${suite}: every case passes, or fails as a listed deviation`, () => {
      const cases = results[suite] ?? {};
      expect(Object.keys(cases).length).toBeGreaterThan(0);
      for (const [name, outcome] of Object.entries(cases)) {
        const deviation = DEVIATIONS[suite]?.[name];
        if (deviation === undefined) expect({ [name]: outcome }).toEqual({ [name]: 'ok' });
        else expect(outcome, name).toContain(deviation);
      }
    });
  }
});
