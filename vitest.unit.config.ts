import { defineConfig } from 'vitest/config';
import { coverage } from './vitest.config';

// `npm run test:unit`: the pure suites (domain rules, pricing, parsing, signing, workflow-side rules) with no
// server started, the inner loop that answers in seconds. `npm test` runs them again beside everything else.
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    testTimeout: 10_000,
    coverage,
  },
});
