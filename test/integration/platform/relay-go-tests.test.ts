// What this tests: the relay's own Go tests (temporal-dev/ferretdb/internal/*/*_test.go: the key filter, the bound on
// asked-for indexes, internal/match's MongoDB equality) pass, so `npm test` runs them beside the differential
// suites that compare the relay's answers with FerretDB's. Go is already required by `npm run setup`.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { quoteToolOutput } from '../../support/quoted-output';

const relaySource = fileURLToPath(new URL('../../../temporal-dev/ferretdb/', import.meta.url));

function goTest(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', ['test', '-count=1', './...'], { cwd: relaySource, env: process.env });
    let output = '';
    // Bounded: the last 20,000 characters are enough to read a failure.
    const keep = (chunk: Buffer) => void (output = (output + chunk.toString()).slice(-20_000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

test('go test ./... in temporal-dev/ferretdb passes', async () => {
  const { code, output } = await goTest();
  // Quoted: go test's own "ok"/"FAIL" lines would read in CI's log as another runner's closing lines.
  const quoted = quoteToolOutput('go test', output);
  expect(code, quoted).toBe(0);
  expect(/^ok\s/m.test(output), quoted).toBe(true);
}, 600_000);
