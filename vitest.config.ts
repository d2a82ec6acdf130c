import { defineConfig, type ViteUserConfig } from 'vitest/config';

/**
 * `--coverage` (`npm run test:coverage`, CI's `npm test`): v8 coverage of the application's folders, written as
 * test/artifacts/coverage/coverage-summary.json and printed by .ci/coverage-summary.mjs. Only code that runs in
 * vitest's own processes counts: the API and worker processes the integration suites spawn, and workflow code
 * run in the worker's sandbox, are not measured. No threshold: the figure is shown, not enforced.
 */
export const coverage = {
  provider: 'v8',
  include: ['{api,resources,services,store,adapters,workflows,activities,worker,admin,domain,i18n,temporal-dev}/**/*.ts'],
  reporter: ['json-summary'],
  reportsDirectory: 'test/artifacts/coverage',
  reportOnFailure: true,
} satisfies NonNullable<NonNullable<ViteUserConfig['test']>['coverage']>;

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
    coverage,
  },
});
