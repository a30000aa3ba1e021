import { defineConfig } from 'vitest/config';

const level = (name: string, timeout = 10_000, exclude: string[] = []) => ({
  extends: true as const,
  test: {
    name,
    include: [`test/${name}/**/*.test.ts`],
    exclude,
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

export default defineConfig({
  test: {
    pool: 'forks',
    // Every flat machine fold is also taken through xstate's transition and compared (ADR 0007).
    env: { KEEL_CHECK_FOLDS: '1' },
    setupFiles: ['test/support/setup.ts'],
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      level('unit'),
      level('model', 60_000),
      // test/integration/store needs the PostgreSQL cluster: it runs in integration-pg only.
      level('integration', 60_000, ['test/integration/store/**']),
      level('e2e', 60_000),
      level('interop', 60_000),
      // The real daemon over HTTP, driven by the reports of issue 14 (docs/security.md).
      level('security', 60_000),
      // The integration suite again, each test app on its own database of a throwaway
      // PostgreSQL cluster started once for the run (ADR 0081).
      {
        extends: true as const,
        test: {
          name: 'integration-pg',
          include: ['test/integration/**/*.test.ts'],
          exclude: PG_EXCLUDED,
          globalSetup: ['test/support/postgres-setup.ts'],
          env: { KEEL_TEST_STORE: 'postgres' },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
