import { defineConfig } from 'vitest/config';

// Integration suites share one FerretDB and one Temporal dev server started by the global setup;
// each test file makes its own store, task queue and workflow ids, so files may run in parallel.
export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    include: ['test/**/*.test.ts'],
    exclude: ['test/bench/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2 } },
  },
});
