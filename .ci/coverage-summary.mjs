// Prints the coverage figure of the last `--coverage` run (vitest's v8 coverage, json-summary reporter; see
// vitest.config.ts) as one plain line, e.g. "Coverage (v8): lines 61.2% (9,120/14,903), statements ...".
// Used by `npm run test:coverage` and `.ci/run`. No threshold: it shows the figure and never fails a run
// (exit 0 with a note when no summary was written). Usage: node .ci/coverage-summary.mjs [summary.json]
import { existsSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export const SUMMARY = 'test/artifacts/coverage/coverage-summary.json';
const KINDS = ['lines', 'statements', 'branches', 'functions'];

/** One line from a json-summary report's `total`: each kind's percentage and covered/total counts. */
export function coverageLine(summary) {
  const total = summary.total;
  const count = (n) => n.toLocaleString('en-US');
  const parts = KINDS.map((kind) => `${kind} ${total[kind].pct}% (${count(total[kind].covered)}/${count(total[kind].total)})`);
  const files = Object.keys(summary).filter((key) => key !== 'total').length;
  return `Coverage (v8, ${files} files): ${parts.join(', ')}`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2] ?? SUMMARY;
  if (!existsSync(file)) console.log(`Coverage: no summary at ${file} (the run wrote none)`);
  else console.log(coverageLine(JSON.parse(readFileSync(file, 'utf8'))));
}
