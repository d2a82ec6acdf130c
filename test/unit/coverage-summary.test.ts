// What this tests: the coverage line `.ci/run` and `npm run test:coverage` print from vitest's json-summary
// report: each kind's percentage and counts, and never a line CI's recorder reads as another runner's summary.
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of the CI script, without types
import { coverageLine } from '../../.ci/coverage-summary.mjs';
// @ts-expect-error: a plain ES module of the CI script, without types
import { foreignClosingLines } from '../../.ci/foreign-closing-lines.mjs';

const kind = (covered: number, total: number) => ({ covered, total, skipped: 0, pct: Math.round((covered / total) * 10_000) / 100 });
const SUMMARY = {
  total: { lines: kind(4296, 20932), statements: kind(4296, 20932), branches: kind(1184, 1312), functions: kind(429, 657) },
  '/repo/domain/pricing.ts': { lines: kind(10, 10), statements: kind(10, 10), branches: kind(1, 1), functions: kind(1, 1) },
};

describe('the coverage figure CI prints', () => {
  it('gives lines, statements, branches and functions with their counts', () => {
    expect(coverageLine(SUMMARY)).toBe(
      'Coverage (v8, 1 files): lines 20.52% (4,296/20,932), statements 20.52% (4,296/20,932), branches 90.24% (1,184/1,312), functions 65.3% (429/657)',
    );
  });

  it("is not read as another runner's closing line", () => {
    expect(foreignClosingLines(coverageLine(SUMMARY))).toEqual([]);
  });
});
