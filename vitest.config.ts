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
    // Processes the tests spawn serve metrics on any free port unless a test names one (9464/9465 are npm start's).
    env: { API_METRICS_PORT: '0', WORKER_METRICS_PORT: '0' },
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2 } },
  },
});
