import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { runTemporaryDirectory } from './test/support/run-tmp.js';

// Every temporary file of the run in one directory, removed as the run ends.
runTemporaryDirectory();

/** The global setup of the projects that spawn Keel: one ahead-of-time build for the run. */
const DAEMON = 'test/support/daemon-setup.ts';
/** The global setup of the PostgreSQL projects: one throwaway cluster for the run. */
const POSTGRES = 'test/support/postgres-setup.ts';

const level = (
  name: string,
  timeout = 10_000,
  exclude: string[] = [],
  globalSetup: string[] = [],
) => ({
  extends: true as const,
  test: {
    name,
    include: [`test/${name}/**/*.test.ts`],
    exclude,
    globalSetup,
    testTimeout: timeout,
    hookTimeout: timeout,
  },
});

/**
 * Integration files that cannot run on the PostgreSQL store, each with the reason: they open or
 * edit the SQLite file itself, or test what only SQLite has.
 */
const PG_EXCLUDED = [
  // They open and edit <data>/keel.sqlite themselves (legacy chains, tampering, checkpoints).
  'test/integration/core/audit-chain.test.ts',
  'test/integration/core/checkpointer.test.ts',
];

/**
 * E2e files that cannot run with the harness's daemons on the PostgreSQL store, each with the
 * reason.
 */
const E2E_PG_EXCLUDED = [
  // Already on PostgreSQL: each starts a throwaway cluster of its own.
  'test/e2e/cluster/**',
  'test/e2e/core/postgres-store.test.ts',
  // `keel replay --until --into FILE` copies the SQLite file; it is refused on PostgreSQL.
  'test/e2e/core/replay.test.ts',
  // The first daemon's ten-minute poll interval (to hold the tidy in the schedule) gives its
  // leadership lease five intervals (ADR 0080): after its kill -9 the next node leads only when
  // that lease runs out, fifty minutes later. On one SQLite file a single process leads at once.
  'test/e2e/pki/tidy-restart.test.ts',
];

export default defineConfig({
  test: {
    pool: 'forks',
    // One process per worker runs file after file: the files share its module cache instead of
    // each importing Keel afresh (no test relies on module state; each builds its own app).
    isolate: false,
    // A worker more than the cores: the e2e, interop and security files mostly wait on the
    // processes they spawn, which have the cores meanwhile.
    maxWorkers: availableParallelism() + 1,
    // `expect.poll` waits on a browser or a daemon catching up: on two busy cores that can take
    // longer than vitest's one-second default; a poll that passes returns at once.
    expect: { poll: { timeout: 15_000 } },
    // Every projection is offered the event types it does not declare too, and a write for one
    // fails the command (src/core/projections.ts): the suite checks every `events` list. Daemons
    // the tests spawn inherit it.
    env: { KEEL_CHECK_PROJECTION_EVENTS: '1' },
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      level('unit'),
      level('model', 60_000),
      // test/integration/store needs the PostgreSQL cluster: it runs in integration-pg only.
      level('integration', 60_000, ['test/integration/store/**']),
      level('e2e', 60_000, [], [DAEMON]),
      level('interop', 60_000, [], [DAEMON]),
      // The real daemon over HTTP, driven by the reports of issue 14 (docs/security.md).
      level('security', 60_000, [], [DAEMON]),
      // The integration suite again, each test app on its own database of a throwaway
      // PostgreSQL cluster started once for the run (ADR 0081).
      {
        extends: true as const,
        test: {
          name: 'integration-pg',
          include: ['test/integration/**/*.test.ts'],
          exclude: PG_EXCLUDED,
          globalSetup: [POSTGRES],
          env: { KEEL_TEST_STORE: 'postgres' },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      // The e2e suite again, every daemon the harness starts (and every CLI run on its data
      // directory) on a fresh database of one throwaway PostgreSQL cluster (ADR 0081).
      {
        extends: true as const,
        test: {
          name: 'e2e-pg',
          include: ['test/e2e/**/*.test.ts'],
          exclude: E2E_PG_EXCLUDED,
          globalSetup: [POSTGRES, DAEMON],
          env: { KEEL_TEST_STORE: 'postgres' },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
