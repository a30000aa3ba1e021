import { defineConfig } from 'vitest/config';

const level = (name: string, timeout = 10_000) => ({
  extends: true as const,
  test: {
    name,
    include: [`test/${name}/**/*.test.ts`],
    testTimeout: timeout,
    hookTimeout: timeout,
  },
});

export default defineConfig({
  test: {
    pool: 'forks',
    // Every flat machine fold is also taken through xstate's transition and compared (ADR 0007).
    env: { KEEL_CHECK_FOLDS: '1' },
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      level('unit'),
      level('model', 60_000),
      level('integration', 30_000),
      level('e2e', 60_000),
      level('interop', 60_000),
      level('security', 60_000),
    ],
  },
});
