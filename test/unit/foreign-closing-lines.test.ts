import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of the CI script, without types
import { foreignClosingLines } from '../../.ci/foreign-closing-lines.mjs';
import { quoteToolOutput } from '../support/quoted-output';

const VITEST_TAIL = `
 ✓ test/unit/provider-call.test.ts (3 tests) 7ms
 Test Files  138 passed (138)
      Tests  1296 passed (1296)
   Start at  02:09:45
   Duration  1028.10s (transform 6.07s, setup 0ms, collect 218.34s, tests 1755.41s, environment 28ms, prepare 12.00s)
crash recovery: usage period close (closeUsagePeriod held) completed 10288 ms after the kill
schemathesis |   738 generated, 738 passed`;

describe("CI's check for other runners' closing lines in the test log", () => {
  it("finds schemathesis' pytest-style banner, as the recorder did", () => {
    const found = foreignClosingLines(`${VITEST_TAIL}\n============================= 2 warnings in 51.34s =============================\n`);
    expect(found).toEqual([{ runner: 'pytest', line: '============================= 2 warnings in 51.34s =============================' }]);
  });

  it("passes vitest's own output and a quoted tool report", () => {
    const quoted = quoteToolOutput('schemathesis', '============================= 2 warnings in 51.34s =============================');
    expect(foreignClosingLines(`${VITEST_TAIL}\n${quoted}`)).toEqual([]);
  });

  it('finds a plain "N passed, N failed" line and coloured ones', () => {
    expect(foreignClosingLines('Tests: 0 passed, 0 failed\n\x1b[32m# tests 0\x1b[39m').map((f: { runner: string }) => f.runner)).toEqual([
      'plain',
      "node's runner",
    ]);
  });
});
