// Lines in our test log that CI's recorder could read as another test runner's closing line. The recorder
// reads pytest, go test, cargo, node's runner, Surefire, ctest, prove, RSpec, minitest, EUnit, ExUnit, cabal,
// OUnit, PHPUnit, Criterion, cmocka, CUnit, Check and swift test, and takes "N passed, N failed" in any
// language: a tool's report printed by a test (schemathesis' "=== 2 warnings in 51 s ===") once made our
// runs of 1,296 tests count as runs of none. `.ci/run` fails on such a line; quote it instead
// (test/support/quoted-output.ts). Usage: node .ci/foreign-closing-lines.mjs <log>; exit 1 if any.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/** One pattern per runner's closing line, anchored where the runner prints it. */
export const CLOSING_LINES = [
  ['pytest', /^=+ .* =+$/],
  ['go test', /^(ok|FAIL)\s+\S+\s+[\d.]+s|^(PASS|FAIL)$|\[no test files\]/],
  ['cargo test', /^test result: /],
  ["node's runner", /^(#|ℹ) (tests|pass|fail) \d+$/],
  ['Surefire', /Tests run: \d+, Failures: \d+/],
  ['ctest', /tests passed, \d+ tests failed out of \d+|^No tests were found/],
  ['prove', /^Files=\d+, Tests=\d+|^Result: (PASS|FAIL|NOTESTS)$/],
  ['RSpec', /^\d+ examples?, \d+ failures?/],
  ['minitest', /^\d+ runs, \d+ assertions/],
  ['ExUnit', /^\d+ (tests?|doctests?|properties?).*, \d+ failures?/],
  ['EUnit', /^\s*All \d+ tests passed\.|^\s*Failed: \d+\.\s+Skipped: \d+\.\s+Passed: \d+\./],
  ['cabal', /\d+ of \d+ test suites? \(\d+ of \d+ test cases?\) passed/],
  ['OUnit', /^Ran: \d+ tests? in: /],
  ['PHPUnit', /^OK \(\d+ tests?, \d+ assertions?\)|^Tests: \d+, Assertions: \d+|^No tests executed!/],
  ['Criterion', /Synthesis: Tested: \d+/],
  ['cmocka', /^\[ {2}(PASSED|FAILED) {2}\] \d+ test/],
  ['CUnit', /^Run Summary:/],
  ['Check', /^\d+%: Checks: \d+/],
  ['swift test', /Executed \d+ tests?, with \d+ failures?|^Test run with \d+ tests?/],
  ['plain', /^(\S+: )?\d+ passed, \d+ failed(, \d+ skipped)?$/],
];

/** The log's lines that match a runner's closing line, with the runner's name. */
export function foreignClosingLines(log) {
  const found = [];
  for (const line of log.split('\n')) {
    const plain = line.replace(/\x1b\[[0-9;]*m/g, '').trimEnd();
    const hit = CLOSING_LINES.find(([, pattern]) => pattern.test(plain));
    if (hit) found.push({ runner: hit[0], line: plain });
  }
  return found;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const found = foreignClosingLines(readFileSync(process.argv[2], 'utf8'));
  for (const { runner, line } of found) console.log(`    reads as ${runner}'s closing line: ${line}`);
  process.exit(found.length ? 1 : 0);
}
